"""The project-local instance's storage: Dagster's SQLite storage with its databases in WAL mode.

Dagster's SQLite storages open a new connection for every event they write and commit it
alone; in SQLite's default rollback-journal mode every commit waits for the disk twice
(about 13 ms per ``fsync`` on this machine's disk: 20 ms an event, a few hundred events a
release).  ``LocalSqliteStorage`` is ``DagsterSqliteStorage`` (the same files under the same
``base_dir``: an existing home keeps its history) whose databases run with
``journal_mode=WAL`` and ``synchronous=NORMAL``: a commit appends to the write-ahead log
without waiting for the disk, readers (the webserver, the daemon) never block the writer,
and the database file is synced when the log is checkpointed.  An application crash loses
nothing; a power cut can lose the last commits, never the database: the right trade for a
project-local instance (production runs on PostgreSQL, ``deploy/README.md``).

The shipped ``dagster.yaml`` selects it (``storage: custom: module: bf_assets.defs.storage``).
The setting is applied to every SQLite connection opened under a registered ``base_dir``
(from any SQLAlchemy engine of the process: Dagster creates a new one per connection), and
nothing else; a database on which WAL cannot be enabled (a file system without shared
memory, another process holding it in exclusive mode) keeps its mode.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import threading
from collections import OrderedDict
from typing import Any

from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SqliteEventLogStorage,
    SqliteEventLogStorageWatchdog,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from sqlalchemy import event
from sqlalchemy.pool import Pool

_lock = threading.Lock()
_tuned_dirs: set[str] = set()
_listening = False
# One idle connection per recently written database keeps its write-ahead log open, so a
# connection closing after its commit is not the last one and does not checkpoint (two
# syncs) every time; the log is checkpointed when it grows (SQLite's auto-checkpoint), when
# a keeper is let go (least recently used first) and when the process exits.
KEEPERS = 16
_keepers: OrderedDict[str, sqlite3.Connection] = OrderedDict()


def tune_sqlite_under(base_dir: str) -> None:
    """Give every SQLite connection opened from now on under ``base_dir`` WAL mode and
    ``synchronous=NORMAL``."""
    global _listening
    path = os.path.realpath(base_dir).rstrip(os.sep) + os.sep
    with _lock:
        _tuned_dirs.add(path)
        if not _listening:
            event.listen(Pool, "connect", _on_connect)
            _listening = True


def is_tuned(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real.startswith(d) for d in tuple(_tuned_dirs))


def _on_connect(dbapi_conn: Any, _record: Any) -> None:
    if not isinstance(dbapi_conn, sqlite3.Connection) or not _tuned_dirs:
        return
    try:
        row = dbapi_conn.execute("PRAGMA database_list").fetchone()
        if not row or not row[2] or not is_tuned(row[2]):
            return
        mode = dbapi_conn.execute("PRAGMA journal_mode").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")
        _keep(row[2])
    except sqlite3.Error:
        return  # the database keeps its mode; Dagster's own busy handling applies


def _keep(path: str) -> None:
    with _lock:
        if path in _keepers:
            _keepers.move_to_end(path)
            return
        conn = sqlite3.connect(path, check_same_thread=False, timeout=15)
        # a connection joins the log (its shared-memory lock) only once it has read
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        _keepers[path] = conn
        while len(_keepers) > KEEPERS:
            _, old = _keepers.popitem(last=False)
            old.close()


@atexit.register
def release_keepers() -> None:
    """Close every idle connection (the last one to close checkpoints its database)."""
    with _lock:
        while _keepers:
            _, conn = _keepers.popitem(last=False)
            with contextlib.suppress(sqlite3.Error):
                conn.close()


class _WalWatchdog(SqliteEventLogStorageWatchdog):
    """Dagster's run-log watcher, woken by its database's write-ahead log too (in WAL mode a
    commit changes ``<run>.db-wal``; the ``.db`` file changes only at a checkpoint)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._patterns = [self._log_path, self._log_path + "-wal"]

    def on_modified(self, event: Any) -> None:
        self._process_log()

    def on_created(self, event: Any) -> None:
        self._process_log()


class WalSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log whose watchers follow the write-ahead log."""

    def watch(self, run_id: str, cursor: str | None, callback: Any) -> None:
        from watchdog.observers import Observer

        if not self._obs:
            self._obs = Observer()
            self._obs.start()
        handler = _WalWatchdog(self, run_id, callback, cursor)
        self._watchers[run_id][callback] = (
            handler,
            self._obs.schedule(handler, self._base_dir, recursive=True),
        )


class LocalSqliteStorage(DagsterSqliteStorage):
    """``DagsterSqliteStorage`` with WAL-mode databases (see the module docstring)."""

    def __init__(self, base_dir: str, inst_data: Any = None) -> None:
        # DagsterSqliteStorage.__init__, with the event log that follows the write-ahead log
        tune_sqlite_under(base_dir)
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = WalSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: Any, config_value: Any
    ) -> LocalSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
