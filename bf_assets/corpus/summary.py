"""Batch-level figures of reviewed trials: counts, the gate-level release verdict, the
CLI's exit condition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from bf_assets.contract import Outcome, ReleaseVerdict, Severity, Verdict
from bf_assets.review.record import TrialReview


def summarize(trials: Iterable[TrialReview]) -> dict[str, Any]:
    """Counts by outcome, verdict, layout, attribution, check and severity, and the
    gate-level release verdict (coverage and publish checks refine it downstream)."""
    n = healthy = ready = model = exportable = 0
    outcomes: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    layouts: Counter[str] = Counter()
    attributions: Counter[str] = Counter()
    checks: Counter[str] = Counter()
    severities: Counter[str] = Counter()
    for t in trials:
        n += 1
        healthy += t.healthy
        ready += t.training_ready
        for f in t.findings:
            checks[f.check] += 1
            severities[f.severity] += 1
        outcomes[t.outcome] += 1
        verdicts[t.verdict] += 1
        layouts[t.layout] += 1
        attributions[t.attribution] += 1
        if t.outcome != Outcome.ORACLE:
            model += 1
            exportable += t.verdict == Verdict.PUBLISHABLE and t.training_ready
    if not exportable:
        release = ReleaseVerdict.NOT_PUBLISHABLE.value
    elif exportable < model:
        release = ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
    else:
        release = ReleaseVerdict.PUBLISHABLE.value
    return {
        "trials": n,
        "healthy": healthy,
        "training_ready": ready,
        "by_outcome": dict(sorted(outcomes.items())),
        "by_verdict": dict(sorted(verdicts.items())),
        "by_layout": dict(sorted(layouts.items())),
        "by_attribution": dict(sorted(attributions.items())),
        "findings_by_check": dict(sorted(checks.items())),
        "findings_by_severity": {s.value: severities.get(s.value, 0) for s in Severity},
        "release_verdict": release,
    }


def all_publishable(trials: Sequence[TrialReview]) -> bool:
    """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
    return bool(trials) and all(t.healthy and t.verdict == Verdict.PUBLISHABLE for t in trials)
