"""A backfill of the ingest assets over many job partitions ("Materialize all" in the UI) is
several runs of at most ``BF_BACKFILL_PARTITIONS_PER_RUN`` partitions each, not one run
holding every trial of the corpus.

Dagster's own backfill iteration plans the runs from the definitions as a code server loads
them; the shipped instance queues them (no run starts here), and the runs' partition tags say
what each would ingest.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.backfill import execute_backfill_iteration

from bf_assets.defs.ingest import REVIEWED
from bf_assets.defs.ranges import (
    BACKFILL_PARTITIONS_ENV,
    DEFAULT_BACKFILL_PARTITIONS,
    PARTITION,
    RANGE_END,
    RANGE_START,
    backfill_partitions_per_run,
)
from bf_assets_tests.test_ui_instance import shipped_instance

REPO = Path(__file__).resolve().parents[1]
KEYS = [f"jobs/2026-07-01__0{i}-00-00" for i in range(5)]


def test_the_partitions_per_run_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKFILL_PARTITIONS_ENV, raising=False)
    assert backfill_partitions_per_run() == DEFAULT_BACKFILL_PARTITIONS
    for raw, want in (("3", 3), ("0", 1), ("-4", 1), ("x", DEFAULT_BACKFILL_PARTITIONS)):
        monkeypatch.setenv(BACKFILL_PARTITIONS_ENV, raw)
        assert backfill_partitions_per_run() == want


def test_a_backfill_of_many_job_partitions_is_several_bounded_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BACKFILL_PARTITIONS_ENV, "2")  # the code server inherits it
    monkeypatch.setenv("BF_PROJECT_DIR", str(tmp_path))
    instance = shipped_instance(tmp_path / "home")
    try:
        instance.add_dynamic_partitions("trial_jobs", KEYS)
        target = ModuleTarget("bf_assets.definitions", "defs", str(REPO), "bf-assets")
        with create_test_daemon_workspace_context(target, instance) as context:
            graph = context.create_request_context().asset_graph
            backfill = PartitionBackfill.from_asset_partitions(
                backfill_id="bounded",
                asset_graph=graph,
                partition_names=KEYS,
                asset_selection=[dg.AssetKey("raw_trials"), *map(dg.AssetKey, REVIEWED)],
                backfill_timestamp=time.time(),
                tags={},
                dynamic_partitions_store=instance,
                all_partitions=False,
                title=None,
                description=None,
                run_config=None,
            )
            instance.add_backfill(backfill)
            errors = list(execute_backfill_iteration(context, logging.getLogger(__name__)))
        assert [e for e in errors if e is not None] == []
        runs = instance.get_runs()
        covered = sorted(
            (
                r.tags.get(RANGE_START) or r.tags[PARTITION],
                r.tags.get(RANGE_END) or r.tags[PARTITION],
            )
            for r in runs
        )
        # five job partitions, two a run: three runs, together every partition once
        assert covered == [(KEYS[0], KEYS[1]), (KEYS[2], KEYS[3]), (KEYS[4], KEYS[4])]
        assert {r.tags.get("dagster/backfill") for r in runs} == {"bounded"}
    finally:
        instance.dispose()
