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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bf_assets.contract import Outcome, ReleaseVerdict, Verdict
from bf_assets.dataset.common import TrialKey, is_model_trial, show_key, trial_key
from bf_assets.dataset.coverage import MISSING, UNHEALTHY, Coverage
from bf_assets.review import TrialReview

NOT = ReleaseVerdict.NOT_PUBLISHABLE.value
WITH_Q = ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
CLEAN = ReleaseVerdict.PUBLISHABLE.value
_RANK = {NOT: 0, WITH_Q: 1, CLEAN: 2}


@dataclass(slots=True)
class ReleaseAssessment:
    verdict: str
    reasons: list[tuple[str, str]] = field(default_factory=list)  # (verdict level, why)


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
    reasons: list[tuple[str, str]] = []
    if publish_failed:
        reasons.append((NOT, "an export row failed a PUBLISH_* check"))
    for row in coverage.blocking_rows():
        reasons.append((NOT, f"required slot {row.label()} is {row.state}"))
    if coverage.below_floor:
        ratio = coverage.coverage_ratio
        shown = "n/a" if ratio is None else f"{ratio:.2f}"
        reasons.append((NOT, f"coverage {shown} is below the floor {coverage.min_coverage}"))
    if export_count <= 0:
        reasons.append((NOT, "nothing is left to export"))

    filled = coverage.filled
    superseded = set(coverage.superseded)
    unplanned = set(coverage.unplanned)
    for r, verdict in trials:
        if not is_model_trial(r):
            continue
        key = trial_key(r)
        why = None
        if verdict in (Verdict.REJECTED, Verdict.QUARANTINED):
            why = verdict
        elif r.outcome == Outcome.INCOMPLETE:
            why = "incomplete"
        elif key in superseded:
            why = "superseded"
        elif key in unplanned:
            why = "unplanned"
        elif not r.training_ready:
            why = "not training-ready"
        elif key not in filled:
            why = "fills no slot"
        if why:
            reasons.append((WITH_Q, f"{show_key(key)}: {why}"))
    for row in coverage.planned_rows():
        if not row.required and row.state in (MISSING, UNHEALTHY):
            reasons.append((WITH_Q, f"optional slot {row.label()} is {row.state}"))
    verdict = min((lvl for lvl, _ in reasons), key=_RANK.__getitem__, default=CLEAN)
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
