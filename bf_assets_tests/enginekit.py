"""What the production-instance and Celery-engine tests share: a two-job corpus, the run
config pointing the resources at it, ``ingest_job`` as the code location loads it, in-process
materializations of every partition, and a deadline for runs that may hang."""

from __future__ import annotations

import importlib
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

import bf_assets.definitions as definitions_module
from bf_assets.defs.ingest import raw_trials, validated_trials
from bf_assets.defs.io_managers import ParquetIOManager, PickleIOManager
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots
from bf_sample.generator import generate_corpus

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout

JOB_NAMES = ("2026-07-01__00-00-00", "2026-07-02__00-00-00")
KEYS = tuple(f"jobs/{name}" for name in JOB_NAMES)
TRIALS_PER_JOB = 4
ASSETS = ("raw_trials", "validated_trials", "findings")
T = TypeVar("T")


def build_jobs_root(base: Path) -> Path:
    """Two production job directories (``JOB_NAMES``) of generated trials under ``base/runs/jobs``."""
    root = base / "runs" / "jobs"
    for i, name in enumerate(JOB_NAMES):
        out = base / f"corpus{i}"
        generate_corpus(out, TRIALS_PER_JOB, seed=i + 1)
        [job] = sorted(p for p in (out / "jobs").iterdir() if p.is_dir())
        shutil.copytree(job, root / name)
    return root


def resource_config(jobs_root: Path, warehouse: Path) -> dict[str, Any]:
    """Run config pointing both resources at this test's trees (it overrides the env defaults)."""
    return {
        "run_roots": {"config": {"roots": [str(jobs_root)]}},
        "parquet_io_manager": {"config": {"base_dir": str(warehouse)}},
        "dataset_io_manager": {"config": {"base_dir": str(warehouse)}},
    }


def local_resources(jobs_root: Path, warehouse: Path, **run_roots: Any) -> dict[str, Any]:
    """The two resources as objects, for in-process materializations."""
    return {
        "run_roots": RunRoots(roots=[str(jobs_root)], **run_roots),
        "parquet_io_manager": ParquetIOManager(base_dir=str(warehouse)),
        "dataset_io_manager": PickleIOManager(base_dir=str(warehouse)),
    }


def materialize_partitions(
    instance: dg.DagsterInstance, resources: Mapping[str, Any], keys: Sequence[str] = KEYS
) -> list[str]:
    """``raw_trials`` and ``validated_trials`` of every partition in ``keys``, in process, one
    run per partition (the partitions are registered first); the run ids."""
    instance.add_dynamic_partitions(job_partitions.name, list(keys))
    run_ids = []
    for key in keys:
        result = dg.materialize(
            [raw_trials, validated_trials],
            partition_key=key,
            instance=instance,
            resources=dict(resources),
        )
        assert result.success
        run_ids.append(result.run_id)
    return run_ids


def reload_definitions() -> None:
    """Re-import ``bf_assets.definitions`` (it reads ``BF_EXECUTOR`` at import) and forget the
    job definitions Dagster cached for reconstructable jobs."""
    importlib.reload(definitions_module)
    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()


def ingest_job_recon() -> ReconstructableJob:
    """``ingest_job`` as the code location loads it: module ``bf_assets.definitions``, ``defs``."""
    repo = ReconstructableRepository.for_module(
        "bf_assets.definitions", "defs", working_directory=str(REPO_ROOT)
    )
    return repo.get_reconstructable_job("ingest_job")


def call_with_timeout(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` in a daemon thread; fail the test (without waiting for it) after ``timeout_s``.

    A daemon thread, not a ``ThreadPoolExecutor``: a stuck run (a Celery executor waiting for a
    worker that never answers, say) must not keep pytest from exiting.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="bf-assets-test-run", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        pytest.fail(f"run did not finish within {timeout_s:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]
