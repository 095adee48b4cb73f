"""Batch-level figures of reviewed trials: counts, the gate-level release verdict, the
CLI's exit condition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from bf_assets.contract import Outcome, ReleaseVerdict, Severity, Verdict
from bf_assets.findings import Finding, sort_findings
from bf_assets.review.record import TrialReview


def release_verdict(trials: Iterable[TrialReview]) -> str:
    """Gate-level release verdict (coverage and publish checks refine it downstream)."""
    ts = list(trials)
    model = [t for t in ts if t.outcome != Outcome.ORACLE]
    exportable = [t for t in model if t.verdict == Verdict.PUBLISHABLE and t.training_ready]
    if not exportable:
        return ReleaseVerdict.NOT_PUBLISHABLE.value
    if len(exportable) < len(model):
        return ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
    return ReleaseVerdict.PUBLISHABLE.value


def summarize(trials: Sequence[TrialReview]) -> dict[str, Any]:
    checks: Counter[str] = Counter()
    severities: Counter[str] = Counter()
    for t in trials:
        for f in t.findings:
            checks[f.check] += 1
            severities[f.severity] += 1
    return {
        "trials": len(trials),
        "healthy": sum(t.healthy for t in trials),
        "training_ready": sum(t.training_ready for t in trials),
        "by_outcome": dict(sorted(Counter(t.outcome for t in trials).items())),
        "by_verdict": dict(sorted(Counter(t.verdict for t in trials).items())),
        "by_layout": dict(sorted(Counter(t.layout for t in trials).items())),
        "by_attribution": dict(sorted(Counter(t.attribution for t in trials).items())),
        "findings_by_check": dict(sorted(checks.items())),
        "findings_by_severity": {s.value: severities.get(s.value, 0) for s in Severity},
        "release_verdict": release_verdict(trials),
    }


def all_publishable(trials: Sequence[TrialReview]) -> bool:
    """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
    return bool(trials) and all(t.healthy and t.verdict == Verdict.PUBLISHABLE for t in trials)


def ordered_findings(trials: Iterable[TrialReview]) -> list[tuple[TrialReview, Finding]]:
    pairs = [(t, f) for t in trials for f in sort_findings(t.findings)]
    return pairs
