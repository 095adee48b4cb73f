"""The export decision: per trial, exported or excluded with its reason.

This is the one place that decides what a release exports (``checks.md`` §1: only
publishable **and** training-ready trials that are the latest healthy attempt of their slot
are exported; ``plan-format.md``: trials of a cell the plan does not list are never
exported).  The ``bf-assets review`` summary, the report, the card's exclusion list, the
manifest, the Parquet rows and the Dagster metadata are all views of it; curation builds
rows for the trials it is handed and selects nothing.

Order of the reasons (the first that applies is given):

1. ``oracle`` / ``probe lane``: a reference-solution or no-op lane, never model data;
2. ``rejected`` / ``quarantined``: the effective verdict (gate, audits, coverage findings,
   the quarantine registry);
3. ``superseded``: other attempts fill the cell's slots (the detail says which);
4. ``unplanned``: the cell is not in the plan;
5. ``unhealthy`` / ``incomplete``: the attempt fills no slot because it is not healthy;
6. ``not training-ready``: the ``results.jsonl`` row says it is not;
7. exported: fills a planned slot, publishable and training-ready.

Curation can still exclude a trial it was handed (``duplicate``: the same artifacts as
another exported trial; ``curation error``: its row cannot be built); such outcomes come
back through :meth:`ExportDecision.with_curation` so every view shows them too.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bf_assets.contract import HEALTHY_OUTCOMES, Outcome, Severity, Verdict
from bf_assets.dataset.common import (
    TrialKey,
    is_noop,
    is_oracle,
    pickled_chunks,
    trial_key,
    unpickled,
)
from bf_assets.dataset.coverage import Coverage, SlotRow, superseded_reason
from bf_assets.review.record import SLOT_FIELDS, TrialReview

EXPORTED = "exported"
ORACLE = "oracle"
PROBE = "probe lane"
REJECTED = "rejected"
QUARANTINED = "quarantined"
SUPERSEDED = "superseded"
UNPLANNED = "unplanned"
UNHEALTHY = "unhealthy"
INCOMPLETE = "incomplete"
NOT_READY = "not training-ready"
DUPLICATE = "duplicate"
CURATION_ERROR = "curation error"
# Reasons of trials that are not model data: never counted as "something was excluded".
PROBE_REASONS = frozenset({ORACLE, PROBE})
CURATION_REASONS = frozenset({DUPLICATE, CURATION_ERROR})


@dataclass(frozen=True, slots=True)
class Decision:
    """One trial's export decision (``reason`` is ``exported`` when it is exported)."""

    job: str
    rollout: str
    rel_path: str
    slot: tuple[Any, ...]
    outcome: str
    verdict: str
    reason: str
    detail: str = ""

    @property
    def key(self) -> TrialKey:
        return (self.job, self.rollout)

    @property
    def exported(self) -> bool:
        return self.reason == EXPORTED

    @property
    def kind(self) -> str:
        """The reason as an identifier (``not_training_ready``), as release reasons spell it."""
        return self.reason.replace(" ", "_").replace("-", "_")

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "rollout": self.rollout,
            "path": self.rel_path,
            **dict(zip(SLOT_FIELDS, self.slot, strict=True)),
            "outcome": self.outcome,
            "verdict": self.verdict,
            "reason": self.reason,
            "detail": self.detail,
        }


# The card and the manifest list excluded trials as these records.
Exclusion = Decision


def _checks(r: TrialReview, severity: str) -> str:
    return ", ".join(sorted({f.check for f in r.findings if f.severity == severity}))


def _reason(
    r: TrialReview,
    filled: Mapping[TrialKey, SlotRow],
    superseded: Mapping[TrialKey, str],
    unplanned: set[TrialKey],
) -> tuple[str, str]:
    key = trial_key(r)
    if is_oracle(r):
        return ORACLE, "oracle lane: reference solution, not model data"
    if is_noop(r):
        return PROBE, "no-op probe lane, not model data"
    if r.verdict == Verdict.REJECTED:
        return REJECTED, _checks(r, Severity.BLOCKER) or "rejected"
    if r.verdict == Verdict.QUARANTINED:
        return QUARANTINED, _checks(r, Severity.QUARANTINE) or "manual quarantine"
    if r.verdict != Verdict.PUBLISHABLE:
        return REJECTED, f"verdict {r.verdict!r}"
    if key in superseded:
        return SUPERSEDED, superseded[key]
    if key in unplanned:
        return UNPLANNED, "its cell is not in the experiment plan"
    if key not in filled:
        if r.outcome == Outcome.INCOMPLETE:
            return INCOMPLETE, "the trial did not finish"
        return UNHEALTHY, f"outcome {r.outcome}: not a healthy attempt, fills no slot"
    if not r.healthy or r.outcome not in HEALTHY_OUTCOMES:
        return UNHEALTHY, f"outcome {r.outcome}"
    if not r.training_ready:
        return NOT_READY, f"outcome {r.outcome}; the results.jsonl row is not training-ready"
    return EXPORTED, f"fills slot {filled[key].label()}"


def could_export(r: TrialReview) -> bool:
    """Whether some dataset review could export the trial: what :func:`_reason` asks of the
    trial alone (a model trial, healthy, training-ready, not rejected: a quarantine can be
    released, a rejection cannot).  Coverage, the plan, supersession and the quarantine
    registry decide among these; the partitions build rows for exactly these trials."""
    return (
        not is_oracle(r)
        and not is_noop(r)
        and r.verdict in (Verdict.PUBLISHABLE, Verdict.QUARANTINED)
        and all(f.severity != Severity.BLOCKER for f in r.findings)
        and r.healthy
        and r.outcome in HEALTHY_OUTCOMES
        and r.training_ready
    )


class ExportDecision:
    """Every trial's decision, in the order of the reviews."""

    def __init__(self, decisions: Iterable[Decision] = ()) -> None:
        self.decisions = list(decisions)
        # the index by key: the decisions' positions ordered by their key's hash, two
        # machine words a trial (a dictionary of key tuples takes some 100 bytes a trial)
        hashes = [hash(d.key) for d in self.decisions]
        order = sorted(range(len(hashes)), key=hashes.__getitem__)
        self._hash = array("q", [hashes[i] for i in order])
        self._pos = array("q", order)

    def __getstate__(self) -> list[bytes]:
        """The decisions as :func:`pickled_chunks` (the index by key is rebuilt on load)."""
        return pickled_chunks(self.decisions)

    def __setstate__(self, state: list[bytes]) -> None:
        self.__init__(unpickled(state))  # type: ignore[misc]

    def get(self, key: TrialKey) -> Decision | None:
        """The decision of the trial ``key`` (of the last one, when several share it)."""
        h = hash(key)
        i = bisect_left(self._hash, h)
        found = None
        while i < len(self._hash) and self._hash[i] == h:
            d = self.decisions[self._pos[i]]
            if d.key == key:
                found = d  # positions of one hash ascend: the last match is the last trial
            i += 1
        return found

    def __getitem__(self, key: TrialKey) -> Decision:
        d = self.get(key)
        if d is None:
            raise KeyError(key)
        return d

    @property
    def exported(self) -> list[Decision]:
        return [d for d in self.decisions if d.exported]

    @property
    def excluded(self) -> list[Decision]:
        """Excluded trials, ordered by job, rollout and path (the card's order)."""
        out = [d for d in self.decisions if not d.exported]
        return sorted(out, key=lambda d: (d.job, d.rollout, d.rel_path))

    def exported_keys(self) -> list[TrialKey]:
        return [d.key for d in self.decisions if d.exported]

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(d.reason for d in self.decisions).items()))

    def with_curation(self, outcomes: Mapping[TrialKey, tuple[str, str]]) -> ExportDecision:
        """The decision after curation excluded some of the trials it was handed
        (``{key: (reason, detail)}``, reasons ``duplicate`` or ``curation error``)."""
        out = []
        for d in self.decisions:
            hit = outcomes.get(d.key)
            if hit is not None and d.exported:
                reason, detail = hit
                if reason not in CURATION_REASONS:
                    raise ValueError(f"not a curation outcome: {reason!r}")
                d = replace(d, reason=reason, detail=detail)
            out.append(d)
        return ExportDecision(out)


def decide_exports(reviews: Iterable[TrialReview], coverage: Coverage) -> ExportDecision:
    """The export decision of every trial (``reviews`` carry their effective verdicts)."""
    # one text a slot, not one a superseded trial (nearly every trial of a large corpus)
    text = {id(row): superseded_reason(row) for row in coverage.rows if row.superseded}
    slot_of = {k: text[id(row)] for row in coverage.rows for k in row.superseded}
    superseded = {k: slot_of[k] for k in coverage.superseded if k in slot_of}
    del slot_of
    unplanned = set(coverage.unplanned)
    filled = coverage.filled
    out = []
    shared: dict[Any, Any] = {}  # equal slots and details: one object (a few per slot)
    for r in reviews:
        reason, detail = _reason(r, filled, superseded, unplanned)
        slot = r.identity.slot()
        out.append(
            Decision(
                job=r.ref.job_key,
                rollout=r.ref.rollout,
                rel_path=r.ref.rel_path,
                slot=shared.setdefault(slot, slot),
                outcome=r.outcome,
                verdict=r.verdict,
                reason=reason,
                detail=shared.setdefault(detail, detail),
            )
        )
    return ExportDecision(out)
