"""The production instance profile (``deploy/dagster.postgres.yaml``) on a real PostgreSQL.

Skipped when no PostgreSQL answers on ``$BF_TEST_PG_HOST:$BF_TEST_PG_PORT`` (default
``127.0.0.1:5432``).  The module creates one fresh database (``bf_assets_test_<hex>``), points a
``DAGSTER_HOME`` holding the deploy profile at it through the ``DAGSTER_PG_*`` variables, and
drops the database at the end.  Trials come from the sample generator (no ``/work/shared``).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob
from enginekit import (
    ASSETS,
    KEYS,
    TRIALS_PER_JOB,
    build_jobs_root,
    call_with_timeout,
    ingest_job_recon,
    local_resources,
    materialize_partitions,
    reload_definitions,
    resource_config,
)

from bf_assets.defs.partitions import job_partitions

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout

psycopg2 = pytest.importorskip("psycopg2")
pg_sql = pytest.importorskip("psycopg2.sql")
pytest.importorskip("dagster_postgres")

PROFILE = REPO_ROOT / "deploy" / "dagster.postgres.yaml"
PG_HOST = os.environ.get("BF_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("BF_TEST_PG_PORT", "5432"))
PG_PASSWORD = os.environ.get("BF_TEST_PG_PASSWORD", "")
RUN_TIMEOUT_S = 120


# --------------------------------------------------------------------------- PostgreSQL


@dataclass(frozen=True)
class PgDatabase:
    host: str
    port: int
    user: str
    password: str
    name: str

    def connect(self) -> Any:
        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or None,
            dbname=self.name,
            connect_timeout=2,
        )


def _candidate_users() -> list[str]:
    users = [os.environ.get("BF_TEST_PG_USER", ""), "postgres", "root", os.environ.get("USER", "")]
    return list(dict.fromkeys(u for u in users if u))


def _admin_connection() -> tuple[Any, str]:
    """An autocommit connection to the ``postgres`` database, or skip the module."""
    errors: list[str] = []
    for user in _candidate_users():
        try:
            conn = psycopg2.connect(
                host=PG_HOST,
                port=PG_PORT,
                user=user,
                password=PG_PASSWORD or None,
                dbname="postgres",
                connect_timeout=2,
            )
        except psycopg2.Error as exc:
            lines = str(exc).strip().splitlines()
            errors.append(f"{user}: {lines[0] if lines else type(exc).__name__}")
            continue
        conn.autocommit = True
        return conn, user
    pytest.skip(f"PostgreSQL not reachable on {PG_HOST}:{PG_PORT} ({'; '.join(errors)})")


def _drop_database(conn: Any, name: str) -> None:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        cur.execute(pg_sql.SQL("DROP DATABASE IF EXISTS {}").format(pg_sql.Identifier(name)))


@pytest.fixture(scope="module")
def pg_database() -> Iterator[PgDatabase]:
    """A fresh, empty database for this module's run; dropped afterwards."""
    conn, user = _admin_connection()
    name = f"bf_assets_test_{secrets.token_hex(4)}"
    try:
        with conn.cursor() as cur:
            cur.execute(pg_sql.SQL("CREATE DATABASE {}").format(pg_sql.Identifier(name)))
    except psycopg2.Error as exc:
        conn.close()
        pytest.skip(f"cannot create a database as {user!r}: {exc}")
    try:
        yield PgDatabase(PG_HOST, PG_PORT, user, PG_PASSWORD, name)
    finally:
        try:
            _drop_database(conn, name)
        finally:
            conn.close()


@pytest.fixture(scope="module")
def pg_instance(
    pg_database: PgDatabase, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dg.DagsterInstance]:
    """A ``DAGSTER_HOME`` with the deploy profile as ``dagster.yaml``, on ``pg_database``.

    The ``DAGSTER_PG_*`` variables stay set for the whole module: the instance ref that step
    subprocesses receive carries the ``env:`` entries, not their values.
    """
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copyfile(PROFILE, home / "dagster.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(home))
        mp.setenv("DAGSTER_DISABLE_TELEMETRY", "1")
        mp.setenv("DAGSTER_PG_HOST", pg_database.host)
        mp.setenv("DAGSTER_PG_PORT", str(pg_database.port))
        mp.setenv("DAGSTER_PG_USER", pg_database.user)
        mp.setenv("DAGSTER_PG_PASSWORD", pg_database.password)
        mp.setenv("DAGSTER_PG_DB", pg_database.name)
        instance = dg.DagsterInstance.from_config(str(home))
        try:
            yield instance
        finally:
            instance.dispose()


# --------------------------------------------------------------------------- trials


@pytest.fixture(scope="module")
def jobs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_jobs_root(tmp_path_factory.mktemp("trials"))


def run_partition(
    recon: ReconstructableJob,
    instance: dg.DagsterInstance,
    run_config: Mapping[str, Any],
    key: str,
    tags: Mapping[str, str],
) -> tuple[str, bool]:
    """One ``ingest_job`` run of partition ``key``: ``(run_id, success)``."""
    with dg.execute_job(
        recon,
        instance=instance,
        run_config=dict(run_config),
        tags={"dagster/partition": key, **tags},
    ) as result:
        return result.run_id, result.success


def _latest_row_count(instance: dg.DagsterInstance, asset: str, key: str) -> int:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
    ).records
    assert records, f"no materialization of {asset} [{key}]"
    mat = records[0].asset_materialization
    assert mat is not None and mat.partition == key
    value = mat.metadata["dagster/row_count"]
    return int(getattr(value, "value", value))


# --------------------------------------------------------------------------- tests


def test_profile_is_postgres_with_run_limits(pg_instance: dg.DagsterInstance) -> None:
    from dagster_postgres import (
        PostgresEventLogStorage,
        PostgresRunStorage,
        PostgresScheduleStorage,
    )

    assert isinstance(pg_instance.run_storage, PostgresRunStorage)
    assert isinstance(pg_instance.event_log_storage, PostgresEventLogStorage)
    assert isinstance(pg_instance.schedule_storage, PostgresScheduleStorage)
    assert pg_instance.is_persistent
    assert type(pg_instance.run_coordinator).__name__ == "QueuedRunCoordinator"
    queue = pg_instance.get_concurrency_config().run_queue_config
    assert queue is not None
    assert queue.max_concurrent_runs == 4
    assert list(queue.tag_concurrency_limits) == [{"key": "release", "limit": 1}]
    assert pg_instance.run_monitoring_enabled


def test_materializations_are_stored_in_postgres(
    pg_instance: dg.DagsterInstance,
    pg_database: PgDatabase,
    jobs_root: Path,
    tmp_path: Path,
) -> None:
    warehouse = tmp_path / "warehouse"
    run_ids = materialize_partitions(pg_instance, local_resources(jobs_root, warehouse))
    assert set(KEYS) <= set(pg_instance.get_dynamic_partitions(job_partitions.name))

    # Through the instance API.
    for asset in ASSETS:
        assert set(KEYS) <= pg_instance.get_materialized_partitions(dg.AssetKey(asset))
    for key in KEYS:
        assert _latest_row_count(pg_instance, "raw_trials", key) == TRIALS_PER_JOB
        assert _latest_row_count(pg_instance, "validated_trials", key) == TRIALS_PER_JOB
        findings = pd.read_parquet(warehouse / "findings" / f"{key}.parquet")
        assert _latest_row_count(pg_instance, "findings", key) == len(findings)
    for run_id in run_ids:
        run = pg_instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS

    # And straight from the tables, with a connection of our own.
    conn = pg_database.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT asset_key, partition, count(*) FROM event_logs "
                "WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND run_id = ANY(%s) "
                "GROUP BY asset_key, partition",
                (run_ids,),
            )
            rows = {(a, p): n for a, p, n in cur.fetchall()}
            cur.execute("SELECT run_id, status FROM runs WHERE run_id = ANY(%s)", (run_ids,))
            runs = dict(cur.fetchall())
    finally:
        conn.close()
    # (The graph may grow: other assets of these runs can have rows too.)
    expected = {(dg.AssetKey(a).to_string(), k) for a in ASSETS for k in KEYS}
    assert expected <= set(rows), rows
    assert all(rows[e] == 1 for e in expected), rows
    assert runs == dict.fromkeys(run_ids, "SUCCESS")


def test_multiprocess_backfill_on_postgres(
    pg_instance: dg.DagsterInstance, jobs_root: Path, tmp_path: Path
) -> None:
    """A backfill-like pair of runs (one per partition, one shared tag) of ``ingest_job`` with
    the multiprocess executor (``max_concurrent: 2``): each step is a subprocess that reopens
    the Postgres instance from its ref.

    The runs go one after the other: ``execute_job`` configures process-wide logging
    (``logging.config.dictConfig``) and deadlocks when two run in threads of one process.
    """
    warehouse = tmp_path / "warehouse"
    run_config = {
        "execution": {"config": {"max_concurrent": 2}},
        "resources": resource_config(jobs_root, warehouse),
    }
    pg_instance.add_dynamic_partitions(job_partitions.name, list(KEYS))
    backfill_tag = {"bf/backfill": f"test-{secrets.token_hex(4)}"}

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BF_EXECUTOR", "multiprocess")
        reload_definitions()
        try:
            recon = ingest_job_recon()
            assert recon.get_definition().executor_def.name == "multiprocess"

            # The point of a persistent instance: the multiprocess executor refuses the ephemeral one.
            with pytest.raises(dg.DagsterUnmetExecutorRequirementsError):
                dg.execute_job(
                    recon,
                    instance=dg.DagsterInstance.ephemeral(),
                    run_config=run_config,
                    raise_on_error=True,
                )

            outcomes = {
                key: call_with_timeout(
                    lambda key=key: run_partition(
                        recon, pg_instance, run_config, key, backfill_tag
                    ),
                    RUN_TIMEOUT_S,
                )
                for key in KEYS
            }
        finally:
            mp.undo()
            reload_definitions()

    assert all(ok for _, ok in outcomes.values()), outcomes
    runs = pg_instance.get_runs(
        filters=dg.RunsFilter(tags=backfill_tag, statuses=[dg.DagsterRunStatus.SUCCESS])
    )
    assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(KEYS)
    for key, (run_id, _) in outcomes.items():
        run = pg_instance.get_run_by_id(run_id)
        assert run is not None
        assert run.run_config["execution"]["config"]["max_concurrent"] == 2
        starts = {
            e.dagster_event.step_key: e.dagster_event.pid
            for e in pg_instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
            if e.dagster_event is not None
        }
        # Every step in a subprocess of its own (none in this process).
        assert {"ingest_trials"} <= set(starts)
        assert len(set(starts.values())) == len(starts)
        assert os.getpid() not in starts.values()
        for asset in ASSETS:
            assert (warehouse / asset / f"{key}.parquet").is_file()
        assert len(pd.read_parquet(warehouse / "validated_trials" / f"{key}.parquet")) == (
            TRIALS_PER_JOB
        )
    for asset in ASSETS:
        assert set(KEYS) <= pg_instance.get_materialized_partitions(dg.AssetKey(asset))
