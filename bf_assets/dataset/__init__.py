"""Dataset-level review: the experiment plan, manual quarantine, coverage, sandbox parity,
the release verdict, the coverage picture and the report (``checks.md`` §2 dataset level, §3).

Typical use::

    ds = assemble(reviews, plan_path="plan.yaml", quarantine_path="quarantine.yaml")
    ds.decision.exported          # the one export decision every output is a view of
    ds.release_verdict, ds.assessment.decisive()
    md = report_markdown(ds, roots)
"""

from bf_assets.dataset.common import Cell, TrialKey, trial_key
from bf_assets.dataset.coverage import Coverage, SlotRow, compute_coverage
from bf_assets.dataset.coverage_svg import coverage_svg, svg_data_uri
from bf_assets.dataset.decide import Decision, ExportDecision, decide_exports
from bf_assets.dataset.parity import ParityPair, ParityReport, ParityRow, sandbox_parity
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
from bf_assets.dataset.release import ReleaseAssessment, ReleaseReason, assess_release
from bf_assets.dataset.report import render_report

__all__ = [
    "Cell",
    "Coverage",
    "Decision",
    "ExportDecision",
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
    "decide_exports",
    "load_plan",
    "load_quarantine",
    "parse_plan",
    "parse_quarantine",
    "render_report",
    "sandbox_parity",
    "svg_data_uri",
    "trial_key",
    "unmatched_entries",
]
