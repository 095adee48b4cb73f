"""The Dagster code location of bf-assets (``[tool.dagster] module_name``).

Resources: ``run_roots`` (``$BF_RUN_ROOTS`` or ``data/runs/jobs``), ``parquet_io_manager``
on ``$BF_WAREHOUSE`` (a local path or an fsspec URL) or ``data/warehouse`` under the repo
root, and ``publish_target`` (``$BF_PUBLISH_DIR`` or ``data/published``, ``$BF_STAGING_DIR``
or ``<warehouse>/staging``, ``$BF_HUB_REPO`` for the Hub; the token from ``HF_TOKEN``, as ``dg.EnvVar``).  The
environment variables are read when this module is imported; ``$BF_HUB_REPO``, when set,
goes into the resource as ``dg.EnvVar`` (the UI shows the variable; a run reads its value).
Assets are owned by ``$BF_ASSET_OWNER`` (default ``team:bf-assets``, ``defs.conventions``).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

import bf_assets.components
from bf_assets.defs.checks import publish_gate
from bf_assets.defs.curate import curated_rollouts, trial_rows
from bf_assets.defs.executors import select_executor
from bf_assets.defs.ingest import raw_trials, validated_trials
from bf_assets.defs.io_managers import ParquetIOManager, PickleIOManager
from bf_assets.defs.jobs import ingest_job, release_job
from bf_assets.defs.pages import trial_pages
from bf_assets.defs.publish import HUB_REPO_ENV, TOKEN_ENV, PublishTarget, published_dataset
from bf_assets.defs.resources import RunRoots, namespaced_warehouse, warehouse_dir
from bf_assets.defs.results import results
from bf_assets.defs.review import dataset_review
from bf_assets.defs.schedules import release_schedule
from bf_assets.defs.sensors import new_job_dirs


def default_publish_target() -> PublishTarget:
    """The publish target of the environment; the Hub repo as ``dg.EnvVar`` when set."""
    if os.environ.get(HUB_REPO_ENV):
        token = {"hf_token": dg.EnvVar(TOKEN_ENV)} if os.environ.get(TOKEN_ENV) else {}
        return PublishTarget(hub_repo=dg.EnvVar(HUB_REPO_ENV), **token)
    return PublishTarget()


def build_defs(
    *,
    run_roots: RunRoots | None = None,
    publish_target: PublishTarget | None = None,
    warehouse: str | None = None,
) -> dg.Definitions:
    """The code location with explicit resources (``bf-assets release`` builds its own).

    Without an explicit ``warehouse`` the tables live in the run roots' own sub-folder of
    ``$BF_WAREHOUSE`` (``defs.resources.namespaced_warehouse``), so releases of different run
    roots never share files."""
    roots = run_roots or RunRoots()
    base = warehouse or namespaced_warehouse(warehouse_dir(), roots.roots)
    graph = dg.Definitions(
        assets=[
            raw_trials,
            validated_trials,
            trial_rows,
            dataset_review,
            results,
            trial_pages,
            curated_rollouts,
            published_dataset,
        ],
        asset_checks=[*publish_gate],
        jobs=[ingest_job, release_job],
        schedules=[release_schedule],
        sensors=[new_job_dirs],
        executor=select_executor(),
        resources={
            "run_roots": roots,
            "publish_target": publish_target or default_publish_target(),
            "parquet_io_manager": ParquetIOManager(base_dir=base),
            "dataset_io_manager": PickleIOManager(base_dir=base),
        },
    )
    return dg.Definitions.merge(graph, scaffolded_defs())


def scaffolded_defs() -> dg.Definitions:
    """What ``dg scaffold defs`` added under ``bf_assets/components`` (the dg project's
    ``defs_module``), loaded as ``dg`` loads it; nothing outside a checkout (no
    ``pyproject.toml`` beside the package: an installed wheel has nothing scaffolded)."""
    project_root = Path(bf_assets.components.__file__).resolve().parents[2]
    if not (project_root / "pyproject.toml").is_file():
        return dg.Definitions()
    folder = Path(bf_assets.components.__file__).resolve().parent
    return dg.load_from_defs_folder(path_within_project=folder)


defs = build_defs()
