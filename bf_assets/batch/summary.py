"""Batch-level figures of reviewed trials: counts, the gate-level release verdict, the
CLI's exit condition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from bf_assets.contract import Outcome, ReleaseVerdict, Severity, Verdict
from bf_assets.findings import Finding, sort_findings
from bf_assets.review.record import TrialReview


class Tally:
    """The figures of :func:`summarize`, one trial at a time (nothing per trial is kept)."""

    def __init__(self) -> None:
        self.trials = self.healthy = self.ready = self.model = self.exportable = 0
        self.publishable_healthy = 0
        self.outcomes: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.layouts: Counter[str] = Counter()
        self.attributions: Counter[str] = Counter()
        self.checks: Counter[str] = Counter()
        self.severities: Counter[str] = Counter()

    def add(self, t: TrialReview) -> None:
        self.trials += 1
        self.healthy += t.healthy
        self.ready += t.training_ready
        for f in t.findings:
            self.checks[f.check] += 1
            self.severities[f.severity] += 1
        self.outcomes[t.outcome] += 1
        self.verdicts[t.verdict] += 1
        self.layouts[t.layout] += 1
        self.attributions[t.attribution] += 1
        if t.outcome != Outcome.ORACLE:
            self.model += 1
            self.exportable += t.verdict == Verdict.PUBLISHABLE and t.training_ready
        self.publishable_healthy += t.healthy and t.verdict == Verdict.PUBLISHABLE

    def release_verdict(self) -> str:
        """Gate-level release verdict (coverage and publish checks refine it downstream)."""
        if not self.exportable:
            return ReleaseVerdict.NOT_PUBLISHABLE.value
        if self.exportable < self.model:
            return ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
        return ReleaseVerdict.PUBLISHABLE.value

    def all_publishable(self) -> bool:
        """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
        return self.trials > 0 and self.publishable_healthy == self.trials

    def as_dict(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "healthy": self.healthy,
            "training_ready": self.ready,
            "by_outcome": dict(sorted(self.outcomes.items())),
            "by_verdict": dict(sorted(self.verdicts.items())),
            "by_layout": dict(sorted(self.layouts.items())),
            "by_attribution": dict(sorted(self.attributions.items())),
            "findings_by_check": dict(sorted(self.checks.items())),
            "findings_by_severity": {s.value: self.severities.get(s.value, 0) for s in Severity},
            "release_verdict": self.release_verdict(),
        }


def tally(trials: Iterable[TrialReview]) -> Tally:
    out = Tally()
    for t in trials:
        out.add(t)
    return out


def release_verdict(trials: Iterable[TrialReview]) -> str:
    """Gate-level release verdict (coverage and publish checks refine it downstream)."""
    return tally(trials).release_verdict()


def summarize(trials: Iterable[TrialReview]) -> dict[str, Any]:
    return tally(trials).as_dict()


def all_publishable(trials: Sequence[TrialReview]) -> bool:
    """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
    return bool(trials) and all(t.healthy and t.verdict == Verdict.PUBLISHABLE for t in trials)


def ordered_findings(trials: Iterable[TrialReview]) -> list[tuple[TrialReview, Finding]]:
    pairs = [(t, f) for t in trials for f in sort_findings(t.findings)]
    return pairs
