"""Partitions of the asset graph.

One dynamic partition per Benchflow job directory.  The partition key is the job key of
``bf_assets.ingest.discovery`` (the job directory relative to its run root's parent, e.g.
``jobs/2026-06-01__10-00-00``), so it contains ``/``; the Parquet IO manager stores it as
sub-folders (see ``bf_assets.defs.io_managers.partition_relpath``).
"""

from __future__ import annotations

import dagster as dg

job_partitions = dg.DynamicPartitionsDefinition(name="trial_jobs")
