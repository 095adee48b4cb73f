"""The clean results table: does the skill help, over every scored trial and over the trials
the review accepts.

Computed from the dataset review's decision (``bf_assets.dataset.decide``), nothing decided
twice: a trial is *scored* when it is model data (no oracle or no-op lane) with a numeric
reward, the population upstream's pass rates count, broken trials included; it is
*accepted* when the decision exports it.  Each statistic is given for both populations,
side by side, with the difference.

Per cell (task × harness × model × skill mode): trials, healthy trials, scored and
accepted trials, pass rate (a pass is a reward of 1.0 or more, as the gate's ``pass``),
mean reward, and pass@k by the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` for
``k`` in :data:`PASS_AT_K` and ``k = n`` where the cell has ``n ≥ k`` trials.

The lift is the pass rate of a skill mode (``with-skill``, ``self-generated``) minus that
of ``no-skill``, per task × harness × model, and overall per harness × model as the mean
of the per-task lifts over the tasks that ran both modes.  Its confidence interval is a
percentile bootstrap: each resample draws every arm's trials again with replacement,
within the arm (and the task), from a random generator seeded by the seed and the cell's
own label, so the same input and seed give the same table whatever else is in it.

Memory is bounded by the cells, not the trials: one streaming pass over the decision
counts, per cell and population, how many trials had each reward value.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bf_assets.contract import Outcome
from bf_assets.dataset.common import is_model_trial, show, trial_key
from bf_assets.dataset.decide import EXPORTED, PROBE_REASONS, ExportDecision
from bf_assets.ingest.identity import normalize_skill_mode
from bf_assets.review.record import TrialReview

SCORED = "scored"
ACCEPTED = "accepted"
POPULATIONS = (SCORED, ACCEPTED)
NO_SKILL = "no-skill"
TREATMENTS = ("with-skill", "self-generated")
PASS_AT_K = (1, 3, 5)
SEED = 0
RESAMPLES = 2000
CONFIDENCE = 0.95
PASS_REWARD = 1.0

CellKey = tuple[str, str, str, str]  # (task, harness, model, skill mode), shown


@dataclass(frozen=True, slots=True)
class ResultTrial:
    """What the results table reads of one trial: its cell, reward, health and decision."""

    task: str
    harness: str
    model: str
    skill_mode: str
    reward: float | None
    healthy: bool
    exported: bool

    @property
    def key(self) -> CellKey:
        return (self.task, self.harness, self.model, self.skill_mode)


def result_trial(review: TrialReview, reason: str | None) -> ResultTrial | None:
    """The trial as the table reads it, given its export decision's ``reason`` (``None``:
    no decision); ``None`` for the oracle and no-op lanes."""
    if not is_model_trial(review) or review.outcome == Outcome.ORACLE:
        return None
    if reason in PROBE_REASONS:
        return None
    i = review.identity
    reward = review.reward
    if reward is not None and not math.isfinite(reward):
        reward = None
    return ResultTrial(
        task=show(i.task_id),
        harness=show(i.harness),
        model=show(i.model),
        skill_mode=show(normalize_skill_mode(i.skill_mode)),
        reward=reward,
        healthy=bool(review.healthy),
        exported=reason == EXPORTED,
    )


def result_trials(
    reviews: Iterable[TrialReview], decision: ExportDecision
) -> Iterator[ResultTrial]:
    """Each model trial of the dataset review with its decision (by key: trials that share
    one take the decision every view gives them, the last one's)."""
    for r in reviews:
        d = decision.get(trial_key(r))
        t = result_trial(r, None if d is None else d.reason)
        if t is not None:
            yield t


# --------------------------------------------------------------------------- statistics


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of ``n`` trials with ``c`` passes: ``1 - C(n-c, k) / C(n, k)``."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@{k} needs 0 < k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    # the product form: no huge binomials
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


@dataclass(frozen=True, slots=True)
class ArmStats:
    """One population of one cell: trials, passes, pass rate, mean reward, pass@k."""

    n: int
    passes: int
    mean_reward: float | None
    pass_at: dict[int, float] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "trials": self.n,
            "passes": self.passes,
            "pass_rate": _round(self.pass_rate),
            "mean_reward": _round(self.mean_reward),
            "pass_at_k": {str(k): _round(v) for k, v in self.pass_at.items()},
        }


def arm_stats(rewards: Counter[float]) -> ArmStats:
    """The statistics of a population given as ``{reward: trials}``."""
    n = sum(rewards.values())
    if not n:
        return ArmStats(0, 0, None, {})
    passes = sum(m for r, m in rewards.items() if r >= PASS_REWARD)
    mean = sum(r * m for r, m in rewards.items()) / n
    ks = sorted({k for k in PASS_AT_K if k <= n} | {n})
    return ArmStats(n, passes, mean, {k: pass_at_k(n, passes, k) for k in ks})


def _round(x: float | None, places: int = 6) -> float | None:
    return None if x is None else round(x, places)


def _rng(seed: int, label: str) -> np.random.Generator:
    """A generator of its own for one lift: seeded by ``seed`` and the lift's label."""
    digest = hashlib.sha256(f"{seed}\0{label}".encode("utf-8", "surrogatepass")).digest()
    return np.random.default_rng([int.from_bytes(digest[i : i + 4], "big") for i in (0, 4, 8)])


def _resampled(rewards: Counter[float], rng: np.random.Generator, b: int) -> np.ndarray:
    """Pass rates of ``b`` resamples of the arm (its trials drawn again with replacement)."""
    n = sum(rewards.values())
    passes = sum(m for r, m in rewards.items() if r >= PASS_REWARD)
    # drawing n trials with replacement and counting passes is one binomial draw
    return rng.binomial(n, passes / n, size=b) / n


@dataclass(frozen=True, slots=True)
class Lift:
    """A skill mode's pass rate minus no-skill's, with its bootstrap interval."""

    harness: str
    model: str
    treatment: str
    population: str
    lift: float
    low: float
    high: float
    treated: int  # trials of the skill mode
    control: int  # trials of no-skill
    task: str | None = None  # None: overall, the mean over ``tasks`` tasks
    tasks: int = 1

    @property
    def label(self) -> str:
        where = "all tasks" if self.task is None else self.task
        return f"{where} / {self.harness} / {self.model}: {self.treatment} - {NO_SKILL}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "harness": self.harness,
            "model": self.model,
            "treatment": self.treatment,
            "control": NO_SKILL,
            "population": self.population,
            "lift": _round(self.lift),
            "ci_low": _round(self.low),
            "ci_high": _round(self.high),
            "treated_trials": self.treated,
            "control_trials": self.control,
            "tasks": self.tasks,
        }


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_lift(
    pairs: list[tuple[Counter[float], Counter[float]]],
    *,
    label: str,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> tuple[float, float, float]:
    """The mean over ``pairs`` (``(treated rewards, control rewards)``, one per task) of the
    pass-rate difference, and its percentile bootstrap interval (trials resampled within
    each arm of each task)."""
    rng = _rng(seed, label)
    point = 0.0
    total = np.zeros(resamples)
    for treated, control in pairs:
        t, c = arm_stats(treated), arm_stats(control)
        point += (t.pass_rate or 0.0) - (c.pass_rate or 0.0)
        total += _resampled(treated, rng, resamples) - _resampled(control, rng, resamples)
    k = len(pairs)
    lo, hi = _interval(total / k, confidence)
    return point / k, lo, hi


# --------------------------------------------------------------------------- the table


@dataclass(slots=True)
class _Acc:
    trials: int = 0
    healthy: int = 0
    rewards: dict[str, Counter[float]] = field(
        default_factory=lambda: {p: Counter() for p in POPULATIONS}
    )


@dataclass(frozen=True, slots=True)
class CellResult:
    task: str
    harness: str
    model: str
    skill_mode: str
    trials: int  # every model trial of the cell, scored or not
    healthy: int
    arms: dict[str, ArmStats]  # population -> statistics

    def difference(self) -> float | None:
        """Accepted pass rate minus scored pass rate (None when either is empty)."""
        a, s = self.arms[ACCEPTED].pass_rate, self.arms[SCORED].pass_rate
        return None if a is None or s is None else a - s

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "harness": self.harness,
            "model": self.model,
            "skill_mode": self.skill_mode,
            "trials": self.trials,
            "healthy": self.healthy,
            **{p: self.arms[p].to_dict() for p in POPULATIONS},
            "pass_rate_difference": _round(self.difference()),
        }


@dataclass(slots=True)
class ResultsTable:
    cells: list[CellResult]
    lifts: list[Lift]  # per task, then overall (task None); both populations
    seed: int = SEED
    resamples: int = RESAMPLES
    confidence: float = CONFIDENCE

    def lift_pairs(self) -> list[tuple[Lift | None, Lift | None]]:
        """``(scored, accepted)`` lifts of each task (then overall) × harness × model ×
        skill mode, side by side (``None`` where a population lacks an arm)."""
        by: dict[tuple[Any, ...], dict[str, Lift]] = {}
        for lf in self.lifts:
            key = (lf.task is None, show(lf.task), lf.harness, lf.model, lf.treatment)
            by.setdefault(key, {})[lf.population] = lf
        return [(v.get(SCORED), v.get(ACCEPTED)) for _, v in sorted(by.items())]

    def relabelled(self, clean: Callable[[str], str]) -> ResultsTable:
        """The table with every label (task, harness, model) passed through ``clean``."""
        cells = [
            replace(c, task=clean(c.task), harness=clean(c.harness), model=clean(c.model))
            for c in self.cells
        ]
        lifts = [
            replace(
                lf,
                task=None if lf.task is None else clean(lf.task),
                harness=clean(lf.harness),
                model=clean(lf.model),
            )
            for lf in self.lifts
        ]
        return replace(self, cells=cells, lifts=lifts)

    def accepted_only(self) -> ResultsTable:
        """The statistics of the accepted (exported) trials alone (the dataset card's)."""
        cells = [c for c in self.cells if c.arms[ACCEPTED].n]
        lifts = [lf for lf in self.lifts if lf.population == ACCEPTED]
        return replace(self, cells=cells, lifts=lifts)

    def summary(self) -> dict[str, Any]:
        """Headline figures: cells, trials per population, overall lifts side by side."""
        out: dict[str, Any] = {
            "cells": len(self.cells),
            "seed": self.seed,
            "resamples": self.resamples,
            "confidence": self.confidence,
        }
        for p in POPULATIONS:
            n = sum(c.arms[p].n for c in self.cells)
            passes = sum(c.arms[p].passes for c in self.cells)
            out[f"{p}_trials"] = n
            out[f"{p}_pass_rate"] = _round(passes / n) if n else None
        out["overall_lifts"] = [
            {
                "harness": (s or a).harness,  # type: ignore[union-attr]
                "model": (s or a).model,  # type: ignore[union-attr]
                "treatment": (s or a).treatment,  # type: ignore[union-attr]
                SCORED: None if s is None else s.to_dict(),
                ACCEPTED: None if a is None else a.to_dict(),
                "difference": lift_difference(s, a),
            }
            for s, a in self.lift_pairs()
            if (s or a) is not None and (s or a).task is None  # type: ignore[union-attr]
        ]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in self.summary().items() if k != "overall_lifts"},
            "cells": [c.to_dict() for c in self.cells],
            "lifts": [lf.to_dict() for lf in self.lifts],
        }


def lift_difference(scored: Lift | None, accepted: Lift | None) -> float | None:
    """Accepted lift minus scored lift (None when either is missing)."""
    if scored is None or accepted is None:
        return None
    return _round(accepted.lift - scored.lift)


def results_table(
    trials: Iterable[ResultTrial],
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> ResultsTable:
    """The results table of ``trials`` (one streaming pass; see the module docstring)."""
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("resamples must be positive and confidence in (0, 1)")
    accs: dict[CellKey, _Acc] = {}
    for t in trials:
        acc = accs.get(t.key)
        if acc is None:
            acc = accs[t.key] = _Acc()
        acc.trials += 1
        acc.healthy += t.healthy
        if t.reward is not None:
            acc.rewards[SCORED][t.reward] += 1
            if t.exported:
                acc.rewards[ACCEPTED][t.reward] += 1
    cells = [
        CellResult(
            *key,
            trials=acc.trials,
            healthy=acc.healthy,
            arms={p: arm_stats(acc.rewards[p]) for p in POPULATIONS},
        )
        for key, acc in sorted(accs.items())
    ]
    lifts: list[Lift] = []
    for population in POPULATIONS:
        lifts += _lifts(accs, population, seed, resamples, confidence)
    return ResultsTable(cells, lifts, seed, resamples, confidence)


def _lifts(
    accs: dict[CellKey, _Acc], population: str, seed: int, resamples: int, confidence: float
) -> list[Lift]:
    out: list[Lift] = []
    overall: dict[tuple[str, str, str], list[tuple[Counter[float], Counter[float]]]] = {}
    for (task, harness, model, mode), acc in sorted(accs.items()):
        if mode not in TREATMENTS:
            continue
        control = accs.get((task, harness, model, NO_SKILL))
        treated = acc.rewards[population]
        if control is None or not control.rewards[population] or not treated:
            continue
        pair = (treated, control.rewards[population])
        overall.setdefault((harness, model, mode), []).append(pair)
        lf = Lift(harness, model, mode, population, 0, 0, 0, 0, 0, task=task)
        point, lo, hi = bootstrap_lift(
            [pair], label=lf.label, seed=seed, resamples=resamples, confidence=confidence
        )
        out.append(
            replace(
                lf,
                lift=point,
                low=lo,
                high=hi,
                treated=sum(pair[0].values()),
                control=sum(pair[1].values()),
            )
        )
    for (harness, model, mode), pairs in sorted(overall.items()):
        lf = Lift(harness, model, mode, population, 0, 0, 0, 0, 0, task=None, tasks=len(pairs))
        point, lo, hi = bootstrap_lift(
            pairs, label=lf.label, seed=seed, resamples=resamples, confidence=confidence
        )
        out.append(
            replace(
                lf,
                lift=point,
                low=lo,
                high=hi,
                treated=sum(sum(t.values()) for t, _ in pairs),
                control=sum(sum(c.values()) for _, c in pairs),
            )
        )
    return out


def dataset_results(ds: Any, *, seed: int = SEED, resamples: int = RESAMPLES) -> ResultsTable:
    """The results table of a dataset review (``DatasetReview``: its trials and decision)."""
    return results_table(result_trials(ds.trials, ds.decision), seed=seed, resamples=resamples)


# --------------------------------------------------------------------------- Markdown

RESULT_ROWS = 200  # rows a Markdown table of the results shows; the JSON holds every one


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}"


def _pass_at(arm: ArmStats) -> str:
    return ", ".join(f"@{k} {v:.2f}" for k, v in arm.pass_at.items()) or "–"


def _lift_text(lf: Lift | None) -> str:
    if lf is None:
        return "–"
    tasks = "" if lf.task is not None else f", {lf.tasks} task{'s' if lf.tasks != 1 else ''}"
    return f"{lf.lift:+.2f} [{lf.low:+.2f}, {lf.high:+.2f}] ({lf.treated} vs {lf.control}{tasks})"


def _md_table(head: list[str], rows: list[list[Any]], cell: Callable[[Any], str]) -> str:
    if not rows:
        return "_none_\n"
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows[:RESULT_ROWS]]
    if len(rows) > RESULT_ROWS:
        out.append(f"\n… {len(rows) - RESULT_ROWS} more rows not shown")
    return "\n".join(out) + "\n"


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def called_out(table: ResultsTable) -> list[str]:
    """Sentences naming where the accepted trials change the answer: a lift whose sign
    differs between the populations, or that only one population can give."""
    out = []
    for s, a in table.lift_pairs():
        if s is None and a is not None:
            out.append(f"{a.label}: only the accepted trials give a lift")
        elif s is not None and a is None:
            out.append(f"{s.label}: no lift over the accepted trials (an arm has none)")
        elif s is not None and a is not None and _sign(s.lift) != _sign(a.lift):
            out.append(
                f"{s.label}: the lift is {s.lift:+.2f} over every scored trial "
                f"but {a.lift:+.2f} over the accepted ones"
            )
    return out


def results_markdown(
    table: ResultsTable,
    cell: Callable[[Any], str],
    text: Callable[[Any], str],
    *,
    heading: str = "##",
    picture: str | None = None,
) -> str:
    """:func:`results_pieces` as one string."""
    return "".join(results_pieces(table, cell, text, heading=heading, picture=picture))


def results_pieces(
    table: ResultsTable,
    cell: Callable[[Any], str],
    text: Callable[[Any], str],
    *,
    heading: str = "##",
    picture: str | None = None,
) -> list[str]:
    """The results as Markdown pieces: the lifts side by side, what the review changes, the
    picture (``picture``: its Markdown, a piece of its own, as given) and every cell.
    ``cell`` and ``text`` write a value from trial data into a table cell and into running
    text (escaped, and cleaned where the copy is published)."""
    conf = f"{table.confidence:.0%}"
    parts = [
        f"{heading} Results\n",
        f"Two populations, side by side: **{SCORED}** is every model trial with a reward "
        "(what upstream's pass rates count, broken trials included), **accepted** is the "
        "trials this review exports. A pass is a reward of 1.0 or more. The lift is a skill "
        f"mode's pass rate minus {NO_SKILL}'s, with a {conf} percentile bootstrap interval "
        f"({table.resamples} resamples of the trials within each arm, seed {table.seed}); "
        "overall it is the mean of the per-task lifts over the tasks that ran both modes. "
        "A lift reads `lift [interval] (skill-mode trials vs no-skill trials)`. "
        "Difference: accepted minus scored.\n",
    ]
    s = table.summary()
    parts.append(
        f"Scored trials: {s[f'{SCORED}_trials']} (pass rate {_pct(s[f'{SCORED}_pass_rate'])}); "
        f"accepted trials: {s[f'{ACCEPTED}_trials']} "
        f"(pass rate {_pct(s[f'{ACCEPTED}_pass_rate'])}).\n"
    )
    parts.append(f"\n{heading}# Skill lift\n")
    rows = []
    for sc, ac in table.lift_pairs():
        lf = sc or ac
        assert lf is not None
        where = "all tasks" if lf.task is None else lf.task
        rows.append(
            [
                where,
                lf.harness,
                lf.model,
                f"{lf.treatment} − {NO_SKILL}",
                _lift_text(sc),
                _lift_text(ac),
                _signed(lift_difference(sc, ac)),
            ]
        )
    parts.append(
        _md_table(["task", "harness", "model", "lift", SCORED, ACCEPTED, "difference"], rows, cell)
    )
    notes = called_out(table)
    if notes:
        parts.append("\nWhere the review changes the answer:\n")
        parts += [f"- {text(n)}" for n in notes[:RESULT_ROWS]]
        parts.append("")
    elif table.lifts:
        parts.append("\nNo lift changes sign between the two populations.\n")
    pieces = ["\n".join(parts) + "\n"]
    if picture:
        pieces += ["\n", picture]
    parts = [f"\n{heading}# By cell\n"]
    parts.append(
        _md_table(
            [
                "task",
                "harness",
                "model",
                "skill mode",
                "trials",
                "healthy",
                f"{SCORED} n",
                f"{SCORED} pass rate",
                f"{SCORED} mean reward",
                f"{SCORED} pass@k",
                f"{ACCEPTED} n",
                f"{ACCEPTED} pass rate",
                f"{ACCEPTED} mean reward",
                f"{ACCEPTED} pass@k",
                "difference",
            ],
            [
                [
                    c.task,
                    c.harness,
                    c.model,
                    c.skill_mode,
                    c.trials,
                    c.healthy,
                    *(
                        x
                        for p in POPULATIONS
                        for x in (
                            c.arms[p].n,
                            _pct(c.arms[p].pass_rate),
                            _num(c.arms[p].mean_reward),
                            _pass_at(c.arms[p]),
                        )
                    ),
                    _signed(c.difference()),
                ]
                for c in table.cells
            ],
            cell,
        )
    )
    return [*pieces, "\n".join(parts) + "\n"]


def card_markdown(table: ResultsTable, cell: Callable[[Any], str]) -> str:
    """The exported trials' results for the dataset card (``table.accepted_only()``)."""
    t = table.accepted_only()
    conf = f"{t.confidence:.0%}"
    lifts = [
        [
            "all tasks" if lf.task is None else lf.task,
            lf.harness,
            lf.model,
            f"{lf.treatment} − {NO_SKILL}",
            _lift_text(lf),
        ]
        for _, lf in t.lift_pairs()
        if lf is not None
    ]
    cells = [
        [
            c.task,
            c.harness,
            c.model,
            c.skill_mode,
            c.arms[ACCEPTED].n,
            _pct(c.arms[ACCEPTED].pass_rate),
            _num(c.arms[ACCEPTED].mean_reward),
            _pass_at(c.arms[ACCEPTED]),
        ]
        for c in t.cells
    ]
    return (
        "## Results of the exported trials\n\n"
        "Over the exported trials only. A pass is a reward of 1.0 or more; the lift is a "
        f"skill mode's pass rate minus {NO_SKILL}'s with a {conf} percentile bootstrap "
        f"interval ({t.resamples} resamples within each arm, seed {t.seed}); overall it is "
        "the mean of the per-task lifts. The review report (`report/`) gives the same over "
        "every scored trial, side by side.\n\n"
        "Skill lift:\n\n"
        + _md_table(["task", "harness", "model", "lift", "lift [CI] (trials)"], lifts, cell)
        + "\nBy cell:\n\n"
        + _md_table(
            [
                "task",
                "harness",
                "model",
                "skill mode",
                "trials",
                "pass rate",
                "mean reward",
                "pass@k",
            ],
            cells,
            cell,
        )
        + "\n"
    )


# --------------------------------------------------------------------------- flat rows

RESULT_COLUMNS = [
    "task",
    "harness",
    "model",
    "skill_mode",
    "trials",
    "healthy",
    *(
        f"{p}_{x}"
        for p in POPULATIONS
        for x in ("trials", "passes", "pass_rate", "mean_reward", "pass_at_k")
    ),
    "pass_rate_difference",
]


def cell_rows(table: ResultsTable) -> Iterator[dict[str, Any]]:
    """One flat row (:data:`RESULT_COLUMNS`) per cell; pass@k as ``{"k": value}``."""
    for c in table.cells:
        d = c.to_dict()
        row = {k: d[k] for k in ("task", "harness", "model", "skill_mode", "trials", "healthy")}
        for p in POPULATIONS:
            for x, v in d[p].items():
                row[f"{p}_{x}"] = v
        row["pass_rate_difference"] = d["pass_rate_difference"]
        yield row
