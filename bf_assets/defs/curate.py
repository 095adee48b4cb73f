"""The curation stage: ``curated_rollouts`` (unpartitioned, over every job partition).

The asset reads the dataset review (``review_report``: the one export decision) and the
``raw_trials`` inventories of all registered partitions (for each exported trial's file
hashes), builds the release bundle with the core (``bf_assets.publish.bundle.build_bundle``,
which writes the shards, the card, the report and the manifest itself) and returns a small
index table, one row per bundle file, so the checks and ``published_dataset`` find the
bundle by path.  The training rows never travel through the IO manager.
"""

import dagster as dg
import pandas as pd

from bf_assets.dataset.assemble import DatasetReview, reason_lines
from bf_assets.defs.conventions import code_version, column_schema, owners
from bf_assets.defs.ingest import PARQUET_IO
from bf_assets.defs.io_managers import ROW_COUNT_ATTR, PartitionTables
from bf_assets.defs.publish import ALL_PARTITIONS, PublishTarget, load_candidates
from bf_assets.defs.resources import RunRoots
from bf_assets.publish.bundle import Bundle, build_bundle

EXCLUDED_SHOWN = 50  # excluded trials shown in the metadata
INDEX_COLUMNS = [
    "bundle_dir",
    "digest",
    "tag",
    "verdict",
    "path",
    "sha256",
    "bytes",
    "config",
    "split",
    "rows",
]


def bundle_index(bundle: Bundle) -> pd.DataFrame:
    rows = [
        {
            "bundle_dir": str(bundle.path),
            "digest": bundle.digest,
            "tag": bundle.tag,
            "verdict": bundle.verdict,
            **f.to_dict(),
        }
        for f in bundle.files
    ]
    df = pd.DataFrame(rows, columns=INDEX_COLUMNS)
    df["rows"] = df["rows"].astype("Int64")
    return df


@dg.asset(
    ins={
        "review_report": dg.AssetIn(),
        "raw_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
    },
    io_manager_key=PARQUET_IO,
    group_name="curate",
    kinds={"pandas", "parquet"},
    owners=owners(),
    code_version=code_version(__name__),
    metadata=column_schema(INDEX_COLUMNS),
)
def curated_rollouts(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    publish_target: PublishTarget,
    review_report: DatasetReview,
    raw_trials: PartitionTables,
) -> dg.Output[pd.DataFrame]:
    """The exported training rows, cleaned, as a release bundle (Parquet shards per config,
    card, report, manifest) on disk; the value is the bundle's file index."""
    candidates = load_candidates(run_roots, review_report, raw_trials)
    bundle = build_bundle(
        review_report,
        candidates,
        publish_target.staging_dir,
        publish_target.bundle_options(run_roots.plan_path),
        report=run_roots.report_context(),
        not_ingested=review_report.not_ingested,
    )
    final = bundle.dataset
    by_reason = final.decision.counts() if final is not None else {}
    excluded_md = (  # the first few (meta/excluded.jsonl in the bundle lists them all)
        pd.DataFrame([e.to_dict() for e in bundle.excluded[:EXCLUDED_SHOWN]])
        .loc[:, ["job", "rollout", "outcome", "reason", "detail"]]
        .to_markdown(index=False)
        if bundle.excluded
        else "_none_"
    )
    index = bundle_index(bundle)
    index.attrs[ROW_COUNT_ATTR] = len(bundle.exported)  # the UI's row count: rows exported
    return dg.Output(
        index,
        metadata={
            "files_written": dg.MetadataValue.int(len(bundle.files)),
            "rows_exported": dg.MetadataValue.int(len(bundle.exported)),
            "release_reasons": dg.MetadataValue.json(
                reason_lines(final.assessment.decisive()) if final is not None else []
            ),
            "bundle": dg.MetadataValue.path(str(bundle.path)),
            "tag": dg.MetadataValue.text(bundle.tag),
            "digest": dg.MetadataValue.text(bundle.digest),
            "release_verdict": dg.MetadataValue.text(bundle.verdict),
            "rows": dg.MetadataValue.json(bundle.rows),
            "excluded_by_reason": dg.MetadataValue.json(
                {k: v for k, v in by_reason.items() if k != "exported"}
            ),
            "excluded": dg.MetadataValue.md(excluded_md),
            "report": dg.MetadataValue.path(str(bundle.path / "report" / "review.md")),
            "cleaning": dg.MetadataValue.json(bundle.stats.to_dict()),
        },
    )
