"""A run's events on the project-local instance (the shipped ``dagster.yaml``, SQLite files
under ``$DAGSTER_HOME``): written by a run worker, read and watched live by another process,
as the webserver does while a run goes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import dagster as dg
    import bf_assets.definitions  # what a run worker loads before it writes events
    inst = dg.DagsterInstance.get()
    run = inst.get_run_by_id(sys.argv[1])
    for i in range(int(sys.argv[2])):
        inst.report_engine_event(f"event {i}", run)
    Path(sys.argv[3]).write_text("written")
    deadline = time.monotonic() + 120
    while not Path(sys.argv[4]).exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # alive, holding the run's database, until the reader has seen it all
    """
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Dagster instance home with the shipped ``dagster.yaml``, as ``DAGSTER_HOME``."""
    from bf_assets.defaults import default_file

    h = tmp_path / "home"
    h.mkdir()
    (h / "dagster.yaml").write_bytes(default_file("dagster.yaml"))
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    return h


def _text(entry: dg.EventLogEntry) -> str:
    return entry.dagster_event.message or "" if entry.dagster_event else entry.user_message


def _writer(home: Path, run_id: str, n: int, tmp: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, run_id, str(n), str(tmp / "written"), str(tmp / "stop")],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the writer did not finish"
        time.sleep(0.1)


def test_a_run_workers_events_are_read_and_watched_live_by_another_process(
    home: Path, tmp_path: Path
) -> None:
    """What the webserver does while a run worker writes: it reads every event, and its
    run-log watcher is woken for each one while the run is still going, not only when it
    ends."""
    with dg.DagsterInstance.get() as inst:
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
        seen: list[str] = []
        got_all = threading.Event()

        def on_event(entry: dg.EventLogEntry, _cursor: str) -> None:
            seen.append(_text(entry))
            if sum(1 for m in seen if m.startswith("event ")) >= 20:
                got_all.set()

        inst.event_log_storage.watch(run.run_id, None, on_event)
        proc = _writer(home, run.run_id, 20, tmp_path)
        try:
            _wait(tmp_path / "written", proc)
            logs = [_text(e) for e in inst.all_logs(run.run_id)]
            assert [m for m in logs if m.startswith("event ")] == [f"event {i}" for i in range(20)]
            got_all.wait(60)  # the writer is still alive and holds the database
            assert got_all.is_set(), f"the watcher saw {seen}"
            assert proc.poll() is None
        finally:
            (tmp_path / "stop").write_text("")
            proc.wait(120)
            inst.event_log_storage.end_watch(run.run_id, on_event)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    with dg.DagsterInstance.get() as again:  # and they stay: a new process reads them all
        logs = [_text(e) for e in again.all_logs(run.run_id)]
        assert [m for m in logs if m.startswith("event ")] == [f"event {i}" for i in range(20)]
