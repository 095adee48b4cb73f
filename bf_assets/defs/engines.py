"""One SQLAlchemy engine per SQLite database of the project-local instance, not one per use.

Dagster's SQLite storages (event log, runs, schedules) call ``create_engine`` every time
they open a connection, and then dispose of the engine: every event a run writes pays for a
new engine, its dialect's first-connect set-up and its statement cache, three times over for
an asset materialization (the run's database, the index database, and a look for the tags
table).  A release of 20,000 trials writes about 1,000 materializations (one per asset and
job partition), 100,000 trials about 5,000, each some 5 ms of CPU on the process that runs
the ingest.  :func:`keep_engines` has those three modules' ``create_engine`` hand back the
engine already made for the same database file, options and process (at most
:data:`KEPT_ENGINES`, the least recently used let go): the same ``NullPool`` engine Dagster
asked for, so every use still opens and closes its own connection and Dagster's
``dispose()`` after it changes nothing but the pool, while the dialect's set-up and the
compiled statements are kept (about half of each event's cost).

Only engines Dagster asks for in that exact form (a ``sqlite:///`` file URL, ``NullPool``,
at most ``connect_args``) on a database the caller's predicate accepts (the instance home's
files: :mod:`bf_assets.defs.storage`) are kept; any other call is Dagster's as it was.  A
forked process starts with none of its parent's.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sqlalchemy.pool import NullPool

# Dagster 1.13's SQLite storages, each of which imports ``create_engine`` by name.
STORAGE_MODULES = (
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
)
KEPT_ENGINES = 32
_URL_PREFIX = "sqlite:///"

_lock = threading.Lock()
_engines: OrderedDict[tuple[str, str, int], Any] = OrderedDict()
_kept_here: list[Callable[[str], bool]] = []  # the predicate, once installed


def keep_engines(keeps: Callable[[str], bool]) -> None:
    """From now on, Dagster's SQLite storages in this process reuse one engine per database
    file for which ``keeps(path)`` is true (installed once; a later call changes nothing)."""
    with _lock:
        if _kept_here:
            return
        _kept_here.append(keeps)
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
        engine = real(url, *args, **kwargs)
        with _lock:
            kept = _engines.setdefault(key, engine)  # a race keeps the first one
            _engines.move_to_end(key)
            while len(_engines) > KEPT_ENGINES:
                _engines.popitem(last=False)
        return kept

    create_engine._bf_reuses_engines = True  # type: ignore[attr-defined]
    return create_engine


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
    _engines.clear()  # the parent's: a child makes its own


os.register_at_fork(after_in_child=_after_fork_child)
