"""The shipped instance's storage: Dagster's SQLite files in WAL mode, readable and watchable
by other processes while a run writes, checkpointed when the writer exits."""

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

from bf_assets.defaults import default_file
from bf_assets.defs.storage import (
    LocalSqliteStorage,
    WalSqliteEventLogStorage,
    release_keepers,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    (h / "dagster.yaml").write_bytes(default_file("dagster.yaml"))
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    return h


def _text(entry: dg.EventLogEntry) -> str:
    return entry.dagster_event.message or "" if entry.dagster_event else entry.user_message


def _mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    finally:
        conn.close()


WRITER = textwrap.dedent(
    """
    import sys
    import dagster as dg
    inst = dg.DagsterInstance.get()
    run = inst.get_run_by_id(sys.argv[1])
    for i in range(int(sys.argv[2])):
        inst.report_engine_event(f"event {i}", run)
    """
)


def test_shipped_instance_uses_wal_storage(home: Path) -> None:
    with dg.DagsterInstance.get() as inst:
        assert inst.get_ref().storage_data.class_name == LocalSqliteStorage.__name__
        assert isinstance(inst.event_log_storage, WalSqliteEventLogStorage)
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
        inst.report_engine_event("hello", run)
        shards = {p.name for p in (home / "history" / "runs").glob("*.db")}
        assert f"{run.run_id}.db" in shards and "index.db" in shards
        for db in [home / "history" / "runs.db", home / "history" / "runs" / "index.db"]:
            assert _mode(db) == "wal", db
        assert _mode(home / "history" / "runs" / f"{run.run_id}.db") == "wal"
        logs = [_text(e) for e in inst.all_logs(run.run_id)]
        assert "hello" in logs


def test_other_process_reads_and_watches_events(home: Path) -> None:
    """What the webserver does while a run worker writes: read every event at once, and be
    woken for new ones (the run's log view)."""
    with dg.DagsterInstance.get() as inst:
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
        seen: list[str] = []
        got_all = threading.Event()

        def on_event(entry: dg.EventLogEntry, _cursor: str) -> None:
            seen.append(_text(entry))
            if sum(1 for m in seen if m.startswith("event ")) >= 20:
                got_all.set()

        inst.event_log_storage.watch(run.run_id, None, on_event)
        try:
            proc = subprocess.run(
                [sys.executable, "-c", WRITER, run.run_id, "20"],
                env={**os.environ},
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr
            # the writer has exited: every event is in the database for any reader
            logs = [_text(e) for e in inst.all_logs(run.run_id)]
            assert [m for m in logs if m.startswith("event ")] == [f"event {i}" for i in range(20)]
            deadline = time.monotonic() + 60
            while not got_all.is_set() and time.monotonic() < deadline:
                got_all.wait(0.5)
            assert got_all.is_set(), f"the watcher saw {seen}"
        finally:
            inst.event_log_storage.end_watch(run.run_id, on_event)
        # once every process has let go of the run's database (the writer at its exit, this
        # one now), the log is folded into the database file
        release_keepers()
        wal = home / "history" / "runs" / f"{run.run_id}.db-wal"
        assert not wal.exists() or wal.stat().st_size == 0


def test_existing_home_keeps_its_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home made with Dagster's default SQLite storage opens with the shipped storage and
    keeps its runs (same files, same layout)."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    (h / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.get() as inst:
        run = inst.create_run_for_job(dg.GraphDefinition(name="g", node_defs=[]).to_job())
        inst.report_engine_event("before", run)
    (h / "dagster.yaml").write_bytes(default_file("dagster.yaml"))
    with dg.DagsterInstance.get() as inst:
        assert inst.get_ref().storage_data.class_name == LocalSqliteStorage.__name__
        assert inst.get_run_by_id(run.run_id) is not None
        inst.report_engine_event("after", inst.get_run_by_id(run.run_id))
        messages = [_text(e) for e in inst.all_logs(run.run_id)]
        assert "before" in messages and "after" in messages
