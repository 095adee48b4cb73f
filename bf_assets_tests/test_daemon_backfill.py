"""``bf-assets daemon`` and ``bf-assets ui``: Dagster's daemons with the backfill loop
looking every second instead of every 30 s, and the two UI processes ended together.

What a user depends on: "Materialize all" (an asset backfill) is picked up within a second
of the click and of each stage's end, every other daemon is Dagster's own, a bad flag is
said before anything starts, and stopping the UI stops both of its processes.  Nothing here
is timed: the loop's sleeps are recorded, not waited for.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import EmptyWorkspaceTarget
from dagster._daemon.controller import create_daemons_from_instance
from dagster._daemon.daemon import BackfillDaemon, SpanMarker
from prockit import alive

from bf_assets.cli import ui
from bf_assets.cli.main import main
from bf_assets.defs import daemon as bf_daemon
from bf_assets_tests.test_ui_instance import shipped_instance

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def instance(tmp_path: Path):
    inst = shipped_instance(tmp_path / "home")
    yield inst
    inst.dispose()


def test_the_daemons_are_dagsters_own_but_the_backfill_loop(
    instance: dg.DagsterInstance,
) -> None:
    ours = list(bf_daemon.daemons_of(instance, 0.5))
    theirs = list(create_daemons_from_instance(instance))
    try:
        assert [d.daemon_type() for d in ours] == [d.daemon_type() for d in theirs]
        for mine, dagsters in zip(ours, theirs, strict=True):
            if mine.daemon_type() == "BACKFILL":
                assert isinstance(mine, bf_daemon.BackfillEvery)
                assert mine.interval_seconds == 0.5
                # the instance's backfill settings (threads) are in force
                assert mine._threadpool_executor is not None
                assert mine._submit_threadpool_executor is not None
            else:
                assert type(mine) is type(dagsters)
    finally:
        for d in [*ours, *theirs]:
            if isinstance(d, BackfillDaemon):
                d.__exit__(None, None, None)


class _RecordingEvent(threading.Event):
    """A shutdown event whose waits are recorded and return at once; set after ``n``."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.waits: list[float] = []
        self.n = n

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        if len(self.waits) >= self.n:
            self.set()
        return self.is_set()


def _looped(
    instance: dg.DagsterInstance,
    daemon: bf_daemon.BackfillEvery,
    event: threading.Event,
    look: Callable[..., Iterator[None]],
) -> list[object]:
    """What the daemon's loop yields until ``event`` is set, with ``look`` in place of
    Dagster's backfill iteration."""
    with (
        daemon,
        create_test_daemon_workspace_context(EmptyWorkspaceTarget(), instance) as context,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setattr(bf_daemon, "execute_backfill_iteration", look)
        return list(daemon.core_loop(context, event))


def test_the_backfill_loop_looks_at_the_backfills_every_interval(
    instance: dg.DagsterInstance,
) -> None:
    """A backfill the UI requested is evaluated by the next look, and between looks the
    loop sleeps the rest of its interval, never Dagster's 30 s."""
    daemon = bf_daemon.BackfillEvery(dict(instance.get_backfill_settings()), 0.75)
    event = _RecordingEvent(3)
    looks: list[int] = []

    def count(*args: object, **kwargs: object):
        looks.append(len(event.waits))
        yield None

    spans = _looped(instance, daemon, event, count)
    assert looks == [0, 1, 2]  # one look before each sleep
    assert len(event.waits) == 3 and all(0 <= w <= 0.75 for w in event.waits)
    assert spans.count(SpanMarker.START_SPAN) == spans.count(SpanMarker.END_SPAN) == 3


def test_an_error_in_a_look_is_reported_and_the_loop_goes_on(
    instance: dg.DagsterInstance,
) -> None:
    daemon = bf_daemon.BackfillEvery(dict(instance.get_backfill_settings()), 0.1)
    event = _RecordingEvent(2)

    def boom(*args: object, **kwargs: object):
        raise RuntimeError("storage went away")
        yield None  # pragma: no cover

    out = _looped(instance, daemon, event, boom)
    errors = [x for x in out if x is not None and not isinstance(x, SpanMarker)]
    assert len(errors) == 2 and "storage went away" in str(errors[0])


def test_a_real_look_evaluates_nothing_when_nothing_is_requested(
    instance: dg.DagsterInstance,
) -> None:
    """Dagster's own iteration on an empty instance: no error, one look a loop."""
    daemon = bf_daemon.BackfillEvery(dict(instance.get_backfill_settings()), 0.1)
    event = _RecordingEvent(2)
    with (
        daemon,
        create_test_daemon_workspace_context(EmptyWorkspaceTarget(), instance) as context,
    ):
        out = list(daemon.core_loop(context, event))
    assert [x for x in out if x is not None and not isinstance(x, SpanMarker)] == []


@pytest.mark.parametrize(
    ("given", "env", "expected"),
    [(None, None, 1.0), ("2.5", None, 2.5), (None, "0.25", 0.25), ("3", "9", 3.0)],
)
def test_the_interval_comes_from_the_flag_then_the_environment(
    given: str | None, env: str | None, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv(bf_daemon.ENV_BACKFILL_INTERVAL, raising=False)
    else:
        monkeypatch.setenv(bf_daemon.ENV_BACKFILL_INTERVAL, env)
    assert bf_daemon.backfill_interval(given) == expected


@pytest.mark.parametrize("bad", ["soon", "0", "-1", "nan", "7200"])
def test_a_bad_interval_is_a_usage_error_before_anything_starts(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["daemon", "--backfill-interval", bad]) == 2
    err = capsys.readouterr().err
    assert "--backfill-interval" in err and repr(bad) in err


def test_a_missing_workspace_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["daemon", "-w", str(tmp_path / "nope.yaml")]) == 2
    assert "workspace file not found" in capsys.readouterr().err


def test_the_ui_needs_an_instance_folder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["ui", "-w", str(REPO / "workspace.yaml")]) == 2
    assert "DAGSTER_HOME" in capsys.readouterr().err


def test_the_ui_makes_the_instance_storage_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a new home the webserver and the daemon would both create and stamp the same
    SQLite databases at once (two schema versions in ``runs.db``, and the code location then
    fails to load): the storage is made once, in one process, before either starts."""
    import sqlite3

    from bf_assets.cli import ui

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    seen: list[list[str]] = []

    def started(commands: dict[str, list[str]], env: dict[str, str]) -> int:
        runs = home / "history" / "runs.db"
        with sqlite3.connect(runs) as db:
            seen.append([r[0] for r in db.execute("select version_num from alembic_version")])
        return 0

    monkeypatch.setattr(ui, "supervise", started)
    assert main(["ui", "-w", str(REPO / "workspace.yaml")]) == 0
    assert len(seen) == 1 and len(seen[0]) == 1  # one schema version, before the children
    # a home that cannot be opened stops the UI before anything starts
    (home / "dagster.yaml").write_text("storage: {nonsense: 1}\n")
    seen.clear()
    assert main(["ui", "-w", str(REPO / "workspace.yaml")]) != 0
    assert seen == []


def _sleeper(pidfile: Path) -> list[str]:
    code = f"import os,time; open({str(pidfile)!r},'w').write(str(os.getpid())); time.sleep(600)"
    return [sys.executable, "-c", code]


def _wait_for(path: Path) -> int:
    for _ in range(400):
        if path.is_file() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")


def test_when_one_process_ends_the_other_is_stopped(tmp_path: Path) -> None:
    """The webserver dying (exit 3) must not leave a daemon launching runs unseen."""
    pidfile = tmp_path / "sleeper.pid"
    commands = {
        "daemon": _sleeper(pidfile),
        "webserver": [sys.executable, "-c", f"import os,time\nwhile not os.path.exists({str(pidfile)!r}): time.sleep(0.05)\ntime.sleep(0.2)\nraise SystemExit(3)"],
    }  # fmt: skip
    code = ui.supervise(commands, dict(os.environ))
    assert code == 3
    assert not alive(_wait_for(pidfile))


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_stopping_the_ui_stops_both_processes(how: str, tmp_path: Path) -> None:
    """``kill`` of ``bf-assets ui`` (or Ctrl-C) ends the webserver and the daemon too; so
    does SIGKILL, which leaves no handler to run (the kernel ends the children with it)."""
    if how == "sigkill" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    script = tmp_path / "run.py"
    a, b = tmp_path / "a.pid", tmp_path / "b.pid"
    script.write_text(
        "import os, sys\n"
        "from bf_assets.cli import ui\n"
        f"cmds = {{'webserver': {_sleeper(a)!r}, 'daemon': {_sleeper(b)!r}}}\n"
        "sys.exit(ui.supervise(cmds, dict(os.environ)))\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], cwd=REPO)
    pids = [_wait_for(a), _wait_for(b)]
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    else:
        proc.kill()
        proc.wait(timeout=60)
    for _ in range(400):
        if not any(alive(p) for p in pids):
            break
        time.sleep(0.05)
    assert not any(alive(p) for p in pids)
