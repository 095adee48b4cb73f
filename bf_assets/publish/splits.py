"""Splitting a release by task: ``train`` and a held-out ``test``, no task in both.

A task's place is decided by the task alone: its position is the sha256 of ``<seed>:<task
id>`` read as a fraction of 2**64, and it is a test task when that is below
``test_fraction``.  So the same task stays in the same split from release to release (a
model trained on one release's ``train`` is never evaluated on one of its tasks in the next
release's ``test``), and every config of a release splits the same way (a trial's
``trl_sft`` exchanges go where its ``rollouts`` row goes).

Small releases get two guards, both deterministic: with fewer than two tasks there is one
split; when no task falls below the fraction the lowest-placed task is held out, and when
every task does the highest-placed one stays in ``train``.  The card and the manifest say
which applied.

The fraction and seed come from the bundle options, else from the plan's optional
``splits`` key (``bf_assets.dataset.plan``), else from the defaults below; a fraction of 0
asks for one split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bf_assets.dataset.plan import Plan

DEFAULT_TEST_FRACTION = 0.2
DEFAULT_SEED = 0
METHOD = "task_hash"


@dataclass(frozen=True, slots=True)
class SplitSpec:
    test_fraction: float
    seed: int
    source: str  # where the values came from: "options", "plan" or "default"
    train: str = "train"
    test: str = "test"

    def __post_init__(self) -> None:
        if not 0 <= self.test_fraction < 1:
            raise ValueError(f"test_fraction must be >= 0 and < 1, got {self.test_fraction}")
        if not self.train or not self.test or self.train == self.test:
            raise ValueError(f"split names must differ and not be empty: {self.train!r}")


def resolve_spec(
    *,
    test_fraction: float | None,
    seed: int | None,
    plan: Plan | None,
    train: str = "train",
    test: str = "test",
) -> SplitSpec:
    """Options first, then the plan's ``splits``, then the defaults (per value)."""
    planned = plan.splits if plan is not None else None
    sources: set[str] = set()
    if test_fraction is not None:
        sources.add("options")
    elif planned is not None and planned.test_fraction is not None:
        test_fraction = planned.test_fraction
        sources.add("plan")
    if seed is not None:
        sources.add("options")
    elif planned is not None and planned.seed is not None:
        seed = planned.seed
        sources.add("plan")
    return SplitSpec(
        test_fraction=DEFAULT_TEST_FRACTION if test_fraction is None else float(test_fraction),
        seed=DEFAULT_SEED if seed is None else int(seed),
        source="options" if "options" in sources else "plan" if sources else "default",
        train=train,
        test=test,
    )


def task_position(task_id: str, seed: int) -> float:
    """Where a task falls in [0, 1) for a seed."""
    digest = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(slots=True)
class SplitPlan:
    spec: SplitSpec
    assignment: dict[str, str] = field(default_factory=dict)  # task id -> split name
    note: str | None = None  # which guard applied, if one did

    @property
    def names(self) -> list[str]:
        """The splits this release has, training split first."""
        used = set(self.assignment.values())
        if self.spec.test in used:
            return [self.spec.train, self.spec.test]
        return [self.spec.train]

    def split_of(self, task_id: str) -> str:
        return self.assignment.get(task_id, self.spec.train)

    def tasks(self, split: str) -> list[str]:
        return sorted(t for t, s in self.assignment.items() if s == split)

    def to_dict(self) -> dict[str, Any]:
        """The manifest's ``splits`` record."""
        return {
            "method": METHOD,
            "test_fraction": self.spec.test_fraction,
            "seed": self.spec.seed,
            "source": self.spec.source,
            "names": self.names,
            "tasks": {name: self.tasks(name) for name in self.names},
            "note": self.note,
        }


def assign_splits(task_ids: Iterable[str], spec: SplitSpec) -> SplitPlan:
    tasks = sorted(set(task_ids))
    plan = SplitPlan(spec, dict.fromkeys(tasks, spec.train))
    if spec.test_fraction == 0:
        return plan
    if len(tasks) < 2:
        plan.note = f"{len(tasks)} task(s): too few for a held-out split, one split only"
        return plan
    pos = {t: task_position(t, spec.seed) for t in tasks}
    test = {t for t in tasks if pos[t] < spec.test_fraction}
    ranked = sorted(tasks, key=lambda t: (pos[t], t))
    if not test:
        test = {ranked[0]}
        plan.note = "no task fell below the test fraction: the lowest-placed task is held out"
    elif len(test) == len(tasks):
        test.discard(ranked[-1])
        plan.note = (
            "every task fell below the test fraction: the highest-placed one is kept for train"
        )
    for t in test:
        plan.assignment[t] = spec.test
    return plan
