"""Every gating asset check of the graph (all blocking, severity ERROR).

On ``curated_rollouts``: ``PUBLISH_SECRET``, ``PUBLISH_HOST_PATH``, ``PUBLISH_BANNED_KEY``,
``PUBLISH_SCHEMA``, ``PUBLISH_NOT_READY`` (``checks.md`` §2) and
``release_verdict_not_not_publishable`` (§3).  All six read the same verification of the
bundle (``bf_assets.publish.verify.verify_bundle``), memoized per process
(``defs.publish.verified_index``), so with the in-process executor a release is scanned
once.  A failing check stops ``published_dataset``
in the same run; a run that skips the checks meets the same verification inside
``published_dataset``.
"""

import dagster as dg
import pandas as pd

from bf_assets.contract import CHECKS
from bf_assets.curate.scan import PUBLISH_CHECKS
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.defs.publish import ALL_PARTITIONS, load_candidates, verified_index
from bf_assets.defs.resources import RunRoots
from bf_assets.publish.verify import VERDICT_CHECK, GateReport

CHECKED_ASSET = "curated_rollouts"
DESCRIPTIONS = {cid: CHECKS[cid].summary for cid in PUBLISH_CHECKS} | {
    VERDICT_CHECK: "the release verdict (checks.md §3) is not `not_publishable`: there are rows "
    "to export and every publish check passed"
}
GATE_CHECK_NAMES = (*PUBLISH_CHECKS, VERDICT_CHECK)


def gate_report(
    run_roots: RunRoots,
    curated_rollouts: pd.DataFrame,
    review_report: DatasetReview,
    raw_trials: dict[str, pd.DataFrame],
    run_id: str | None = None,
) -> GateReport:
    """The bundle verification against the dataset review's decision, computed once per
    bundle, decision and input tables in a process (the six checks and
    ``published_dataset`` share it; with the in-process executor the bundle is scanned
    once and the candidates are built once per run)."""
    found = load_candidates(run_roots, review_report, raw_trials, run_id=run_id)
    return verified_index(curated_rollouts, review_report, found)[2]


def check_result(name: str, report: GateReport) -> dg.AssetCheckResult:
    found = report.findings.get(name, [])
    meta: dict[str, dg.MetadataValue] = {
        "release_verdict": dg.MetadataValue.text(report.verdict),
        "rows": dg.MetadataValue.json(report.rows),
    }
    if name != VERDICT_CHECK:
        meta["n_findings"] = dg.MetadataValue.int(len(found))
        meta["findings"] = dg.MetadataValue.json([f.to_dict() for f in found[:20]])
    passed = report.passed(name)
    return dg.AssetCheckResult(
        check_name=name,
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=None if passed else (found[0].message if found else report.summary()),
    )


def _gate_check(name: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=CHECKED_ASSET,
        name=name,
        blocking=True,
        description=DESCRIPTIONS[name],
        additional_ins={
            "review_report": dg.AssetIn(),
            "raw_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
        },
    )
    def _check(
        context: dg.AssetCheckExecutionContext,
        run_roots: RunRoots,
        curated_rollouts: pd.DataFrame,
        review_report: DatasetReview,
        raw_trials: dict[str, pd.DataFrame],
    ) -> dg.AssetCheckResult:
        report = gate_report(
            run_roots, curated_rollouts, review_report, raw_trials, context.run.run_id
        )
        return check_result(name, report)

    return _check


publish_gate: list[dg.AssetChecksDefinition] = [_gate_check(n) for n in GATE_CHECK_NAMES]
