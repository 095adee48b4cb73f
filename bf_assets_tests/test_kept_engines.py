"""One SQLAlchemy engine per database of the project-local instance
(``bf_assets.defs.engines``): Dagster's SQLite storages reuse it for every event instead of
making a new one, nothing is lost, and nothing else is touched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from sqlalchemy.pool import NullPool, QueuePool

from bf_assets.batch.forklater import ForkedCall, can_fork
from bf_assets.defs import engines
from bf_assets.defs.storage import is_tuned, tune_sqlite_under


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
