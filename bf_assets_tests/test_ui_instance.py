"""The shipped instance settings (``bf_assets/defaults/dagster.yaml``) that keep the UI path
from idling, loaded as a real ``DagsterInstance`` and driven through the run-queue daemon.

What a user depends on: a run the UI, a backfill or the sensor puts in the queue is launched
at the daemon's first look (once a second), several at once in worker threads, and still
only one release at a time.  ``tools/ui_materialize.py`` times the whole "Materialize all"
path in a browser; here nothing is timed, the queue is stepped one daemon iteration at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.instance.ref import InstanceRef
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.test_utils import (
    MockedRunLauncher,
    create_run_for_test,
    create_test_daemon_workspace_context,
)
from dagster._core.workspace.load_target import EmptyWorkspaceTarget
from dagster._daemon.controller import create_daemon_of_type, create_daemons_from_instance
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import (
    QueuedRunCoordinatorDaemon,
)

from bf_assets.defaults import default_file

MOCK_LAUNCHER = {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"}


def queued(inst: dg.DagsterInstance, job: str, tags: dict[str, str]) -> dg.DagsterRun:
    """A run of ``job`` of the ``bf_assets`` code location waiting in the queue."""
    repo = RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("bf_assets"), "__repository__")
    return create_run_for_test(
        inst,
        job_name=job,
        status=dg.DagsterRunStatus.QUEUED,
        tags=tags,
        remote_job_origin=RemoteJobOrigin(repo, job),
    )


def shipped_instance(home: Path, **overrides: object) -> dg.DagsterInstance:
    """An instance on ``home`` whose ``dagster.yaml`` is the shipped file (plus overrides)."""
    home.mkdir(parents=True, exist_ok=True)
    text = default_file("dagster.yaml").decode()
    if overrides:
        text += yaml.safe_dump(dict(overrides))
    (home / "dagster.yaml").write_text(text)
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    inst = shipped_instance(tmp_path / "home")
    yield inst
    inst.dispose()


def test_the_shipped_config_loads_with_a_fast_threaded_queue(
    instance: dg.DagsterInstance,
) -> None:
    """Every option name is one Dagster 1.13 accepts (loading validates the file against the
    instance schema), and the values that keep runs from waiting are the ones in force."""
    rc = instance.run_coordinator
    assert isinstance(rc, dg.QueuedRunCoordinator)
    assert rc.dequeue_interval_seconds == 1  # Dagster's default is 5
    assert rc.dequeue_use_threads is True
    assert rc.dequeue_num_workers == 4
    queue = instance.get_concurrency_config().run_queue_config
    assert queue is not None
    assert queue.max_concurrent_runs == 4
    assert list(queue.tag_concurrency_limits) == [{"key": "release", "limit": 1}]
    assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
    assert instance.get_backfill_settings() == {
        "use_threads": True,
        "num_workers": 2,
        "num_submit_workers": 2,
    }
    assert instance.get_sensor_settings()["use_threads"] is True
    assert instance.get_scheduler_settings()["use_threads"] is True
    assert instance.telemetry_enabled is False


def test_the_daemon_polls_the_queue_every_second(instance: dg.DagsterInstance) -> None:
    """The daemon ``dg dev`` starts builds its run-queue loop from the instance setting."""
    daemons = {d.daemon_type(): d for d in create_daemons_from_instance(instance)}
    queue = daemons["QUEUED_RUN_COORDINATOR"]
    assert isinstance(queue, QueuedRunCoordinatorDaemon)
    assert queue.interval_seconds == 1
    assert {"BACKFILL", "SENSOR", "SCHEDULER"} <= daemons.keys()


def test_one_iteration_launches_every_runnable_run_and_one_release(tmp_path: Path) -> None:
    """Three runs in the queue (an ingest run and two releases): the daemon's first iteration
    launches the ingest run and one release, in its worker threads; the second release stays
    queued (the ``release`` tag limit) until the first has finished, and goes at the next
    iteration.  Nothing waits an iteration longer than the limits require."""
    inst = shipped_instance(tmp_path / "home", run_launcher=MOCK_LAUNCHER)
    try:
        ingest = queued(inst, "ingest_job", {})
        first, second = (queued(inst, "release_job", {"release": "publish"}) for _ in range(2))
        daemon = create_daemon_of_type("QUEUED_RUN_COORDINATOR", inst)
        assert isinstance(daemon, QueuedRunCoordinatorDaemon)
        launcher = inst.run_launcher
        assert isinstance(launcher, MockedRunLauncher)

        def status(run: dg.DagsterRun) -> dg.DagsterRunStatus:
            got = inst.get_run_by_id(run.run_id)
            assert got is not None
            return got.status

        with (
            daemon,
            create_test_daemon_workspace_context(EmptyWorkspaceTarget(), inst) as context,
        ):
            list(daemon.run_iteration(context))
            launched = {r.run_id for r in launcher.queue()}
            assert ingest.run_id in launched
            assert len(launched & {first.run_id, second.run_id}) == 1
            assert daemon._executor is not None  # dequeue_use_threads: launched in threads
            running = first if first.run_id in launched else second
            waiting = second if running is first else first
            assert status(waiting) == dg.DagsterRunStatus.QUEUED

            list(daemon.run_iteration(context))  # the release still runs: nothing more goes
            assert status(waiting) == dg.DagsterRunStatus.QUEUED

            inst.report_run_canceled(status_run(inst, running))  # the first release ends
            list(daemon.run_iteration(context))
            assert waiting.run_id in {r.run_id for r in launcher.queue()}
            assert status(waiting) == dg.DagsterRunStatus.STARTING
    finally:
        inst.dispose()


def status_run(inst: dg.DagsterInstance, run: dg.DagsterRun) -> dg.DagsterRun:
    got = inst.get_run_by_id(run.run_id)
    assert got is not None
    return got
