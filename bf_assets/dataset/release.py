"""The release verdict of ``checks.md`` §3, from effective verdicts, coverage and the export.

* ``not_publishable``: a required slot is missing or unhealthy, coverage is below the plan's
  ``min_coverage``, or nothing is left to export (``PUBLISH_*`` failures are the publish
  stage's and arrive here as ``export_count == 0`` or through ``publish_failed``).
* ``publishable_with_quarantines``: the export is clean, but a model trial was excluded
  (any reason of ``bf_assets.dataset.decide`` but the probe lanes'), or an optional slot is
  missing or unhealthy: something was held out, and the card must list it.
* ``publishable``: every planned slot has its healthy latest trial and nothing was excluded.

Oracle and no-op probe lanes are never model data and never count as excluded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from bf_assets.contract import ReleaseVerdict
from bf_assets.dataset.common import show_key
from bf_assets.dataset.coverage import MISSING, UNHEALTHY, Coverage
from bf_assets.dataset.decide import PROBE_REASONS, Decision, ExportDecision

NOT = ReleaseVerdict.NOT_PUBLISHABLE.value
WITH_Q = ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
CLEAN = ReleaseVerdict.PUBLISHABLE.value
_RANK = {NOT: 0, WITH_Q: 1, CLEAN: 2}


@dataclass(frozen=True, slots=True)
class ReleaseReason:
    level: str  # the release verdict this reason alone would give
    kind: str  # publish_failed, required_slot, below_floor, nothing_to_export, rejected, ...
    subject: str  # the slot, trial or figure concerned

    def text(self) -> str:
        return f"{self.kind.replace('_', ' ')} ({self.subject})"


class Reasons(Sequence[ReleaseReason]):
    """Every reason in order: ``head``, one per trial the decision excludes (but the probe
    lanes), then ``tail``.  The trials' reasons are made from the decision when read, not
    kept (one object and one text a trial for a large corpus); equal to the list of the
    same reasons."""

    def __init__(
        self,
        head: list[ReleaseReason],
        decision: ExportDecision | None = None,
        tail: list[ReleaseReason] | None = None,
    ) -> None:
        self.head = head
        self.decision = decision
        self.tail = tail or []
        self.excluded = sum(1 for _ in self._excluded())

    def _excluded(self) -> Iterator[Decision]:
        if self.decision is None:
            return
        for d in self.decision.decisions:
            if not d.exported and d.reason not in PROBE_REASONS:
                yield d

    def __iter__(self) -> Iterator[ReleaseReason]:
        yield from self.head
        for d in self._excluded():
            yield ReleaseReason(WITH_Q, d.kind, show_key(d.key))
        yield from self.tail

    def __len__(self) -> int:
        return len(self.head) + self.excluded + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> ReleaseReason: ...
    @overload
    def __getitem__(self, index: slice) -> list[ReleaseReason]: ...
    def __getitem__(self, index: int | slice) -> ReleaseReason | list[ReleaseReason]:
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Reasons({list(self)!r})"

    def levels(self) -> set[str]:
        """The distinct levels of the reasons (without making the trials' reasons)."""
        out = {r.level for r in self.head} | {r.level for r in self.tail}
        if self.excluded:
            out.add(WITH_Q)
        return out


@dataclass(slots=True)
class ReleaseAssessment:
    verdict: str
    reasons: Sequence[ReleaseReason] = field(default_factory=list)

    def decisive(self) -> list[ReleaseReason]:
        return [r for r in self.reasons if r.level == self.verdict]

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(r.kind for r in self.reasons).items()))


def nothing_to_export(n_export: int, n_trials: int) -> ReleaseReason:
    """``nothing_to_export``; with no trial at all, the subject says so (a run root holding no
    trials is most often the wrong folder, not an empty experiment)."""
    subject = f"{n_export} export rows"
    if n_trials <= 0:
        subject += (
            ": no trials were found under the run roots; a trial is a folder holding "
            "result.json, config.json or run_config.json"
        )
    return ReleaseReason(NOT, "nothing_to_export", subject)


def assess_release(
    decision: ExportDecision,
    coverage: Coverage,
    publish_failed: bool = False,
) -> ReleaseAssessment:
    """The release verdict and every reason for it, from the export decision and coverage."""
    reasons: list[ReleaseReason] = []
    if publish_failed:
        reasons.append(
            ReleaseReason(NOT, "publish_failed", "an export row failed a PUBLISH_* check")
        )
    for row in coverage.blocking_rows():
        reasons.append(ReleaseReason(NOT, f"required_slot_{row.state}", row.label()))
    if coverage.below_floor:
        ratio = coverage.coverage_ratio
        shown = "n/a" if ratio is None else f"{ratio:.2f}"
        reasons.append(
            ReleaseReason(NOT, "below_floor", f"coverage {shown} < floor {coverage.min_coverage}")
        )
    n_export = len(decision.exported)
    if n_export <= 0:
        reasons.append(nothing_to_export(n_export, len(decision.decisions)))
    tail = [
        ReleaseReason(WITH_Q, f"optional_slot_{row.state}", row.label())
        for row in coverage.planned_rows()
        if not row.required and row.state in (MISSING, UNHEALTHY)
    ]
    every = Reasons(reasons, decision, tail)
    verdict = min(every.levels(), key=_RANK.__getitem__, default=CLEAN)
    return ReleaseAssessment(verdict, every)
