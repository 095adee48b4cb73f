"""``ingest_job`` on the Celery executor: two ``dagster-celery`` workers, one Redis broker.

The workers are ``celery -A dagster_celery.app worker`` processes, started the way
``dagster-celery worker start`` starts them (a ``dagster_celery_config`` module with the broker
and backend on ``PYTHONPATH``), but directly, so the test owns the worker processes and can stop
them.  They share a SQLite instance (a persistent ``DAGSTER_HOME``), the run roots and a Parquet
warehouse on this machine's filesystem.

Distribution is proven deterministically: each worker also listens on a queue of its own, and
one run per partition is pinned to one worker (``execution: config: config_source:
task_default_queue``); a third run goes to the shared ``dagster`` queue as in production.  The
engine event ``Executing steps … in celery worker`` records the worker's node name, and with the
``solo`` pool a step's ``STEP_START`` pid is the worker's pid.  The Parquet tables of every run
must equal those of an in-process run of the same partition.

Skipped when Redis is not reachable on ``$BF_TEST_REDIS_HOST:$BF_TEST_REDIS_PORT`` (default
``127.0.0.1:6379``); a random empty Redis database (1-15) isolates the broker and is flushed at
the end.  The executor-selection tests need neither Redis nor Celery workers.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from enginekit import (
    ASSETS,
    KEYS,
    build_jobs_root,
    call_with_timeout,
    ingest_job_recon,
    local_resources,
    materialize_partitions,
    reload_definitions,
    resource_config,
)

from bf_assets.defs.executors import (
    CELERY_SHARED_QUEUE as SHARED_QUEUE,
)
from bf_assets.defs.executors import (
    DEFAULT_CELERY_BROKER,
    celery_worker_argv,
    select_executor,
)
from bf_assets.defs.partitions import job_partitions

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout

# dagster-celery registers its task afresh for every step; Celery 5.7 warns about the name.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:dagster_celery.executor")

REDIS_HOST = os.environ.get("BF_TEST_REDIS_HOST", "127.0.0.1")
REDIS_PORT = int(os.environ.get("BF_TEST_REDIS_PORT", "6379"))
STEPS = {"ingest_trials", "trial_rows"}  # at least these steps (the review, the rows)
WORKER_NAMES = ("bf-w1", "bf-w2")
WORKER_START_TIMEOUT_S = 45.0
WORKER_STOP_TIMEOUT_S = 10.0
RUN_TIMEOUT_S = 90.0


# --------------------------------------------------------------------------- executor selection


def test_select_executor_default_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BF_EXECUTOR", raising=False)
    assert select_executor() is dg.multi_or_in_process_executor  # each run's config chooses
    monkeypatch.setenv("BF_EXECUTOR", "")
    assert select_executor() is dg.multi_or_in_process_executor
    monkeypatch.setenv("BF_EXECUTOR", "in_process")
    assert select_executor() is dg.in_process_executor
    assert select_executor("In-Process") is dg.in_process_executor
    assert select_executor("multiprocess") is dg.multiprocess_executor
    with pytest.raises(ValueError, match="BF_EXECUTOR='dask' is not one of"):
        select_executor("dask")


def test_select_celery_executor_broker_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dagster_celery")

    def defaults(executor: dg.ExecutorDefinition) -> dict[str, Any]:
        fields = executor.config_schema.config_type.fields  # type: ignore[union-attr]
        return {k: f.default_value for k, f in fields.items() if f.default_provided}

    monkeypatch.delenv("BF_CELERY_BROKER", raising=False)
    monkeypatch.delenv("BF_CELERY_BACKEND", raising=False)
    executor = select_executor("celery")
    assert executor.name == "celery"
    assert defaults(executor) == {
        "broker": DEFAULT_CELERY_BROKER,
        "backend": DEFAULT_CELERY_BROKER,
    }
    monkeypatch.setenv("BF_CELERY_BROKER", "redis://broker:6379/3")
    assert defaults(select_executor("celery")) == {
        "broker": "redis://broker:6379/3",
        "backend": "redis://broker:6379/3",
    }
    monkeypatch.setenv("BF_CELERY_BACKEND", "redis://results:6379/4")
    assert defaults(select_executor("celery"))["backend"] == "redis://results:6379/4"


def test_select_k8s_executor() -> None:
    try:
        import dagster_k8s
    except ImportError:
        with pytest.raises(ImportError, match="BF_EXECUTOR=k8s needs dagster-k8s"):
            select_executor("k8s")
        return
    assert select_executor("k8s") is dagster_k8s.k8s_job_executor


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- Redis


CLAIM_KEY = "bf-assets-test:claim"


def _redis_db() -> int:
    """Claim a random empty database number (1-15) on the local Redis, or skip.

    The claim (``SET NX`` of ``CLAIM_KEY`` with an expiry) keeps test runs that start at the same
    time off each other's database.
    """
    redis = pytest.importorskip("redis")
    token = f"{os.getpid()}-{time.time_ns()}"
    for db in random.sample(range(1, 16), 15):
        client = redis.Redis(
            host=REDIS_HOST, port=REDIS_PORT, db=db, socket_connect_timeout=2, socket_timeout=2
        )
        try:
            if client.dbsize() == 0 and client.set(CLAIM_KEY, token, nx=True, ex=3600):
                return db
        except redis.RedisError as exc:
            pytest.skip(f"Redis not usable on {REDIS_HOST}:{REDIS_PORT}: {exc}")
        finally:
            client.close()
    pytest.skip(f"no empty Redis database among 1-15 on {REDIS_HOST}:{REDIS_PORT}")


@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    pytest.importorskip("dagster_celery")
    redis = pytest.importorskip("redis")
    db = _redis_db()
    try:
        yield f"redis://{REDIS_HOST}:{REDIS_PORT}/{db}"
    finally:
        client = redis.Redis(
            host=REDIS_HOST, port=REDIS_PORT, db=db, socket_connect_timeout=2, socket_timeout=5
        )
        try:
            with contextlib.suppress(redis.RedisError):
                client.flushdb()
        finally:
            client.close()


# --------------------------------------------------------------------------- workers


@dataclass
class Worker:
    name: str
    queue: str
    proc: subprocess.Popen[bytes]
    log: Path

    def owns(self, nodename: str) -> bool:
        """Whether Celery's node name (``<name>@<host>``) is this worker's."""
        return nodename.startswith(f"{self.name}@")

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def start_worker(name: str, base: Path, env: Mapping[str, str]) -> Worker:
    queue = f"{name}-only"
    log = base / f"{name}.log"
    cmd = celery_worker_argv(sys.executable, name, queue)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Worker(name, queue, proc, log)


def wait_ready(workers: list[Worker], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(workers)
    while pending:
        for w in list(pending):
            if w.proc.poll() is not None:
                pytest.fail(f"celery worker {w.name} exited ({w.proc.returncode}):\n{w.tail()}")
            text = w.log.read_text(errors="replace") if w.log.exists() else ""
            if f"{w.name}@" in text and " ready." in text:
                pending.remove(w)
        if pending and time.monotonic() > deadline:
            pytest.fail(
                f"celery workers not ready after {timeout_s:.0f} s: "
                + "; ".join(f"{w.name}:\n{w.tail()}" for w in pending)
            )
        time.sleep(0.2)


def stop_workers(workers: list[Worker]) -> None:
    """SIGTERM each worker's process group (warm shutdown), then SIGKILL what is left; every
    wait is bounded."""
    for sig, wait_s in ((signal.SIGTERM, WORKER_STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        alive = [w for w in workers if w.proc.poll() is None]
        for w in alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.proc.pid, sig)
        deadline = time.monotonic() + wait_s
        for w in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))


@dataclass
class CeleryCluster:
    instance: dg.DagsterInstance
    jobs_root: Path
    base: Path
    workers: list[Worker]


@pytest.fixture(scope="module")
def celery_cluster(
    broker_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryCluster]:
    """Two workers on ``broker_url``, a shared SQLite ``DAGSTER_HOME``, run roots and warehouse;
    ``bf_assets.definitions`` reloaded with ``BF_EXECUTOR=celery`` for the module."""
    base = tmp_path_factory.mktemp("celery")
    jobs_root = build_jobs_root(base)
    home = base / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    config_dir = base / "celery_config"
    config_dir.mkdir()
    (config_dir / "dagster_celery_config.py").write_text(
        f"broker_url = {broker_url!r}\nresult_backend = {broker_url!r}\n"
    )

    settings = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "BF_EXECUTOR": "celery",
        "BF_CELERY_BROKER": broker_url,
        "BF_RUN_ROOTS": str(jobs_root),
        "BF_WAREHOUSE": str(base / "warehouse"),
    }
    worker_env = {**os.environ, **settings}
    worker_env.pop("BF_CELERY_BACKEND", None)
    worker_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(config_dir), os.environ.get("PYTHONPATH", "")) if p
    )

    with pytest.MonkeyPatch.context() as mp:
        for k, v in settings.items():
            mp.setenv(k, v)
        mp.delenv("BF_CELERY_BACKEND", raising=False)
        # Create the SQLite storage before any worker opens it (concurrent first opens race on
        # the schema migration).
        instance = dg.DagsterInstance.from_config(str(home))
        instance.add_dynamic_partitions(job_partitions.name, list(KEYS))
        workers: list[Worker] = []
        try:
            workers = [start_worker(name, base, worker_env) for name in WORKER_NAMES]
            wait_ready(workers, WORKER_START_TIMEOUT_S)
            reload_definitions()
            yield CeleryCluster(instance, jobs_root, base, workers)
        finally:
            stop_workers(workers)
            mp.undo()
            reload_definitions()
            instance.dispose()


# --------------------------------------------------------------------------- the test


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    success: bool
    step_workers: dict[str, str]  # step key -> Celery node name
    step_pids: dict[str, int]  # step key -> pid of STEP_START
    queues: set[str]


def _celery_run(cluster: CeleryCluster, key: str, warehouse: Path, queue: str | None) -> RunRecord:
    exec_config: dict[str, Any] = {}
    if queue is not None:
        exec_config["config_source"] = {"task_default_queue": queue}
    run_config = {
        "execution": {"config": exec_config},
        "resources": resource_config(cluster.jobs_root, warehouse),
    }
    recon = ingest_job_recon()

    def run() -> tuple[str, bool]:
        with dg.execute_job(
            recon,
            instance=cluster.instance,
            run_config=run_config,
            tags={"dagster/partition": key},
        ) as result:
            return result.run_id, result.success

    run_id, success = call_with_timeout(run, RUN_TIMEOUT_S)
    step_workers: dict[str, str] = {}
    step_pids: dict[str, int] = {}
    queues: set[str] = set()
    for record in cluster.instance.all_logs(run_id):
        event = record.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START and event.pid is not None:
            step_pids[event.step_key] = event.pid
        elif event.event_type == dg.DagsterEventType.ENGINE_EVENT:
            data = event.engine_event_data
            node = data.metadata.get("Celery worker") if data is not None else None
            if node is not None:
                step_workers[event.step_key] = str(getattr(node, "value", node))
            message = event.message or ""
            if message.startswith("Submitting celery task") and 'to queue "' in message:
                queues.add(message.rsplit('to queue "', 1)[1].rstrip('".'))
    return RunRecord(run_id, success, step_workers, step_pids, queues)


def _assert_same_tables(warehouse: Path, reference: Path, keys: tuple[str, ...]) -> None:
    for key in keys:
        for asset in ASSETS:
            rel = Path(asset) / f"{key}.parquet"
            got = pd.read_parquet(warehouse / rel)
            want = pd.read_parquet(reference / rel)
            assert not want.empty or asset == "findings"
            pd.testing.assert_frame_equal(got, want, obj=str(rel))


def test_ingest_job_runs_on_two_celery_workers(celery_cluster: CeleryCluster) -> None:
    cluster = celery_cluster
    recon = ingest_job_recon()
    assert recon.get_definition().executor_def.name == "celery"
    w1, w2 = cluster.workers
    pinned_wh = cluster.base / "warehouse_pinned"
    shared_wh = cluster.base / "warehouse_shared"
    reference = cluster.base / "warehouse_in_process"

    # One partition pinned to each worker, then one run through the shared queue.
    runs = {
        (KEYS[0], w1.name): _celery_run(cluster, KEYS[0], pinned_wh, w1.queue),
        (KEYS[1], w2.name): _celery_run(cluster, KEYS[1], pinned_wh, w2.queue),
        (KEYS[0], SHARED_QUEUE): _celery_run(cluster, KEYS[0], shared_wh, None),
    }
    logs = "\n".join(f"--- {w.name}\n{w.tail()}" for w in cluster.workers)
    for (key, where), rec in runs.items():
        assert rec.success, f"run {rec.run_id} ({key} on {where}) failed\n{logs}"
        assert STEPS <= set(rec.step_workers) == set(rec.step_pids), rec
        assert os.getpid() not in rec.step_pids.values()

    for worker in (w1, w2):
        rec = runs[(KEYS[0] if worker is w1 else KEYS[1], worker.name)]
        assert rec.queues == {worker.queue}
        assert all(worker.owns(node) for node in rec.step_workers.values()), rec
        # The solo pool runs the task in the worker's own process.
        assert set(rec.step_pids.values()) == {worker.proc.pid}, rec

    shared = runs[(KEYS[0], SHARED_QUEUE)]
    assert shared.queues == {SHARED_QUEUE}
    by_pid = {w.proc.pid: w for w in cluster.workers}
    for step, node in shared.step_workers.items():
        worker = by_pid[shared.step_pids[step]]
        assert worker.owns(node), shared

    nodes = {n for rec in runs.values() for n in rec.step_workers.values()}
    assert {w.name for w in cluster.workers} == {n.split("@", 1)[0] for n in nodes}

    # Same tables as an in-process run of the same partitions.
    materialize_partitions(
        dg.DagsterInstance.ephemeral(), local_resources(cluster.jobs_root, reference)
    )
    _assert_same_tables(pinned_wh, reference, KEYS)
    _assert_same_tables(shared_wh, reference, (KEYS[0],))

    # The runs and their materializations are in the shared instance.
    for (key, _), rec in runs.items():
        run = cluster.instance.get_run_by_id(rec.run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags["dagster/partition"] == key
    for asset in ASSETS:
        assert set(KEYS) <= cluster.instance.get_materialized_partitions(dg.AssetKey(asset))
