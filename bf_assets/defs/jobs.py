"""Jobs."""

from __future__ import annotations

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets("raw_trials", "validated_trials", "findings"),
    description="Read, review and tabulate the trials of one job directory (one partition).",
)
