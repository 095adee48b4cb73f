"""The curation stage: ``trial_rows`` (one partition per job directory) and
``curated_rollouts`` (unpartitioned, over every job partition).

``trial_rows`` builds the cleaned export rows of every trial of its job partition that a
dataset review could export (``bf_assets.curate.frames.exportable_candidates``), once, in the
runs that ingest the partition, so the executor spreads them with the ingest.  The rows go
to one file per partition in the warehouse (``trial_rows/<job>.<time>-<random>.rows``,
``bf_assets.publish.rowbuild.write_trial_rows``); the asset's value is the small index of
that file, one row per trial (where its record is, or why its row could not be built).  A
file curation reads that is not the one the review read is a curation error of that trial,
found here.

``curated_rollouts`` reads the dataset review (``review_report``: the one export decision),
the ``raw_trials`` inventories (for each exported trial's file hashes) and the
``trial_rows`` indexes, and builds the release bundle with the core
(``bf_assets.publish.bundle.build_bundle``, which takes each exported trial's row from its
partition's file and writes the shards, the card, the report and the manifest itself); it
reads no trial file.  It returns a small index table, one row per bundle file, so the checks
and ``published_dataset`` find the bundle by path.  The training rows never travel through
the IO manager.
"""

from collections.abc import Mapping

import dagster as dg
import pandas as pd
from upath import UPath

from bf_assets.corpus.ingest_state import partition_relpath
from bf_assets.curate.frames import exportable_candidates, exported_row_entries
from bf_assets.dataset.assemble import DatasetReview, reason_lines
from bf_assets.defs.conventions import code_version, column_schema, owners
from bf_assets.defs.ingest import PARQUET_IO
from bf_assets.defs.io_managers import ROW_COUNT_ATTR, PartitionTables
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.publish import (
    ALL_PARTITIONS,
    GATE_REPORT_COLUMN,
    PublishTarget,
    gate_report_json,
    load_candidates,
    verify_index,
)
from bf_assets.defs.ranges import backfill_partitions_per_run
from bf_assets.defs.resources import RunRoots, namespaced_warehouse, warehouse_dir
from bf_assets.publish.bundle import Bundle, build_bundle
from bf_assets.publish.rowbuild import ROW_INDEX_COLUMNS, StoredRows, write_trial_rows

ROWS_DIR = "trial_rows"  # the rows files' folder in the run roots' local warehouse

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
    GATE_REPORT_COLUMN,  # the bundle's verification, on its first row (defs.publish)
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


def _index_meta(index: pd.DataFrame, rows_file: str | None) -> dict[str, dg.MetadataValue]:
    errors = index["error"].notna()
    meta: dict[str, dg.MetadataValue] = {
        "dagster/row_count": dg.MetadataValue.int(len(index)),
        "rows_built": dg.MetadataValue.int(int((~errors).sum())),
        "curation_errors": dg.MetadataValue.int(int(errors.sum())),
    }
    if rows_file:
        meta["rows_file"] = dg.MetadataValue.path(rows_file)
    return meta


@dg.asset(
    partitions_def=job_partitions,
    ins={"raw_trials": dg.AssetIn(), "validated_trials": dg.AssetIn()},
    io_manager_key=PARQUET_IO,
    group_name="curate",
    kinds={"pandas", "parquet"},
    owners=owners(),
    code_version=code_version(__name__),
    metadata=column_schema(list(ROW_INDEX_COLUMNS)),
    backfill_policy=dg.BackfillPolicy.multi_run(backfill_partitions_per_run()),
)
def trial_rows(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    raw_trials: PartitionTables,
    validated_trials: PartitionTables,
) -> dg.Output[pd.DataFrame]:
    """The cleaned export rows of every trial of the job that a dataset review could export,
    built once and written to the partition's rows file; the value is the file's index, one
    row per trial."""
    keys = list(context.partition_keys)
    folder = UPath(namespaced_warehouse(warehouse_dir(), run_roots.roots)) / ROWS_DIR
    candidates = [
        cand
        for key in keys
        for cand in exportable_candidates(validated_trials.get(key), raw_trials.get(key))
    ]

    def file_of(job: str) -> UPath:
        *dirs, name = partition_relpath(job)
        return folder.joinpath(*dirs, name)

    index = pd.DataFrame(write_trial_rows(candidates, file_of), columns=list(ROW_INDEX_COLUMNS))
    index["offset"] = index["offset"].astype("int64")
    index["length"] = index["length"].astype("int64")
    parts = {k: index[index["job"] == k] for k in keys} if len(keys) > 1 else {keys[0]: index}
    meta = {
        k: _index_meta(part, str(part["rows_file"].iloc[0]) if len(part) else None)
        for k, part in parts.items()
    }
    if len(keys) == 1:
        return dg.Output(index, metadata=meta[keys[0]])
    for k, m in meta.items():
        context.add_asset_metadata(m, partition_key=k)
    return dg.Output(index)


def stored_rows(dataset: DatasetReview, index: Mapping[str, pd.DataFrame]) -> StoredRows:
    """Where the exported trials' rows were built (``trial_rows``)."""
    return StoredRows(exported_row_entries(dataset, index))


@dg.asset(
    ins={
        "review_report": dg.AssetIn(),
        "raw_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
        "trial_rows": dg.AssetIn(metadata=ALL_PARTITIONS),
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
    trial_rows: PartitionTables,
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
        outcomes=stored_rows(review_report, trial_rows),
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
    # the bundle verified once, here: the blocking checks and published_dataset read this
    # verification while the bundle holds the bytes it verified
    report = verify_index(index, review_report, candidates)[2]
    index[GATE_REPORT_COLUMN] = [gate_report_json(report)] + [None] * (len(index) - 1)
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
