"""The Dagster code location of bf-assets (``[tool.dagster] module_name``).

Resources: ``run_roots`` (``$BF_RUN_ROOTS`` or ``data/runs/jobs``) and ``parquet_io_manager``
on ``$BF_WAREHOUSE`` (a local path or an fsspec URL) or ``data/warehouse`` under the repo
root.  Both environment variables are read when this module is imported.
"""

from __future__ import annotations

import os

import dagster as dg

from bf_assets.defs.executors import select_executor
from bf_assets.defs.ingest import raw_trials, validated_trials
from bf_assets.defs.io_managers import ParquetIOManager
from bf_assets.defs.jobs import ingest_job
from bf_assets.defs.resources import REPO_ROOT, RunRoots
from bf_assets.defs.sensors import new_job_dirs

WAREHOUSE_ENV = "BF_WAREHOUSE"


def warehouse_dir() -> str:
    return os.environ.get(WAREHOUSE_ENV) or str(REPO_ROOT / "data" / "warehouse")


defs = dg.Definitions(
    assets=[raw_trials, validated_trials],
    jobs=[ingest_job],
    sensors=[new_job_dirs],
    executor=select_executor(),
    resources={
        "run_roots": RunRoots(),
        "parquet_io_manager": ParquetIOManager(base_dir=warehouse_dir()),
    },
)
