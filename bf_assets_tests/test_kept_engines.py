"""One SQLAlchemy engine per database of the project-local instance
(``bf_assets.defs.engines``): Dagster's SQLite storages reuse it for every event instead of
making a new one, nothing is lost, and nothing else is touched."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from sqlalchemy import event
from sqlalchemy.pool import NullPool, Pool, QueuePool

from bf_assets.batch.forklater import ForkedCall, can_fork
from bf_assets.defs import engines
from bf_assets.defs.storage import CHECKPOINT_SECONDS, is_tuned, tune_sqlite_under


@pytest.fixture
def home(instance_home: Path) -> Path:
    tune_sqlite_under(str(instance_home))
    return instance_home


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


def test_dagsters_storages_reuse_one_engine_a_database_and_lose_no_event(home: Path) -> None:
    made: list[object] = []
    real = sqlite_event_log.create_engine

    def counting(*args: object, **kwargs: object) -> object:
        engine = real(*args, **kwargs)
        made.append(engine)
        return engine

    sqlite_event_log.create_engine = counting
    try:
        with dg.DagsterInstance.get() as inst:
            for i in range(40):
                inst.report_runless_asset_event(
                    dg.AssetMaterialization(asset_key="a", partition=f"p{i}")
                )
            n_engines = len({id(e) for e in made})
            stored = inst.fetch_materializations(dg.AssetKey("a"), limit=100).records
    finally:
        sqlite_event_log.create_engine = real
    assert len(made) >= 80  # Dagster still asks for an engine every time it connects
    assert n_engines <= 3  # and is handed the one of each database it writes
    assert len(stored) == 40
    index = home / "history" / "runs" / "index.db"
    with sqlite3.connect(index) as conn:  # another connection sees every event
        assert conn.execute("SELECT count(*) FROM event_logs").fetchone()[0] >= 40


def test_the_same_database_and_options_give_the_same_engine_and_nothing_else_is_kept(
    home: Path, tmp_path: Path
) -> None:
    create = sqlite_run_storage.create_engine
    db = home / "history" / "x.db"
    a = create(_url(db), poolclass=NullPool)
    assert create(_url(db), poolclass=NullPool) is a
    assert create(_url(db), poolclass=NullPool, connect_args={"timeout": 5}) is not a
    outside = tmp_path / "elsewhere.db"  # not under an instance home
    assert create(_url(outside), poolclass=NullPool) is not create(
        _url(outside), poolclass=NullPool
    )
    assert create(_url(db), poolclass=QueuePool) is not create(_url(db), poolclass=QueuePool)
    assert create(_url(db), poolclass=NullPool, echo=False) is not a  # other options: Dagster's


def test_at_most_the_kept_number_stay(home: Path) -> None:
    create = sqlite_event_log.create_engine
    first = create(_url(home / "history" / "runs" / "r0.db"), poolclass=NullPool)
    for i in range(1, engines.KEPT_ENGINES + 5):
        create(_url(home / "history" / "runs" / f"r{i}.db"), poolclass=NullPool)
    assert engines.kept_engines() <= engines.KEPT_ENGINES
    assert create(_url(home / "history" / "runs" / "r0.db"), poolclass=NullPool) is not first


@pytest.mark.skipif(not can_fork(), reason="forks on Linux only")
def test_a_forked_process_makes_its_own(home: Path) -> None:
    create = sqlite_event_log.create_engine
    url = _url(home / "history" / "runs" / "index.db")
    parent = create(url, poolclass=NullPool)
    with ForkedCall(lambda: create(url, poolclass=NullPool) is parent) as call:
        reused_in_child = call.call()
    assert reused_in_child is False  # the parent's engine (and pool) stays the parent's
    assert create(url, poolclass=NullPool) is parent  # and is intact here


def test_a_folder_tuned_later_counts_for_paths_asked_about_before(tmp_path: Path) -> None:
    later = tmp_path / "later"
    later.mkdir()
    db = str(later / "x.db")
    assert is_tuned(db) is False  # answered, and the answer kept
    tune_sqlite_under(str(later))
    assert is_tuned(db) is True  # a newly tuned folder is not hidden by the kept answer


def _runs_dir(home: Path) -> Path:
    d = home / "history" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _table_with(engine: object, x: int) -> None:
    """Make table ``t`` through ``engine`` and put ``x`` in it."""
    with engine.begin() as conn:  # type: ignore[attr-defined]
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql(f"INSERT INTO t VALUES ({x})")


def _raw_id(engine: object) -> int:
    """The identity of the SQLite connection a use of ``engine`` gets."""
    with engine.connect() as conn:  # type: ignore[attr-defined]
        return id(conn.connection.dbapi_connection)


def test_events_reuse_their_connections_and_every_one_is_kept(home: Path) -> None:
    opened: list[object] = []

    def count(dbapi_conn: object, _record: object) -> None:
        opened.append(dbapi_conn)

    event.listen(Pool, "connect", count)  # every new DBAPI connection of any engine
    try:
        with dg.DagsterInstance.get() as inst:
            inst.report_runless_asset_event(dg.AssetMaterialization(asset_key="a", partition="w"))
            before = len(opened)
            for i in range(60):
                inst.report_runless_asset_event(
                    dg.AssetMaterialization(asset_key="a", partition=f"p{i}")
                )
            during = len(opened) - before
            stored = inst.fetch_materializations(dg.AssetKey("a"), limit=100).records
    finally:
        event.remove(Pool, "connect", count)
    assert before >= 1  # the counting sees Dagster's connections
    assert during <= 4  # with a connection of its own per use: three an event (180)
    assert len(stored) == 61
    index = home / "history" / "runs" / "index.db"
    with sqlite3.connect(index) as conn:  # committed: another connection sees every event
        assert conn.execute("SELECT count(*) FROM event_logs").fetchone()[0] >= 61


def test_dagsters_dispose_after_a_use_keeps_the_connection(home: Path) -> None:
    engine = sqlite_event_log.create_engine(_url(_runs_dir(home) / "r.db"), poolclass=NullPool)
    first = _raw_id(engine)
    engine.dispose()  # what Dagster's storages call after every use
    assert _raw_id(engine) == first
    engines.close_kept_engines()  # at exit: closed
    assert _raw_id(engine) != first


def test_a_database_made_again_gets_a_new_connection_never_the_old_files(home: Path) -> None:
    db = _runs_dir(home) / "again.db"
    engine = sqlite_event_log.create_engine(_url(db), poolclass=NullPool)
    _table_with(engine, 1)
    first = _raw_id(engine)
    for suffix in ("", "-wal", "-shm"):  # what `dagster instance wipe` removes
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    _table_with(engine, 2)  # the same engine, a new file
    assert _raw_id(engine) != first
    with sqlite3.connect(db) as conn:  # the write reached the file on disk
        assert conn.execute("SELECT x FROM t").fetchall() == [(2,)]


@pytest.mark.skipif(not can_fork(), reason="forks on Linux only")
def test_a_forked_process_never_uses_or_closes_its_parents_connections(home: Path) -> None:
    db = _runs_dir(home) / "shared.db"
    create = sqlite_event_log.create_engine
    parent = create(_url(db), poolclass=NullPool)
    with parent.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    mine = _raw_id(parent)

    def in_child() -> tuple[bool, bool]:
        child = create(_url(db), poolclass=NullPool)
        with child.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (7)")
        import gc

        gc.collect()  # the parent's engines are garbage here unless kept
        return child is parent, any(e is parent for e in engines._inherited)

    with ForkedCall(in_child) as call:
        same, kept = call.call()
    assert same is False and kept is True
    assert _raw_id(parent) == mine  # the parent's connection is still open and its own
    with parent.connect() as conn:
        assert conn.exec_driver_sql("SELECT x FROM t").fetchall() == [(7,)]


def _in_main_file(db: Path, tmp: Path) -> list[tuple[int]]:
    """The rows of ``t`` in the database file alone (what is folded back from the log)."""
    copy = tmp / f"copy-{time.monotonic_ns()}.db"
    copy.write_bytes(db.read_bytes())
    with sqlite3.connect(copy) as conn:
        try:
            return conn.execute("SELECT x FROM t ORDER BY x").fetchall()
        except sqlite3.OperationalError:
            return []


def _folded_back(db: Path, tmp: Path, rows: list[tuple[int]]) -> bool:
    deadline = time.monotonic() + 10 * CHECKPOINT_SECONDS
    while time.monotonic() < deadline:
        if _in_main_file(db, tmp) == rows:
            return True
        time.sleep(CHECKPOINT_SECONDS / 4)
    return False


def test_every_write_through_a_kept_connection_is_folded_back(home: Path, tmp_path: Path) -> None:
    """A run's live log in the UI follows the database file: the checkpointer folds each
    write back within its interval, also the writes of a connection kept for reuse."""
    db = _runs_dir(home) / "live.db"
    engine = sqlite_event_log.create_engine(_url(db), poolclass=NullPool)
    _table_with(engine, 1)
    first = _raw_id(engine)
    assert _folded_back(db, tmp_path, [(1,)])
    with engine.begin() as conn:  # the same connection, written again
        conn.exec_driver_sql("INSERT INTO t VALUES (2)")
    assert _raw_id(engine) == first
    assert _folded_back(db, tmp_path, [(1,), (2,)])
