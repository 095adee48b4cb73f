"""The release verdict of ``checks.md`` §3, from effective verdicts, coverage and the export.

* ``not_publishable``: a required slot is missing or unhealthy, coverage is below the plan's
  ``min_coverage``, or nothing is left to export (``PUBLISH_*`` failures are the publish
  stage's and arrive here as ``export_count == 0`` or through ``publish_failed``).
* ``publishable_with_quarantines``: the export is clean, but a model trial was rejected,
  quarantined, incomplete, superseded, unplanned or not training-ready, or an optional slot
  is missing or unhealthy: something was excluded, and the card must list it.
* ``publishable``: every planned slot has its healthy latest trial and nothing was excluded.

Oracle and no-op probe lanes are never model data and never count as excluded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bf_assets.contract import Outcome, ReleaseVerdict, Verdict
from bf_assets.dataset.common import TrialKey, is_model_trial, show_key, trial_key
from bf_assets.dataset.coverage import MISSING, UNHEALTHY, Coverage
from bf_assets.review.record import TrialReview

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


@dataclass(slots=True)
class ReleaseAssessment:
    verdict: str
    reasons: list[ReleaseReason] = field(default_factory=list)

    def decisive(self) -> list[ReleaseReason]:
        return [r for r in self.reasons if r.level == self.verdict]

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(r.kind for r in self.reasons).items()))


def export_candidates(
    trials: Iterable[tuple[TrialReview, str]], coverage: Coverage
) -> list[TrialKey]:
    """Trials to export: fill a planned slot, effective verdict publishable, training-ready."""
    filled = coverage.filled
    return [
        trial_key(r)
        for r, verdict in trials
        if trial_key(r) in filled and verdict == Verdict.PUBLISHABLE and r.training_ready
    ]


def assess_release(
    trials: Iterable[tuple[TrialReview, str]],
    coverage: Coverage,
    export_count: int,
    publish_failed: bool = False,
) -> ReleaseAssessment:
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
    if export_count <= 0:
        reasons.append(ReleaseReason(NOT, "nothing_to_export", f"{export_count} export rows"))

    filled = coverage.filled
    superseded = set(coverage.superseded)
    unplanned = set(coverage.unplanned)
    for r, verdict in trials:
        if not is_model_trial(r):
            continue
        key = trial_key(r)
        why = None
        if verdict in (Verdict.REJECTED, Verdict.QUARANTINED):
            why = str(verdict)
        elif r.outcome == Outcome.INCOMPLETE:
            why = "incomplete"
        elif key in superseded:
            why = "superseded"
        elif key in unplanned:
            why = "unplanned"
        elif not r.training_ready:
            why = "not_training_ready"
        elif key not in filled:
            why = "fills_no_slot"
        if why:
            reasons.append(ReleaseReason(WITH_Q, why, show_key(key)))
    for row in coverage.planned_rows():
        if not row.required and row.state in (MISSING, UNHEALTHY):
            reasons.append(ReleaseReason(WITH_Q, f"optional_slot_{row.state}", row.label()))
    verdict = min((x.level for x in reasons), key=_RANK.__getitem__, default=CLEAN)
    return ReleaseAssessment(verdict, reasons)


def release_verdict(
    trials: Iterable[tuple[TrialReview, str]] | Mapping[TrialKey, str],
    coverage: Coverage,
    export_count: int,
    reviews: Iterable[TrialReview] | None = None,
) -> str:
    """``checks.md`` §3 verdict.

    ``trials`` is ``(review, effective verdict)`` pairs, or a mapping trial key → effective
    verdict together with ``reviews``.
    """
    return assess_release(pairs(trials, reviews), coverage, export_count).verdict


def pairs(
    trials: Iterable[tuple[TrialReview, str]] | Mapping[TrialKey, str],
    reviews: Iterable[TrialReview] | None = None,
) -> list[tuple[TrialReview, str]]:
    if isinstance(trials, Mapping):
        if reviews is None:
            raise TypeError("a verdict mapping needs the reviews it refers to")
        return [(r, trials.get(trial_key(r), r.verdict)) for r in reviews]
    return list(trials)
