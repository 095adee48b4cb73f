"""Jobs."""

from __future__ import annotations

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets(
        "raw_trials", "validated_trials", "findings", "skill_audit", "trial_audits", "trial_rows"
    ),
    description="Read, review and tabulate the trials of job directories and build the rows "
    "of the trials they could export: one partition, or "
    "a range of them in one run (a single-run backfill, bf-assets release).",
)

# The release: the dataset review and curation over every ingested partition, the blocking publish checks of
# ``checks.py`` (included because they check a selected asset) and the publish step, in one
# run, so a failing check stops the publish step of the same run.  Ingest runs before it:
# per partition (the sensor) or over a range of partitions in one run (a backfill,
# ``bf-assets release``).  The ``release`` tag feeds the run tag-concurrency limit of
# ``dagster.yaml`` (one release at a time).
release_job = dg.define_asset_job(
    "release_job",
    selection=dg.AssetSelection.assets(
        "coverage",
        "sandbox_parity",
        "review_report",
        "results",
        "trial_pages",
        "curated_rollouts",
        "published_dataset",
    ),
    tags={"release": "publish"},
    description="Review the dataset (coverage, parity, the export decision, the report and the "
    "trial pages) over every ingested job, curate what it exports, run the blocking publish checks, then publish.",
)
