"""One SQLAlchemy engine per SQLite database of the project-local instance, not one per use.

Dagster's SQLite storages (event log, runs, schedules) call ``create_engine`` every time
they open a connection, and then dispose of the engine: every event a run writes pays for a
new engine, its dialect's first-connect set-up and its statement cache, three times over for
an asset materialization (the run's database, the index database, and a look for the tags
table).  A release of 20,000 trials writes about 1,000 materializations (one per asset and
job partition), 100,000 trials about 5,000, each some 5 ms of CPU on the process that runs
the ingest.  :func:`keep_engines` has those three modules' ``create_engine`` hand back the
engine already made for the same database file, options and process (at most
:data:`KEPT_ENGINES`, the least recently used let go), with the dialect's set-up and the
compiled statements.

A kept engine also keeps its connections: Dagster asks for ``NullPool`` (a new SQLite
connection for every use, and with it the instance's per-connection set-up,
:mod:`bf_assets.defs.storage`) and disposes of the engine after each use; a kept engine
pools up to :data:`IDLE_CONNECTIONS` idle connections and its ``dispose()`` leaves them
open.  A materialization (three connections' worth of uses) then took 0.86 ms of CPU
instead of 1.52 ms.  A pooled connection is handed out again only while its
database file is the one it opened (same device and inode, checked at each checkout): a file
removed and made again (``dagster instance wipe``) gets a new connection, never the old
file's.  Connections move between threads one use at a time (``check_same_thread`` off;
Dagster serialises each storage's uses, and this Python's SQLite is thread-safe).  They are
closed when their engine is let go and when the process exits, before the instance's idle
connections (the last to close folds the write-ahead log back); a forked process never
closes its parent's.

Only engines Dagster asks for in that exact form (a ``sqlite:///`` file URL, ``NullPool``,
at most ``connect_args``) on a database the caller's predicate accepts (the instance home's
files: :mod:`bf_assets.defs.storage`) are kept; any other call is Dagster's as it was.  A
forked process starts with none of its parent's.
"""

from __future__ import annotations

import atexit
import importlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import NullPool, QueuePool

# Dagster 1.13's SQLite storages, each of which imports ``create_engine`` by name.
STORAGE_MODULES = (
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
)
KEPT_ENGINES = 32
IDLE_CONNECTIONS = 2  # connections a kept engine keeps open between uses (more are made as needed)
_URL_PREFIX = "sqlite:///"
_FILE = "bf_file"  # a pooled connection's record: the (device, inode) of the file it opened

_lock = threading.Lock()
_engines: OrderedDict[tuple[str, str, int], Any] = OrderedDict()
_kept_here: list[Callable[[str], bool]] = []  # the predicate, once installed
_inherited: list[Any] = []  # a forked child's copies of the parent's engines: never closed here


def keep_engines(keeps: Callable[[str], bool]) -> None:
    """From now on, Dagster's SQLite storages in this process reuse one engine per database
    file for which ``keeps(path)`` is true (installed once; a later call changes nothing)."""
    with _lock:
        if _kept_here:
            return
        _kept_here.append(keeps)
        # registered after bf_assets.defs.storage's exit handler, so it runs before it
        atexit.register(close_kept_engines)
        for name in STORAGE_MODULES:
            module = importlib.import_module(name)
            real = module.create_engine
            if not getattr(real, "_bf_reuses_engines", False):
                module.create_engine = _reusing(real)


def _reusing(real: Callable[..., Any]) -> Callable[..., Any]:
    def create_engine(url: Any, *args: Any, **kwargs: Any) -> Any:
        key = _key(url, args, kwargs)
        if key is None:
            return real(url, *args, **kwargs)
        with _lock:
            engine = _engines.get(key)
            if engine is not None:
                _engines.move_to_end(key)
                return engine
        engine = _pooled(real, url, kwargs)
        with _lock:
            kept = _engines.setdefault(key, engine)  # a race keeps the first one
            _engines.move_to_end(key)
            dropped = [_engines.popitem(last=False)[1] for _ in range(len(_engines) - KEPT_ENGINES)]
        if kept is not engine:
            _close(engine)
        for old in dropped:
            _close(old)
        return kept

    create_engine._bf_reuses_engines = True  # type: ignore[attr-defined]
    return create_engine


def _pooled(real: Callable[..., Any], url: str, kwargs: dict[str, Any]) -> Any:
    """The engine Dagster asked for, with its connections kept between uses."""
    connect_args = dict(kwargs.get("connect_args") or {})
    connect_args["check_same_thread"] = False  # one thread at a time; see the module text
    engine = real(
        url,
        poolclass=QueuePool,
        pool_size=IDLE_CONNECTIONS,
        max_overflow=-1,  # never wait for a connection: make another
        connect_args=connect_args,
    )
    path = url[len(_URL_PREFIX) :]
    event.listen(engine, "connect", partial(_opened, path))
    event.listen(engine, "checkout", partial(_still_the_file, path))
    engine.dispose = _keep_connections  # Dagster's dispose() after each use
    return engine


def _keep_connections(close: bool = True) -> None:
    """A kept engine's ``dispose``: its connections stay open for the next use."""


def _close(engine: Any) -> None:
    """Close a kept engine's idle connections (the real ``Engine.dispose``)."""
    Engine.dispose(engine)


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _opened(path: str, _dbapi_conn: Any, record: Any) -> None:
    record.info[_FILE] = _file_id(path)


def _still_the_file(path: str, _dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """A pooled connection whose file was removed or replaced is not handed out again (the
    pool closes it and opens a new one)."""
    if record.info.get(_FILE) != _file_id(path):
        raise DisconnectionError(f"{path} is not the file this connection opened")


def close_kept_engines() -> None:
    """Close the idle connections of every engine this process keeps (at exit)."""
    with _lock:
        mine = [e for (_url, _opts, pid), e in _engines.items() if pid == os.getpid()]
    for engine in mine:
        _close(engine)


def _key(url: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str, int] | None:
    """What identifies a keepable engine, or None for a call made as Dagster made it."""
    text = url if isinstance(url, str) else None
    if text is None or args or not text.startswith(_URL_PREFIX):
        return None
    if kwargs.get("poolclass") is not NullPool or set(kwargs) - {"poolclass", "connect_args"}:
        return None
    path = text[len(_URL_PREFIX) :]
    if not path or path.startswith(":") or "?" in path or not _kept_here[0](path):
        return None
    options = repr(sorted((kwargs.get("connect_args") or {}).items()))
    return text, options, os.getpid()


def kept_engines() -> int:
    """How many engines this process keeps (for tests and diagnostics)."""
    with _lock:
        return sum(1 for _, _, pid in _engines if pid == os.getpid())


def _after_fork_child() -> None:
    global _lock
    _lock = threading.Lock()
    _inherited.extend(_engines.values())  # the parent's connections: kept, never closed here
    _engines.clear()  # a child makes its own


os.register_at_fork(after_in_child=_after_fork_child)
