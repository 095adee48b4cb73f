"""Every gating asset check of the graph (all blocking, severity ERROR).

On ``curated_rollouts``: ``PUBLISH_SECRET``, ``PUBLISH_HOST_PATH``, ``PUBLISH_BANNED_KEY``,
``PUBLISH_REASONING`` (``docs/checks.md``), ``PUBLISH_SCHEMA``, ``PUBLISH_NOT_READY``
(``checks.md`` §2) and ``release_is_publishable`` (§3), seven checks of one multi-asset check (one step: the inputs are loaded once and the
bundle is verified once against the dataset review's decision,
``bf_assets.publish.verify.verify_bundle``).  A failing check stops ``published_dataset``
in the same run; a run that skips the checks meets the same verification inside
``published_dataset``.  The verdict check's metadata and description carry the decisive
reasons and the coverage against its floor.
"""

from collections.abc import Iterator

import dagster as dg
import pandas as pd

from bf_assets.contract import CHECKS
from bf_assets.curate.scan import PUBLISH_CHECKS
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.defs.io_managers import PartitionTables
from bf_assets.defs.publish import bundle_report, load_candidates
from bf_assets.defs.resources import RunRoots
from bf_assets.publish.verify import VERDICT_CHECK, GateReport

CHECKED_ASSET = "curated_rollouts"
DESCRIPTIONS = {cid: CHECKS[cid].summary for cid in PUBLISH_CHECKS} | {
    VERDICT_CHECK: "the release verdict (checks.md §3) is publishable or "
    "publishable_with_quarantines: there are rows to export, every required slot has a "
    "healthy trial, coverage meets the plan's floor and every publish check passed"
}
GATE_CHECK_NAMES = (*PUBLISH_CHECKS, VERDICT_CHECK)


def gate_report(
    run_roots: RunRoots,
    curated_rollouts: pd.DataFrame,
    review_report: DatasetReview,
    raw_trials: PartitionTables,
) -> GateReport:
    """The bundle verification against the dataset review's decision (the seven checks read
    this one verification)."""
    found = load_candidates(run_roots, review_report, raw_trials)
    return bundle_report(curated_rollouts, review_report, found)[2]


def check_result(name: str, report: GateReport) -> dg.AssetCheckResult:
    found = report.findings.get(name, [])
    meta: dict[str, dg.MetadataValue] = {
        "release_verdict": dg.MetadataValue.text(report.verdict),
        "rows": dg.MetadataValue.json(report.rows),
    }
    if name != VERDICT_CHECK:
        meta["n_findings"] = dg.MetadataValue.int(len(found))
        meta["findings"] = dg.MetadataValue.json([f.to_dict() for f in found[:20]])
    else:
        meta["reasons"] = dg.MetadataValue.json(report.reasons)
        meta["coverage"] = dg.MetadataValue.json(report.coverage)
        if report.reasons:
            meta["why"] = dg.MetadataValue.md("\n".join(f"- {r}" for r in report.reasons))
    passed = report.passed(name)
    return dg.AssetCheckResult(
        check_name=name,
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=None if passed else (found[0].message if found else report.summary()),
    )


@dg.multi_asset_check(
    name="publish_gate",
    specs=[
        dg.AssetCheckSpec(
            n,
            asset=CHECKED_ASSET,
            blocking=True,
            description=DESCRIPTIONS[n],
            additional_deps=["review_report", "raw_trials"],
        )
        for n in GATE_CHECK_NAMES
    ],
    ins={
        CHECKED_ASSET: dg.AssetIn(),
        "review_report": dg.AssetIn(),
        "raw_trials": dg.AssetIn(),  # a dict of whatever job partitions have a table
    },
)
def publish_gate_checks(
    context: dg.AssetCheckExecutionContext,
    run_roots: RunRoots,
    curated_rollouts: pd.DataFrame,
    review_report: DatasetReview,
    raw_trials: PartitionTables,
) -> Iterator[dg.AssetCheckResult]:
    """One step for the whole gate: the bundle is verified once against the decision and
    every check reads that one verification."""
    report = gate_report(run_roots, curated_rollouts, review_report, raw_trials)
    for name in GATE_CHECK_NAMES:
        yield check_result(name, report)


publish_gate: list[dg.AssetChecksDefinition] = [publish_gate_checks]
