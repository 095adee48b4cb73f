"""Dataset-level review: the experiment plan, manual quarantine, coverage, sandbox parity,
the release verdict, the coverage picture and the report (``checks.md`` §2 dataset level, §3).

Typical use::

    reviews = review_roots(roots).trials
    plan = load_plan("plan.yaml")                      # or None
    cov = compute_coverage(reviews, plan, oracle_rewards={...})
    applied = apply_quarantine(reviews, load_quarantine("quarantine.yaml"))
    verdicts = effective_verdicts(reviews, applied, cov.trial_findings)
    pairs_ = [(r, verdicts[trial_key(r)]) for r in reviews]
    export = export_candidates(pairs_, cov)
    verdict = release_verdict(pairs_, cov, len(export))
    md = render_report(reviews, cov, sandbox_parity(reviews), applied, verdict, roots, cmd)
"""

from bf_assets.dataset.common import Cell, TrialKey, trial_key
from bf_assets.dataset.coverage import Coverage, SlotRow, compute_coverage
from bf_assets.dataset.parity import ParityPair, ParityReport, ParityRow, sandbox_parity
from bf_assets.dataset.picture import coverage_svg, svg_data_uri
from bf_assets.dataset.plan import Plan, PlanError, PlannedCell, PlanSource, load_plan, parse_plan
from bf_assets.dataset.quarantine import (
    QuarantineEntry,
    QuarantineError,
    apply_quarantine,
    effective_verdict,
    effective_verdicts,
    load_quarantine,
    parse_quarantine,
    unmatched_entries,
)
from bf_assets.dataset.release import (
    ReleaseAssessment,
    ReleaseReason,
    assess_release,
    export_candidates,
    release_verdict,
)
from bf_assets.dataset.report import render_report

__all__ = [
    "Cell",
    "Coverage",
    "ParityPair",
    "ParityReport",
    "ParityRow",
    "Plan",
    "PlanError",
    "PlanSource",
    "PlannedCell",
    "QuarantineEntry",
    "QuarantineError",
    "ReleaseAssessment",
    "ReleaseReason",
    "SlotRow",
    "TrialKey",
    "apply_quarantine",
    "assess_release",
    "compute_coverage",
    "coverage_svg",
    "effective_verdict",
    "effective_verdicts",
    "export_candidates",
    "load_plan",
    "load_quarantine",
    "parse_plan",
    "parse_quarantine",
    "release_verdict",
    "render_report",
    "sandbox_parity",
    "svg_data_uri",
    "trial_key",
    "unmatched_entries",
]
