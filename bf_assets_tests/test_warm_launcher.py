"""``WarmRunLauncher``: a run starts in a process forked from a worker that imported Dagster
and the code location once, and falls back to Dagster's own launcher whenever that worker
cannot serve it.

What a user depends on: a run launched from the UI executes its real job and reaches
``SUCCESS`` (or ``FAILURE``) like any run; an edited definitions file is never run stale;
a location the launcher is not told about, or a warm worker that fails to import, still
gets its runs launched; cancelling a run ends it as canceled.  Real instances, a real code
location (a module written under ``tmp_path``) and real processes; nothing is timed.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.launcher.base import LaunchRunContext
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import ModuleTarget

from bf_assets.defs import launcher as warm
from bf_assets_tests.test_ui_instance import shipped_instance

TINY = """
import os
import time
from pathlib import Path

import dagster as dg

MARK = {mark!r}


@dg.op
def write_pid() -> None:
    Path(os.environ["TINY_OUT"]).write_text(f"{{MARK}} {{os.getpid()}} {{os.getppid()}}")


@dg.op
def wait_long() -> None:
    Path(os.environ["TINY_OUT"]).write_text("waiting")
    time.sleep(300)


@dg.job(executor_def=dg.in_process_executor)
def tiny_job():
    write_pid()


@dg.job(executor_def=dg.in_process_executor)
def slow_job():
    wait_long()


defs = dg.Definitions(jobs=[tiny_job, slow_job])
"""


def write_module(folder: Path, name: str, mark: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(TINY.format(mark=mark)))
    return path


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    code = tmp_path / "code"
    code.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(code), *sys.path]))
    monkeypatch.setenv("TINY_OUT", str(tmp_path / "out.txt"))
    monkeypatch.syspath_prepend(str(code))
    return code


@pytest.fixture
def instance(tmp_path: Path, env: Path) -> Iterator[dg.DagsterInstance]:
    run_launcher = {
        "module": "bf_assets.defs.launcher",
        "class": "WarmRunLauncher",
        "config": {"locations": {"tiny": "tiny_defs"}},
    }
    inst = shipped_instance(tmp_path / "home", run_launcher=run_launcher)
    yield inst
    inst.dispose()


def launch(inst: dg.DagsterInstance, code: Path, job: str, location: str = "tiny") -> str:
    """Create a run of ``job`` as the UI does (origins from the code server) and launch it
    through the instance's run launcher; its id."""
    target = ModuleTarget(
        module_name="tiny_defs", attribute=None, working_directory=str(code),
        location_name=location,
    )  # fmt: skip
    with WorkspaceProcessContext(inst, target) as ctx:
        request = ctx.create_request_context()
        remote = request.get_code_location(location).get_repository("__repository__")
        remote_job = remote.get_full_job(job)
        import tiny_defs  # the test's own copy, for the run's snapshot

        run = inst.create_run_for_job(
            job_def=getattr(tiny_defs, job),
            remote_job_origin=remote_job.get_remote_origin(),
            job_code_origin=remote_job.get_python_origin(),
            status=dg.DagsterRunStatus.STARTING,
        )
        inst.run_launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=request))
        return run.run_id


def wait_end(inst: dg.DagsterInstance, run_id: str, seconds: float = 180) -> dg.DagsterRun:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = inst.get_run_by_id(run_id)
        assert run is not None
        if run.is_finished:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def engine_messages(inst: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.message for e in inst.all_logs(run_id) if e.message]


def test_a_run_executes_in_a_process_forked_from_the_warm_worker(
    instance: dg.DagsterInstance, env: Path, tmp_path: Path
) -> None:
    write_module(env, "tiny_defs", "v1")
    launcher = instance.run_launcher
    assert isinstance(launcher, warm.WarmRunLauncher)
    launcher.warm_up()
    worker = launcher._workers["tiny"]
    assert worker.ready.wait(120) and worker.failure is None
    run_id = launch(instance, env, "tiny_job")
    run = wait_end(instance, run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS
    mark, pid, parent = (tmp_path / "out.txt").read_text().split()
    assert mark == "v1"
    assert int(parent) == worker.proc.pid  # forked by the warm worker, no new interpreter
    assert run.tags[warm.PID_TAG] == pid
    assert any("forked from a warm worker" in m for m in engine_messages(instance, run_id))
    # a second run is forked by the same worker
    second = wait_end(instance, launch(instance, env, "tiny_job"))
    assert second.status == dg.DagsterRunStatus.SUCCESS
    assert int((tmp_path / "out.txt").read_text().split()[2]) == worker.proc.pid


def test_an_edited_definitions_file_is_never_run_from_the_stale_import(
    instance: dg.DagsterInstance, env: Path, tmp_path: Path
) -> None:
    module = write_module(env, "tiny_defs", "v1")
    launcher = instance.run_launcher
    assert isinstance(launcher, warm.WarmRunLauncher)
    launcher.warm_up()
    first = launcher._workers["tiny"]
    assert first.ready.wait(120)
    write_module(env, "tiny_defs", "v2")  # edited, as before "Reload definitions"
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    sys.modules.pop("tiny_defs", None)
    run = wait_end(instance, launch(instance, env, "tiny_job"))
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert (tmp_path / "out.txt").read_text().split()[0] == "v2"
    assert warm.PID_TAG not in run.tags  # launched the default way, through the code server
    # and a fresh warm worker, on the new code, takes the next run
    again = launcher._workers["tiny"]
    assert again is not first and again.ready.wait(120) and again.failure is None
    run = wait_end(instance, launch(instance, env, "tiny_job"))
    assert run.status == dg.DagsterRunStatus.SUCCESS and warm.PID_TAG in run.tags
    assert (tmp_path / "out.txt").read_text().split()[0] == "v2"


def test_a_location_it_is_not_told_about_goes_the_default_way(
    instance: dg.DagsterInstance, env: Path, tmp_path: Path
) -> None:
    write_module(env, "tiny_defs", "v1")
    run = wait_end(instance, launch(instance, env, "tiny_job", location="elsewhere"))
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert warm.PID_TAG not in run.tags
    assert instance.run_launcher._workers == {}  # no warm worker was started for it


def test_a_warm_worker_that_cannot_import_falls_back_to_the_default_launcher(
    tmp_path: Path, env: Path
) -> None:
    write_module(env, "tiny_defs", "v1")
    (env / "broken_defs.py").write_text("raise RuntimeError('the definitions do not load')\n")
    run_launcher = {
        "module": "bf_assets.defs.launcher",
        "class": "WarmRunLauncher",
        "config": {"locations": {"tiny": "broken_defs"}},
    }
    inst = shipped_instance(tmp_path / "home2", run_launcher=run_launcher)
    try:
        run = wait_end(inst, launch(inst, env, "tiny_job"))
        assert run.status == dg.DagsterRunStatus.SUCCESS  # the code server's worker ran it
        assert warm.PID_TAG not in run.tags
        worker = inst.run_launcher._workers["tiny"]
        assert worker.failure is not None and "RuntimeError" in worker.failure
    finally:
        inst.dispose()


def test_terminating_a_warm_run_ends_it_as_canceled(
    instance: dg.DagsterInstance, env: Path, tmp_path: Path
) -> None:
    write_module(env, "tiny_defs", "v1")
    run_id = launch(instance, env, "slow_job")
    out = tmp_path / "out.txt"
    deadline = time.monotonic() + 120
    while not (out.is_file() and out.read_text() == "waiting"):
        assert time.monotonic() < deadline, "the slow op never started"
        time.sleep(0.2)
    assert instance.run_launcher.terminate(run_id) is True
    run = wait_end(instance, run_id)
    assert run.status == dg.DagsterRunStatus.CANCELED


def test_terminate_never_signals_a_process_that_is_not_a_warm_run_worker(
    instance: dg.DagsterInstance,
) -> None:
    run = instance.create_run_for_job(
        job_def=dg.JobDefinition(graph_def=dg.GraphDefinition(name="g", node_defs=[])),
        tags={warm.PID_TAG: str(os.getpid())},  # e.g. a pid reused by another process
    )
    assert instance.run_launcher.terminate(run.run_id) is False


def test_the_shipped_instance_uses_the_warm_launcher_for_bf_assets(tmp_path: Path) -> None:
    inst = shipped_instance(tmp_path / "home")
    try:
        launcher = inst.run_launcher
        assert isinstance(launcher, warm.WarmRunLauncher)
        assert launcher.locations == {"bf_assets": "bf_assets.definitions"}
    finally:
        inst.dispose()
