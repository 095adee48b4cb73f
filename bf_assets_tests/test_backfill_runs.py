"""A backfill of the ingest assets over many job partitions ("Materialize all" in the UI) is
several runs of at most ``BF_BACKFILL_PARTITIONS_PER_RUN`` partitions each, not one run
holding every trial of the corpus.

Dagster's own backfill iteration plans the runs from the definitions (loaded in this process,
as a code server loads them); the shipped instance queues them (no run starts here), and the
runs' partition tags say what each would ingest.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
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


def test_the_partitions_per_run_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKFILL_PARTITIONS_ENV, raising=False)
    assert backfill_partitions_per_run() == DEFAULT_BACKFILL_PARTITIONS
    for raw, want in (("3", 3), ("0", 1), ("-4", 1), ("x", DEFAULT_BACKFILL_PARTITIONS)):
        monkeypatch.setenv(BACKFILL_PARTITIONS_ENV, raw)
        assert backfill_partitions_per_run() == want


def test_a_backfill_of_many_job_partitions_is_several_bounded_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BF_PROJECT_DIR", str(tmp_path))
    instance = shipped_instance(tmp_path / "home")
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(
            module_name="bf_assets.definitions", attribute="defs", working_directory=str(REPO)
        ),
        location_name="bf-assets",
    )
    try:
        with create_test_daemon_workspace_context(
            InProcessWorkspaceLoadTarget(origin), instance
        ) as context:
            graph = context.create_request_context().asset_graph
            # the policy of the definitions as loaded (the setting read at their import)
            per_run = graph.get(dg.AssetKey("raw_trials")).backfill_policy.max_partitions_per_run
            assert per_run == backfill_partitions_per_run()
            keys = [f"jobs/job-{i:03d}" for i in range(2 * per_run + 3)]
            instance.add_dynamic_partitions("trial_jobs", keys)
            backfill = PartitionBackfill.from_asset_partitions(
                backfill_id="bounded",
                asset_graph=graph,
                partition_names=keys,
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
        # 2k + 3 job partitions, k a run: three runs, together every partition once
        want = [(keys[0], keys[per_run - 1]), (keys[per_run], keys[2 * per_run - 1])]
        assert covered == [*want, (keys[2 * per_run], keys[-1])]
        assert {r.tags.get("dagster/backfill") for r in runs} == {"bounded"}
    finally:
        instance.dispose()
