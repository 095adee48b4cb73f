"""The project-local instance's SQLite files in WAL mode (``bf_assets.defs.storage``):
written without an fsync per event, readable and watchable by other processes while a run
writes, folded back into the database files when the writer exits."""

from __future__ import annotations

import os
import sqlite3
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
def home(instance_home: Path) -> Path:
    return instance_home


def _text(entry: dg.EventLogEntry) -> str:
    return entry.dagster_event.message or "" if entry.dagster_event else entry.user_message


def _mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    finally:
        conn.close()


def _writer(home: Path, run_id: str, n: int, tmp: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, run_id, str(n), str(tmp / "written"), str(tmp / "stop")],
        env={**os.environ, "DAGSTER_HOME": str(home), **env},
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


def test_a_run_worker_writes_the_instance_in_wal_mode_and_a_watcher_sees_it_live(
    home: Path, tmp_path: Path
) -> None:
    """What the webserver does while a run worker writes: Dagster's own (untuned) storage
    reads every event and its run-log watcher is woken for each one while the run is still
    going, not only when it ends."""
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
            assert _mode(home / "history" / "runs" / f"{run.run_id}.db") == "wal"
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


def _holds(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux)."""
    fds = Path(f"/proc/{pid}/fd")
    target = os.path.realpath(path)
    for fd in fds.iterdir():
        try:
            if os.path.realpath(fd.readlink()) == target:
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("setting", ["1", "0"])
def test_the_writer_keeps_the_log_open_unless_turned_off(
    home: Path, tmp_path: Path, setting: str
) -> None:
    """Tuned, the writer keeps one idle connection on the run's database after its commits
    (so they do not each fold the log back with its syncs); ``BF_SQLITE_WAL=0`` leaves
    Dagster's own behaviour: nothing stays open."""
    with dg.DagsterInstance.get() as inst:
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
    proc = _writer(home, run.run_id, 3, tmp_path, BF_SQLITE_WAL=setting)
    try:
        _wait(tmp_path / "written", proc)
        held = _holds(proc.pid, home / "history" / "runs" / f"{run.run_id}.db")
    finally:
        (tmp_path / "stop").write_text("")
        proc.wait(120)
    assert proc.returncode == 0
    assert held is (setting == "1")


def test_the_writer_folds_the_log_back_when_it_exits(home: Path, tmp_path: Path) -> None:
    with dg.DagsterInstance.get() as inst:
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
    (tmp_path / "stop").write_text("")  # exit right after writing
    proc = _writer(home, run.run_id, 5, tmp_path)
    proc.wait(300)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    wal = home / "history" / "runs" / f"{run.run_id}.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    conn = sqlite3.connect(home / "history" / "runs" / f"{run.run_id}.db")
    try:
        n = conn.execute("SELECT count(*) FROM event_logs").fetchone()[0]
    finally:
        conn.close()
    assert n >= 5


FORK_CHECK = textwrap.dedent(
    """
    import os, sys, threading
    import sqlalchemy as sa
    from bf_assets.defs import storage

    home = sys.argv[1]
    storage.tune_sqlite_under(home)
    engine = sa.create_engine(f"sqlite:///{home}/x.db")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))
        conn.execute(sa.text("INSERT INTO t VALUES (1)"))
    engine.dispose()
    assert any(t.name == storage.FLUSHER_NAME for t in threading.enumerate())
    main = threading.main_thread()
    fork_safe = all(t is main or getattr(t, "fork_safe", False) for t in threading.enumerate())
    assert fork_safe, [t.name for t in threading.enumerate()]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: reports how many of the parent's connections it kept
        os.write(w, f"{os.getpid()} {len(storage._keepers)}".encode())
        os._exit(0)
    os.close(w)
    child, kept = map(int, os.read(r, 64).split())
    os.waitpid(pid, 0)
    assert child != os.getpid() and kept == 0, (child, kept)  # the child forgot the parent's
    assert len(storage._keepers) == 1  # the parent's connection is intact
    print("ok")
    """
)


def test_the_checkpointer_thread_leaves_forking_safe(tmp_path: Path) -> None:
    """The review forks workers in the release process after Dagster has written events:
    the instance's checkpointer thread must not turn that off, and a child forked while it
    runs starts clean (in a fresh interpreter: no other test's threads)."""
    home = tmp_path / "tuned"
    home.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", FORK_CHECK, str(home)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert _mode(home / "x.db") == "wal"
