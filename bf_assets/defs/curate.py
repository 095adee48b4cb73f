"""The curation stage: ``curated_rollouts`` (unpartitioned, over every job partition).

The asset reads ``validated_trials`` and ``raw_trials`` of all registered partitions
(``allow_missing_partitions``: a partition registered but never materialized is skipped and
reported, not a crash; the IO manager always hands over a ``{partition: DataFrame}`` dict,
see ``io_managers.py``), builds the release bundle with the core
(``bf_assets.publish.bundle.build_bundle``, which writes the shards itself) and returns a
small index table, one row per bundle file, so the checks and ``published_dataset`` find the
bundle by path.  The training rows never travel through the IO manager.
"""

import dagster as dg
import pandas as pd

from bf_assets.defs.ingest import PARQUET_IO
from bf_assets.defs.publish import ALL_PARTITIONS, PublishTarget, load_candidates
from bf_assets.defs.resources import RunRoots
from bf_assets.publish.bundle import Bundle, build_bundle

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
        "validated_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
        "raw_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
    },
    io_manager_key=PARQUET_IO,
    group_name="curate",
    kinds={"pandas", "parquet"},
)
def curated_rollouts(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    publish_target: PublishTarget,
    validated_trials: dict[str, pd.DataFrame],
    raw_trials: dict[str, pd.DataFrame],
) -> dg.Output[pd.DataFrame]:
    """The exported training rows, cleaned, as a release bundle (Parquet shards per config,
    card, manifest) on disk; the value is the bundle's file index."""
    found = load_candidates(
        run_roots, validated_trials, raw_trials, context.log, run_id=context.run.run_id
    )
    bundle = build_bundle(
        found.candidates,
        publish_target.staging_dir,
        publish_target.bundle_options(run_roots.plan_path),
        not_ingested=[*found.not_ingested, *found.unreviewed],
        dataset_verdict=found.dataset_verdict,
        dataset_reasons=found.dataset_reasons,
    )
    by_reason: dict[str, int] = {}
    for e in bundle.excluded:
        by_reason[e.reason] = by_reason.get(e.reason, 0) + 1
    excluded_md = (
        pd.DataFrame([e.to_dict() for e in bundle.excluded])
        .loc[:, ["job", "rollout", "outcome", "reason", "detail"]]
        .head(50)
        .to_markdown(index=False)
        if bundle.excluded
        else "_none_"
    )
    return dg.Output(
        bundle_index(bundle),
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(bundle.files)),
            "bundle": dg.MetadataValue.path(str(bundle.path)),
            "tag": dg.MetadataValue.text(bundle.tag),
            "digest": dg.MetadataValue.text(bundle.digest),
            "release_verdict": dg.MetadataValue.text(bundle.verdict),
            "rows": dg.MetadataValue.json(bundle.rows),
            "excluded_by_reason": dg.MetadataValue.json(dict(sorted(by_reason.items()))),
            "excluded": dg.MetadataValue.md(excluded_md),
            "cleaning": dg.MetadataValue.json(bundle.stats.to_dict()),
        },
    )
