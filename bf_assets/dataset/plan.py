"""The experiment plan (``plan.yaml`` or JSON): what the experiment intended to run.

Format (``/work/shared/plan-format.md``)::

    name: skillsbench-2026-11          # required
    source: {repo: ..., resolved_sha: ...}   # optional
    min_coverage: 0.9                  # optional, 0..1
    matrix:                            # required, a non-empty list of entries
      - tasks: [...]                   # required lists of non-empty strings
        harnesses: [...]
        models: [...]
        skill_modes: [...]
        sandboxes: [...]
        trials: 2                      # optional, integer >= 1 (default 1)
        required: true                 # optional, boolean (default false)
    splits:                            # optional: how the release is split (by task)
      test_fraction: 0.2               # 0 <= x < 1; 0 = one split only (default 0.2)
      seed: 0                          # optional integer (default 0)

``splits`` (an addition of this project to the shared format) chooses the held-out test
split of the published dataset: a task is in ``test`` when the sha256 of ``<seed>:<task
id>`` (as a fraction of 2**64) is below ``test_fraction``, so a task keeps its split from
release to release (``bf_assets.publish.splits``); ``splits: {test_fraction: 0}`` publishes
one ``train`` split.  Options given to the bundle override the plan.

Harness names and skill modes are normalised exactly as the review normalises trials.  A
cell listed by several matrix entries keeps the largest ``trials`` and is required when any
entry requires it.  Every problem raises :class:`PlanError` naming the offending key.

**Limits** (``docs/plan-format.md``), checked before anything is expanded: the file
is read within :mod:`bf_assets.dataset.inputlimits` (size, nesting, values after alias
expansion); an entry's ``trials`` is at most ``$BF_PLAN_MAX_TRIALS`` (default 1,000); and
the matrix, counted arithmetically (each entry's product of its list lengths, times its
``trials``, summed over the entries: a bound on the merged count), plans at most
``$BF_PLAN_MAX_SLOTS`` slots (default 500,000).  Coverage keeps a row per slot, so the slot
count bounds the memory a plan can make the review take.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bf_assets.dataset.common import Cell, make_cell
from bf_assets.dataset.inputlimits import (
    MAX_PLAN_VALUES,
    DocumentLimits,
    env_limit,
    load_limited,
    max_bytes,
    shown,
)

TOP_KEYS = ("name", "source", "min_coverage", "matrix", "splits")
SOURCE_KEYS = ("repo", "resolved_sha")
DIMENSIONS = ("tasks", "harnesses", "models", "skill_modes", "sandboxes")
ENTRY_KEYS = (*DIMENSIONS, "trials", "required")
SPLIT_KEYS = ("test_fraction", "seed")
MAX_SLOTS_ENV = "BF_PLAN_MAX_SLOTS"
MAX_TRIALS_ENV = "BF_PLAN_MAX_TRIALS"
DEFAULT_MAX_SLOTS = 500_000
DEFAULT_MAX_TRIALS = 1_000


class PlanError(ValueError):
    """The plan file is unreadable or does not follow the plan format."""


@dataclass(frozen=True, slots=True)
class PlanSource:
    repo: str | None = None
    resolved_sha: str | None = None


@dataclass(frozen=True, slots=True)
class PlanSplits:
    """The plan's ``splits`` key: ``None`` fields fall back to the defaults."""

    test_fraction: float | None = None
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class MatrixEntry:
    tasks: tuple[str, ...]
    harnesses: tuple[str, ...]
    models: tuple[str, ...]
    skill_modes: tuple[str, ...]
    sandboxes: tuple[str, ...]
    trials: int = 1
    required: bool = False


@dataclass(frozen=True, slots=True)
class PlannedCell:
    cell: Cell
    trials: int
    required: bool


@dataclass(slots=True)
class Plan:
    name: str
    matrix: tuple[MatrixEntry, ...]
    source: PlanSource | None = None
    min_coverage: float | None = None
    origin: str | None = None
    splits: PlanSplits | None = None
    _cells: list[PlannedCell] | None = field(default=None, repr=False)

    def cells(self) -> list[PlannedCell]:
        """Every planned cell (the cartesian products, normalised, merged, sorted)."""
        if self._cells is None:
            merged: dict[Cell, PlannedCell] = {}
            for e in self.matrix:
                for t in e.tasks:
                    for h in e.harnesses:
                        for m in e.models:
                            for s in e.skill_modes:
                                for sb in e.sandboxes:
                                    c = make_cell(t, h, m, s, sb)
                                    old = merged.get(c)
                                    if old is None:
                                        merged[c] = PlannedCell(c, e.trials, e.required)
                                    else:
                                        merged[c] = PlannedCell(
                                            c,
                                            max(old.trials, e.trials),
                                            old.required or e.required,
                                        )
            self._cells = [merged[c] for c in sorted(merged, key=_cell_sort)]
        return list(self._cells)


def _cell_sort(c: Cell) -> tuple[str, ...]:
    return tuple(x or "" for x in c.astuple())


def _fail(where: str, msg: str) -> PlanError:
    return PlanError(f"{where}: {msg}")


def _check_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")


def _string(value: Any, where: str, *, hint: str = "") -> str:
    if not isinstance(value, str) or not value.strip():
        got = type(value).__name__
        raise _fail(where, f"must be a non-empty string, got {got} {shown(value)}{hint}")
    return value.strip()


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _fail(where, f"must be a list of strings, got {type(value).__name__} {shown(value)}")
    if not value:
        raise _fail(where, "must not be empty")
    out: dict[str, None] = {}  # first occurrence order, without a quadratic search
    for i, item in enumerate(value):
        out.setdefault(_string(item, f"{where}[{i}]"))
    return tuple(out)


def _entry(raw: Any, where: str, max_trials: int) -> MatrixEntry:
    if not isinstance(raw, Mapping):
        raise _fail(where, f"must be a mapping, got {type(raw).__name__}")
    _check_keys(raw, ENTRY_KEYS, where)
    missing = [d for d in DIMENSIONS if d not in raw]
    if missing:
        raise _fail(where, f"missing key(s) {', '.join(missing)}")
    dims = {d: _string_list(raw[d], f"{where}.{d}") for d in DIMENSIONS}
    trials = raw.get("trials", 1)
    if isinstance(trials, bool) or not isinstance(trials, int):
        raise _fail(f"{where}.trials", f"must be an integer >= 1, got {shown(trials)}")
    if trials < 1:
        raise _fail(f"{where}.trials", f"must be >= 1, got {trials}")
    if trials > max_trials:
        raise _fail(
            f"{where}.trials",
            f"{trials:,} trials per cell, over the limit of {max_trials:,} "
            f"({MAX_TRIALS_ENV} raises it)",
        )
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise _fail(f"{where}.required", f"must be true or false, got {shown(required)}")
    return MatrixEntry(**dims, trials=trials, required=required)


def _source(raw: Any, where: str) -> PlanSource | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _fail(where, f"must be a mapping with {', '.join(SOURCE_KEYS)}")
    _check_keys(raw, SOURCE_KEYS, where)
    hint = " (quote a commit sha in YAML so it stays a string)"
    repo = None if raw.get("repo") is None else _string(raw["repo"], f"{where}.repo")
    sha = (
        None
        if raw.get("resolved_sha") is None
        else _string(raw["resolved_sha"], f"{where}.resolved_sha", hint=hint)
    )
    return PlanSource(repo=repo, resolved_sha=sha)


def _splits(raw: Any, where: str) -> PlanSplits | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _fail(where, f"must be a mapping with {', '.join(SPLIT_KEYS)}")
    _check_keys(raw, SPLIT_KEYS, where)
    frac = raw.get("test_fraction")
    if frac is not None:
        if isinstance(frac, bool) or not isinstance(frac, int | float):
            raise _fail(f"{where}.test_fraction", f"must be a number in [0, 1), got {shown(frac)}")
        if not 0 <= frac < 1:
            raise _fail(f"{where}.test_fraction", f"must be >= 0 and < 1, got {frac}")
        frac = float(frac)
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise _fail(f"{where}.seed", f"must be an integer, got {shown(seed)}")
    return PlanSplits(test_fraction=frac, seed=seed)


def parse_plan(data: Any, origin: str = "plan") -> Plan:
    """Validate an already-parsed plan document."""
    if not isinstance(data, Mapping):
        raise _fail(origin, f"the plan must be a mapping, got {type(data).__name__}")
    _check_keys(data, TOP_KEYS, origin)
    if "name" not in data:
        raise _fail(origin, "missing key name")
    name = _string(data["name"], f"{origin}: name")
    source = _source(data.get("source"), f"{origin}: source")
    floor = data.get("min_coverage")
    if floor is not None:
        if isinstance(floor, bool) or not isinstance(floor, int | float):
            raise _fail(f"{origin}: min_coverage", f"must be a number in 0..1, got {shown(floor)}")
        if not 0 <= floor <= 1:
            raise _fail(f"{origin}: min_coverage", f"must be in 0..1, got {floor}")
        floor = float(floor)
    if "matrix" not in data:
        raise _fail(origin, "missing key matrix")
    matrix = data["matrix"]
    if not isinstance(matrix, list):
        raise _fail(f"{origin}: matrix", f"must be a list of entries, got {type(matrix).__name__}")
    if not matrix:
        raise _fail(f"{origin}: matrix", "must not be empty")
    max_trials = env_limit(MAX_TRIALS_ENV, DEFAULT_MAX_TRIALS, PlanError)
    entries = tuple(_entry(e, f"{origin}: matrix[{i}]", max_trials) for i, e in enumerate(matrix))
    _check_size(
        entries, f"{origin}: matrix", env_limit(MAX_SLOTS_ENV, DEFAULT_MAX_SLOTS, PlanError)
    )
    splits = _splits(data.get("splits"), f"{origin}: splits")
    return Plan(
        name=name,
        matrix=entries,
        source=source,
        min_coverage=floor,
        origin=origin,
        splits=splits,
    )


def plan_size(entries: tuple[MatrixEntry, ...]) -> tuple[int, int]:
    """``(cells, slots)`` the matrix plans, counted without expanding it: each entry's
    product of its list lengths (and times its ``trials``), summed over the entries (cells
    several entries list, or harness spellings that normalise alike, are counted once per
    listing: a bound on :meth:`Plan.cells`)."""
    cells = slots = 0
    for e in entries:
        n = len(e.tasks) * len(e.harnesses) * len(e.models) * len(e.skill_modes) * len(e.sandboxes)
        cells += n
        slots += n * e.trials
    return cells, slots


def _check_size(entries: tuple[MatrixEntry, ...], where: str, max_slots: int) -> None:
    cells, slots = plan_size(entries)
    if slots > max_slots:
        raise _fail(
            where,
            f"plans up to {cells:,} cells and {slots:,} slots (cells x trials), over the "
            f"limit of {max_slots:,} slots ({MAX_SLOTS_ENV} raises it)",
        )


def load_document(
    path: str | os.PathLike[str],
    error: type[ValueError],
    limits: DocumentLimits | None = None,
) -> Any:
    """Read YAML (or JSON, by ``.json`` suffix) within ``limits`` (default: a plan's);
    every problem (unreadable, too large, too deep, not valid) raises ``error``."""
    if limits is None:
        limits = DocumentLimits(max_bytes=max_bytes(error), max_values=MAX_PLAN_VALUES)
    return load_limited(path, error, limits)


def load_plan(path: str | os.PathLike[str]) -> Plan:
    return parse_plan(load_document(path, PlanError), str(path))
