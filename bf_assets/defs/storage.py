"""Faster commits for a project-local (SQLite) Dagster instance: WAL mode, no fsync per event.

Dagster's SQLite storages open a new connection for every event they write and commit it
alone; in SQLite's default rollback-journal mode each commit waits for the disk (about 13 ms
per ``fsync`` on this machine: 20 ms an event, hundreds of events a release, tens of
thousands at 100,000 trials).  Dagster already puts its event-log databases in WAL mode, but
with ``synchronous=FULL`` and a connection that is the last one open, so every commit syncs
the log and folds it back into the database file (about 9 ``fdatasync`` calls an event).
:func:`tune_instance_storage` makes every SQLite connection this process opens on a database
under the instance home (``$DAGSTER_HOME``) use ``journal_mode=WAL`` (the run and schedule
databases too) and ``synchronous=NORMAL``: a commit appends to the write-ahead log without
waiting for the disk, and readers (the webserver, the daemon) never block the writer.  One
idle connection per recently written database keeps its log open, so the connection that
closes after each commit is not the last one and does not fold the log back (a checkpoint,
with its syncs) every time.  A background thread checkpoints each database written in the
last :data:`CHECKPOINT_SECONDS` (a connection marks its database written when it opens and
after each use); Dagster's run-log
watchers in the webserver wake on changes of the ``.db`` file, so a run's live log stays
live, at most a second late.  SQLite's auto-checkpoint and the process's exit fold the log
back too.

What it trades: an application crash loses nothing; a power cut can lose the commits of the
last moments, never the database.  That is the right trade for a project-local instance;
production runs on PostgreSQL (``deploy/README.md``), which this never touches (it applies
only to ``sqlite3`` connections on files under the instance home).  The code location
(``bf_assets.definitions``: run workers, code servers) and ``bf-assets release`` call it;
``BF_SQLITE_WAL=0`` turns it off.  Nothing in the instance's files or ``dagster.yaml``
changes: WAL mode is a property SQLite keeps in each database file, and any Dagster
process opens such a file as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from typing import Any

from sqlalchemy import event
from sqlalchemy.pool import Pool

WAL_ENV = "BF_SQLITE_WAL"
KEEPERS = 16
FLUSHER_NAME = "bf-sqlite-wal"
CHECKPOINT_SECONDS = 1.0
_TUNED_PATH = "bf_tuned_path"  # a connection record's database file, when it is tuned

_lock = threading.Lock()
_tuned_dirs: set[str] = set()
_tuned_paths: dict[str, bool] = {}  # path -> under a tuned folder (is_tuned's answers)
TUNED_PATHS_KEPT = 4096
_listening = False
# path -> (idle connection, written since the last checkpoint)
_keepers: OrderedDict[str, tuple[sqlite3.Connection, bool]] = OrderedDict()
_flusher: threading.Thread | None = None
_orphans: list[sqlite3.Connection] = []  # a forked child's copies of the parent's keepers


def tune_instance_storage(home: str | None = None) -> bool:
    """Tune the SQLite databases under ``home`` (default ``$DAGSTER_HOME``) for this process;
    ``False`` when there is no home or ``BF_SQLITE_WAL=0``."""
    home = home or os.environ.get("DAGSTER_HOME")
    if not home or os.environ.get(WAL_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    tune_sqlite_under(home)
    return True


def tune_sqlite_under(base_dir: str) -> None:
    """WAL mode and ``synchronous=NORMAL`` for every SQLite connection opened from now on on a
    database file under ``base_dir``."""
    global _listening
    path = os.path.realpath(base_dir).rstrip(os.sep) + os.sep
    with _lock:
        _tuned_dirs.add(path)
        _tuned_paths.clear()
        if not _listening:
            event.listen(Pool, "connect", _on_connect)
            event.listen(Pool, "checkin", _on_checkin)
            _listening = True


def is_tuned(path: str) -> bool:
    """True when the database file ``path`` lies under a tuned folder.  Asked at every
    connection and engine: each path's answer is kept (``realpath`` stats every component)
    until another folder is tuned."""
    hit = _tuned_paths.get(path)
    if hit is None:
        real = os.path.realpath(path)
        hit = any(real.startswith(d) for d in tuple(_tuned_dirs))
        if len(_tuned_paths) >= TUNED_PATHS_KEPT:
            _tuned_paths.clear()
        _tuned_paths[path] = hit
    return hit


def _on_connect(dbapi_conn: Any, record: Any) -> None:
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
        if record is not None:
            record.info[_TUNED_PATH] = row[2]  # for the uses after this one (a kept pool's)
    except sqlite3.Error:
        return  # the database keeps its mode; Dagster's own busy handling applies


def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
    """After each use of a tuned database's connection: the database was written, the
    checkpointer folds it back."""
    path = record.info.get(_TUNED_PATH) if record is not None else None
    if path is not None:
        _keep(path)


def _keep(path: str) -> None:
    global _flusher
    with _lock:
        held = _keepers.get(path)
        if held is not None:
            _keepers.move_to_end(path)
            _keepers[path] = (held[0], True)
            return
        conn = sqlite3.connect(path, check_same_thread=False, timeout=15)
        # a connection takes part in the log (its shared-memory lock) once it has read
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        _keepers[path] = (conn, True)
        while len(_keepers) > KEEPERS:
            _, (old, _dirty) = _keepers.popitem(last=False)
            with contextlib.suppress(sqlite3.Error):
                old.close()
        if _flusher is None or not _flusher.is_alive():
            _flusher = threading.Thread(target=_flush_loop, name=FLUSHER_NAME, daemon=True)
            _flusher.fork_safe = True  # type: ignore[attr-defined]  # see _flush_loop
            _flusher.start()


def _flush_loop() -> None:
    """Every :data:`CHECKPOINT_SECONDS`, fold the log of each database written since into
    its file (without waiting for readers): the ``.db`` file changes, and Dagster's watchers
    of a run's log wake up.  The work is done under the module lock, which a fork waits for
    (:func:`_before_fork`): a child never starts with this thread inside SQLite."""
    while True:
        time.sleep(CHECKPOINT_SECONDS)
        with _lock:
            for p, (c, dirty) in list(_keepers.items()):
                if dirty:
                    _keepers[p] = (c, False)
                    with contextlib.suppress(sqlite3.Error):
                        c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()


def _before_fork() -> None:
    _lock.acquire()


def _after_fork_parent() -> None:
    _lock.release()


def _after_fork_child() -> None:
    """A forked worker (the review's, the pages') writes no events: it forgets the parent's
    idle connections (never closing them: they belong to the parent) and its thread."""
    global _lock, _flusher
    _orphans.extend(conn for conn, _dirty in _keepers.values())  # kept, never closed here
    _keepers.clear()
    _flusher = None
    _lock = threading.Lock()


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child
)


@atexit.register
def release_keepers() -> None:
    """Close every idle connection (the last connection to close checkpoints its database)."""
    with _lock:
        while _keepers:
            _, (conn, _dirty) = _keepers.popitem(last=False)
            with contextlib.suppress(sqlite3.Error):
                conn.close()
