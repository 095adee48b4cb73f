#!/usr/bin/env python3
"""Scale-out of a release: one process against partition ranges on two Celery workers.

(a) ``bf-assets release --runs <jobs> --out A/out`` in one process: wall, CPU (user+sys of
    the process and its children, ``os.wait4``), peak RSS, exit status, exported count.
(b) The same release split: a PostgreSQL instance (``deploy/dagster.postgres.yaml`` on a
    fresh database) shared by every process, a Redis broker, two ``dagster-celery`` workers
    (solo pool, one task at a time, the same warehouse and run roots).  The job partitions are
    registered, cut into ranges (``bf_assets.defs.ranges.split_ranges``, balanced by trials,
    at least ``--ranges``, each of at most ``--max-trials`` trials: ``$BF_INGEST_RUN_TRIALS``
    or 2,000 by default, so a worker's memory does not grow with the corpus), and each range
    is launched as one run of ``ingest_job`` with ``dagster job execute`` (the run worker;
    the run's steps go to the workers), one run per worker at a time.  Then
    ``release_job`` (dataset review → curation → blocking publish checks → publish into
    ``B/out``) the same way.  Every step must have run on one of the workers: its engine event
    names the worker's node and its ``STEP_START`` pid is the worker's pid.
(c) Every file of the two published datasets (manifest, checksums, shards, card, report)
    compared byte for byte.

    python bench/scaleout.py --corpus /work/corpora/trials-20000
    python bench/scaleout.py --quick                 # a generated 310-trial corpus
    python bench/scaleout.py --corpus C --skip-split  # (a) only
    python bench/scaleout.py --corpus C --reference A/out --skip-one-process  # (b)+(c)

Needs ``dagster-celery[redis]``, ``dagster-postgres`` and ``psycopg2`` (the ``test`` extra),
Redis (``--redis``, default ``redis://127.0.0.1:6379``; an empty database 1-15 is claimed
and flushed afterwards) and PostgreSQL (``--pg-host``/``--pg-port``/``--pg-user``; a database
``bf_scaleout_<hex>`` is created and dropped).  This process never imports Dagster: every
Dagster step runs in a child, so no child inherits a large peak RSS from it.  No figure from
here belongs in a test.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path("/work/corpora/trials-100000")
PROFILE = REPO_ROOT / "deploy" / "dagster.postgres.yaml"
QUICK_TRIALS = 310  # four jobs (100, 100, 100, 10): two ranges of two partitions
SHARED_QUEUE = "dagster"  # bf_assets.defs.executors.CELERY_SHARED_QUEUE (imported lazily)
WORKERS = ("bf-w1", "bf-w2")
# the steps of ``ingest_job`` that do per-trial work: each must run on every worker
PER_TRIAL_STEPS = ("ingest_trials", "trial_rows")
SESSION_TAG = "bf/scaleout"
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
WORKER_START_TIMEOUT_S = 90.0
MB = 1_000_000


class ScaleoutError(Exception):
    """A problem the user has to fix (a service missing, a run that failed)."""


# ------------------------------------------------------------------------------ processes


@dataclass
class Usage:
    """One child process: wall time, CPU (user+sys, its reaped children included), peak RSS."""

    argv: list[str]
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    exit_code: int
    log: str = ""


class Child:
    """A child process measured with ``os.wait4`` (its own process group)."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path) -> None:
        self.argv = list(argv)
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            self.started = time.perf_counter()
            self.proc = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.usage: Usage | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, timeout_s: float | None = None) -> Usage:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            usage = self.poll(block=deadline is None)
            if usage is not None:
                return usage
            if deadline is not None and time.monotonic() > deadline:
                self.signal(signal.SIGKILL)
                deadline = None  # the next wait4 blocks until it is gone
                continue
            time.sleep(0.2)

    def poll(self, block: bool = False) -> Usage | None:
        """The child's usage once it has ended (reaped here), else None."""
        if self.usage is not None:
            return self.usage
        pid, status, ru = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        if not pid:
            return None
        code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = code
        self.usage = Usage(
            self.argv,
            round(time.perf_counter() - self.started, 2),
            round(ru.ru_utime + ru.ru_stime, 2),
            round(ru.ru_maxrss * 1024 / MB, 1),
            code,
            str(self.log),
        )
        return self.usage

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def tail(self, n: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def python() -> str:
    return sys.executable


def base_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This environment without any ``BF_*``/``DAGSTER_*`` setting, the checkout importable,
    plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF_", "DAGSTER_"))}
    path = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, DAGSTER_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_TELEMETRY="1")
    env.update(extra)
    return env


def _script(name: str) -> str:
    """A console script of this interpreter's environment, else from ``$PATH``."""
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() else (shutil.which(name) or name)


def bf_assets_cli() -> list[str]:
    script = Path(sys.executable).parent / "bf-assets"
    return [str(script)] if script.is_file() else [python(), "-m", "bf_assets.cli.main"]


# ------------------------------------------------------------------------------ (a) one process


@dataclass
class OneProcess:
    usage: Usage
    out: str
    exported: int | None
    verdict: str | None


def run_one_process(jobs: Path, work: Path, timeout_s: float | None = None) -> OneProcess:
    """``bf-assets release --runs jobs --out work/out`` on a fresh SQLite instance."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    env = base_env(
        {
            "DAGSTER_HOME": str(work / "dagster_home"),
            "BF_PROJECT_DIR": str(work),
            "XDG_CACHE_HOME": str(work / "cache"),
        }
    )
    argv = [*bf_assets_cli(), "release", "--runs", str(jobs), "--out", str(out)]
    child = Child(argv, env, work, work / "release.log")
    usage = child.wait(timeout_s)
    text = child.log.read_text(errors="replace")
    exported = verdict = None
    for line in text.splitlines():
        if line.startswith("trials exported:"):
            with contextlib.suppress(ValueError, IndexError):
                exported = int(line.split(":", 1)[1].split()[0])
        if line.startswith("release verdict:"):
            verdict = line.split(":", 1)[1].strip()
    if usage.exit_code != 0:
        raise ScaleoutError(f"one-process release exited {usage.exit_code}:\n{child.tail()}")
    return OneProcess(usage, str(out), exported, verdict)


# ------------------------------------------------------------------------------ services


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str
    db: str

    def env(self) -> dict[str, str]:
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.db,
        }


def _pg_admin(host: str, port: int, user: str, password: str) -> Any:
    import psycopg2

    conn = psycopg2.connect(
        host=host,
        port=port,
        user=user,
        password=password or None,
        dbname="postgres",
        connect_timeout=3,
    )
    conn.autocommit = True
    return conn


@contextlib.contextmanager
def postgres_database(host: str, port: int, user: str, password: str = "") -> Iterator[Postgres]:
    """A fresh database ``bf_scaleout_<hex>``, dropped afterwards."""
    try:
        from psycopg2 import sql
    except ImportError as exc:
        raise ScaleoutError("psycopg2 is missing (pip install -e '.[test]')") from exc
    try:
        conn = _pg_admin(host, port, user, password)
    except Exception as exc:
        raise ScaleoutError(f"PostgreSQL not reachable on {host}:{port} as {user}: {exc}") from exc
    name = f"bf_scaleout_{secrets.token_hex(4)}"
    with conn.cursor() as cur:
        cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield Postgres(host, port, user, password, name)
    finally:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            cur.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.close()


CLAIM_KEY = "bf-assets-scaleout:claim"


@contextlib.contextmanager
def redis_database(url: str) -> Iterator[str]:
    """An empty Redis database (1-15) of the server at ``url``, claimed with ``SET NX`` and
    flushed afterwards; yields its URL."""
    try:
        import redis
    except ImportError as exc:
        raise ScaleoutError("redis-py is missing (pip install 'dagster-celery[redis]')") from exc
    base = url.rstrip("/")
    token = f"{os.getpid()}-{time.time_ns()}"
    chosen = None
    for db in range(1, 16):
        client = redis.Redis.from_url(f"{base}/{db}", socket_connect_timeout=2, socket_timeout=5)
        try:
            if client.dbsize() == 0 and client.set(CLAIM_KEY, token, nx=True, ex=6 * 3600):
                chosen = db
                break
        except redis.RedisError as exc:
            raise ScaleoutError(f"Redis not usable at {base}: {exc}") from exc
        finally:
            client.close()
    if chosen is None:
        raise ScaleoutError(f"no empty Redis database among 1-15 at {base}")
    try:
        yield f"{base}/{chosen}"
    finally:
        client = redis.Redis.from_url(f"{base}/{chosen}", socket_timeout=5)
        with contextlib.suppress(redis.RedisError):
            client.flushdb()
        client.close()


# ------------------------------------------------------------------------------ (b) the split


@dataclass
class Worker:
    name: str
    queue: str
    child: Child
    usage: Usage | None = None

    def owns(self, node: str) -> bool:
        return node.startswith(f"{self.name}@")


def start_worker(name: str, env: Mapping[str, str], work: Path) -> Worker:
    queue = f"{name}-only"
    from bf_assets.defs.executors import celery_worker_argv

    argv = celery_worker_argv(python(), name, queue)
    return Worker(name, queue, Child(argv, env, work, work / f"{name}.log"))


def wait_ready(workers: Sequence[Worker], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(workers)
    while pending:
        for w in list(pending):
            if w.child.proc.poll() is not None:
                raise ScaleoutError(f"celery worker {w.name} exited:\n{w.child.tail()}")
            text = w.child.log.read_text(errors="replace") if w.child.log.exists() else ""
            if f"{w.name}@" in text and " ready." in text:
                pending.remove(w)
        if pending and time.monotonic() > deadline:
            raise ScaleoutError(f"celery workers not ready after {timeout_s:.0f} s")
        time.sleep(0.2)


def stop_workers(workers: Sequence[Worker]) -> None:
    """Warm shutdown (SIGTERM to each worker's own process group), then SIGKILL."""
    for w in workers:
        w.child.signal(signal.SIGTERM)
    for w in workers:
        w.usage = w.child.wait(timeout_s=90.0)


@dataclass
class RangeRun:
    partitions: list[str]
    trials: int
    queue: str
    usage: Usage


@dataclass
class Split:
    db: str
    broker: str
    launch: str  # how the runs were launched: execute or queue
    ranges: list[RangeRun]
    release: Usage
    helpers: list[Usage]
    workers: dict[str, Usage]
    worker_pids: dict[str, int]
    setup_s: float  # workers ready and partitions registered
    ingest_wall_s: float  # every range, one run per worker at a time
    wall_s: float  # from registering the partitions to the end of the release run
    cpu_s: float  # every process of the split
    peak_rss_mb: float  # the largest single process
    runs: list[dict[str, Any]]  # what the instance recorded (see ``inspect``)
    problems: list[str]
    out: str


def split_env(
    jobs: Path, work: Path, pg: Postgres, broker: str, config_dir: Path
) -> dict[str, str]:
    """The environment of every process of the split (run workers, Celery workers, helpers)."""
    path = os.pathsep.join([str(config_dir), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    return base_env(
        {
            **pg.env(),
            "DAGSTER_HOME": str(work / "dagster_home"),
            "BF_EXECUTOR": "celery",
            "BF_CELERY_BROKER": broker,
            "BF_CELERY_BACKEND": broker,
            "BF_RUN_ROOTS": str(jobs),
            "BF_WAREHOUSE": str(work / "warehouse"),
            "BF_PUBLISH_DIR": str(work / "out"),
            "BF_PROJECT_DIR": str(work),
            "XDG_CACHE_HOME": str(work / "cache"),
            "PYTHONPATH": path.rstrip(os.pathsep),
        }
    )


def _helper(
    cmd: str, args: Sequence[str], env: Mapping[str, str], work: Path, timeout_s: float = 3600
) -> tuple[Any, Usage]:
    """``scaleout.py _<cmd>`` in a child (Dagster is imported there, never here)."""
    result = work / f"{cmd}.json"
    argv = [python(), str(Path(__file__).resolve()), f"_{cmd}", "--result", str(result), *args]
    child = Child(argv, env, work, work / f"{cmd}.log")
    usage = child.wait(timeout_s)
    if usage.exit_code != 0:
        raise ScaleoutError(f"{cmd} failed (exit {usage.exit_code}):\n{child.tail()}")
    return json.loads(result.read_text()), usage


def _run_config(work: Path, label: str, queue: str) -> Path:
    """Run config: the run's Celery queue, the console quiet (every event stays in the log)."""
    config = {"execution": {"config": {"config_source": {"task_default_queue": queue}}}, **QUIET}
    cfg = work / f"{label}.run_config.json"
    cfg.write_text(json.dumps(config))
    return cfg


@dataclass(frozen=True)
class RunSpec:
    job: str
    tags: dict[str, str]
    queue: str
    label: str


class ExecuteLauncher:
    """Each run is a ``dagster job execute`` child: that process is the run worker (as a
    Kubernetes Job running the same command would be); its steps go to the Celery queue."""

    name = "execute"

    def __init__(self, env: Mapping[str, str], work: Path) -> None:
        self.env, self.work = env, work
        self.services: list[Usage] = []

    def start(self) -> None:
        pass

    def _start(self, spec: RunSpec) -> Child:
        return Child(
            [
                python(),
                "-m",
                "dagster",
                "job",
                "execute",
                *("-m", "bf_assets.definitions", "-a", "defs", "-j", spec.job),
                *("-c", str(_run_config(self.work, spec.label, spec.queue))),
                *("--tags", json.dumps(spec.tags)),
            ],
            self.env,
            REPO_ROOT,
            self.work / f"{spec.label}.log",
        )

    def run_all(
        self, specs: Sequence[RunSpec], timeout_s: float, in_flight: int | None = None
    ) -> list[Usage]:
        """Every run, in order, at most ``in_flight`` at once (default: all at once) and never
        two of one pinned queue at once (a worker takes one step at a time: a second run
        would only wait, holding its run worker)."""
        limit = max(1, in_flight or len(specs))
        waiting = list(range(len(specs)))
        running: dict[int, Child] = {}
        usages: dict[int, Usage] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while waiting or running:
                busy = {specs[i].queue for i in running} - {SHARED_QUEUE}
                for i in list(waiting):
                    if len(running) >= limit:
                        break
                    if specs[i].queue in busy:
                        continue
                    running[i] = self._start(specs[i])
                    waiting.remove(i)
                    if specs[i].queue != SHARED_QUEUE:
                        busy.add(specs[i].queue)
                for i, child in list(running.items()):
                    u = child.poll()
                    if u is None:
                        continue
                    del running[i]
                    usages[i] = u
                    if u.exit_code != 0:
                        raise ScaleoutError(
                            f"{specs[i].label} run failed (exit {u.exit_code}):\n{child.tail()}"
                        )
                if time.monotonic() > deadline:
                    raise ScaleoutError(f"runs still going after {timeout_s:.0f} s")
                time.sleep(0.2)
        finally:
            for child in running.values():  # a failure or the deadline: stop the rest
                child.signal(signal.SIGKILL)
                child.wait()
        return [usages[i] for i in range(len(specs))]

    def stop(self) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class QueueLauncher:
    """A deployment's path: a code server (``dagster api grpc``, the user-code deployment),
    ``dagster-daemon`` draining the instance's run queue (``QueuedRunCoordinator`` of the
    profile) with the instance's run launcher (``DefaultRunLauncher`` here: a run worker
    subprocess of the code server; ``K8sRunLauncher`` on Kubernetes: a pod), and each run
    submitted with ``dagster job launch`` (it returns once the run is queued)."""

    name = "queue"

    def __init__(self, env: Mapping[str, str], work: Path) -> None:
        self.env, self.work = env, work
        self.port = _free_port()
        self.grpc = ["--grpc-host", "127.0.0.1", "--grpc-port", str(self.port)]
        self.children: list[Child] = []
        self.services: list[Usage] = []

    def start(self) -> None:
        server = Child(
            [
                *(python(), "-m", "dagster", "api", "grpc"),
                *("-m", "bf_assets.definitions", "-a", "defs"),
                *("-h", "127.0.0.1", "-p", str(self.port)),
            ],
            self.env,
            REPO_ROOT,
            self.work / "code-server.log",
        )
        self.children.append(server)
        deadline = time.monotonic() + 120
        while True:
            probe = subprocess.run(
                [python(), "-m", "dagster", "api", "grpc-health-check", "-p", str(self.port)],
                env=dict(self.env),
                capture_output=True,
            )
            if probe.returncode == 0:
                break
            if server.proc.poll() is not None or time.monotonic() > deadline:
                raise ScaleoutError(f"the code server did not start:\n{server.tail()}")
            time.sleep(0.5)
        daemon = Child(
            [_script("dagster-daemon"), "run", *self.grpc],
            self.env,
            self.work,
            self.work / "daemon.log",
        )
        self.children.append(daemon)

    def run_all(
        self, specs: Sequence[RunSpec], timeout_s: float, in_flight: int | None = None
    ) -> list[Usage]:
        """Every run queued at once: the instance's run queue decides how many run together
        (``in_flight`` is the profile's ``max_concurrent_runs`` here, not this launcher's)."""
        ids = [str(uuid.uuid4()) for _ in specs]
        launches = [
            Child(
                [
                    *(python(), "-m", "dagster", "job", "launch", *self.grpc, "-j", spec.job),
                    *("-c", str(_run_config(self.work, spec.label, spec.queue))),
                    *("--tags", json.dumps(spec.tags), "--run-id", run_id),
                ],
                self.env,
                REPO_ROOT,
                self.work / f"{spec.label}.launch.log",
            )
            for spec, run_id in zip(specs, ids, strict=True)
        ]
        for launch, spec in zip(launches, specs, strict=True):
            u = launch.wait(600)
            if u.exit_code != 0:
                raise ScaleoutError(f"dagster job launch failed ({spec.label}):\n{launch.tail()}")
            self.services.append(u)
        done, usage = _helper(
            "wait",
            ["--run-ids", *ids, "--timeout", str(timeout_s)],
            self.env,
            self.work,
            timeout_s + 60,
        )
        self.services.append(usage)
        out = []
        for spec, run_id in zip(specs, ids, strict=True):
            r = done[run_id]
            if r["status"] != "SUCCESS":
                raise ScaleoutError(f"{spec.label} run {run_id} ended {r['status']}")
            # the run worker is a child of the code server: its CPU and RSS are the server's
            out.append(Usage([spec.job, run_id], r["wall_s"], 0.0, 0.0, 0))
        return out

    def stop(self) -> None:
        for c in reversed(self.children):
            c.signal(signal.SIGTERM)
        for c in reversed(self.children):
            self.services.append(c.wait(timeout_s=30))


def run_split(
    jobs: Path,
    work: Path,
    pg: Postgres,
    broker: str,
    *,
    n_ranges: int = 2,
    max_trials: int | None = None,
    pin: bool = True,
    launch: str = "execute",
    timeout_s: float = 4 * 3600,
) -> Split:
    """(b): the release over ``jobs`` as ingest runs of partition ranges on two Celery
    workers, then the release run, publishing into ``work/out``.  The ranges are at least
    ``n_ranges``, each of at most ``max_trials`` trials (``bf_assets.defs.ranges``: default
    ``$BF_INGEST_RUN_TRIALS`` or 2,000; 0: no bound), one run each, one run per worker at a
    time.  With ``pin``, range ``i`` goes to worker ``i mod 2``'s own queue (the split is
    visible and deterministic); otherwise every run uses the shared queue and the broker
    spreads the steps.  ``launch``: ``execute`` (``ExecuteLauncher``) or ``queue``
    (``QueueLauncher``)."""
    work.mkdir(parents=True, exist_ok=True)
    home = work / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copyfile(PROFILE, home / "dagster.yaml")
    config_dir = work / "celery_config"
    config_dir.mkdir(exist_ok=True)
    (config_dir / "dagster_celery_config.py").write_text(
        f"broker_url = {broker!r}\nresult_backend = {broker!r}\n"
    )
    env = split_env(jobs, work, pg, broker, config_dir)
    session = f"{socket.gethostname()}-{secrets.token_hex(4)}"
    launcher = (QueueLauncher if launch == "queue" else ExecuteLauncher)(env, work)
    started = time.perf_counter()

    # The schema is created and the partitions registered before any worker opens the
    # instance; the ranges come from the instance's partition order.
    bound = [] if max_trials is None else ["--max-trials", str(max_trials)]
    plan, reg = _helper("register", ["--ranges", str(n_ranges), *bound], env, work)
    workers = [start_worker(name, env, work) for name in WORKERS]
    helpers = [reg]
    try:
        launcher.start()
        wait_ready(workers, WORKER_START_TIMEOUT_S)
        setup_s = time.perf_counter() - started
        blocks: list[list[str]] = [r["partitions"] for r in plan]
        queues = [
            workers[i % len(workers)].queue if pin else SHARED_QUEUE for i in range(len(blocks))
        ]
        specs = [
            RunSpec("ingest_job", {SESSION_TAG: session, **r["tags"]}, q, f"ingest-range{i}")
            for i, (r, q) in enumerate(zip(plan, queues, strict=True))
        ]
        t0 = time.perf_counter()
        usages = launcher.run_all(specs, timeout_s, in_flight=len(workers))
        ingest_wall_s = time.perf_counter() - t0
        release = RunSpec("release_job", {SESSION_TAG: session}, SHARED_QUEUE, "release")
        [rel] = launcher.run_all([release], timeout_s)
        wall_s = time.perf_counter() - started
    finally:
        launcher.stop()
        stop_workers(workers)
    runs, insp = _helper("inspect", ["--session", session], env, work)
    helpers += [insp, *launcher.services]
    worker_pids = {w.name: w.child.pid for w in workers}
    pinned = {w.queue: w.name for w in workers} if pin else None
    problems = check_on_workers(runs, worker_pids, expected_ranges=blocks, pinned=pinned)
    ranges = [
        RangeRun(r["partitions"], r["trials"], q, u)
        for r, q, u in zip(plan, queues, usages, strict=True)
    ]
    everything = [*usages, rel, *helpers, *(w.usage for w in workers if w.usage)]
    return Split(
        db=pg.db,
        broker=broker,
        launch=launcher.name,
        ranges=ranges,
        release=rel,
        helpers=helpers,
        workers={w.name: w.usage for w in workers if w.usage},
        worker_pids=worker_pids,
        setup_s=round(setup_s, 2),
        ingest_wall_s=round(ingest_wall_s, 2),
        wall_s=round(wall_s, 2),
        cpu_s=round(sum(u.cpu_s for u in everything), 2),
        peak_rss_mb=max(u.peak_rss_mb for u in everything),
        runs=runs,
        problems=problems,
        out=str(work / "out"),
    )


def check_on_workers(
    runs: Sequence[Mapping[str, Any]],
    worker_pids: Mapping[str, int],
    *,
    expected_ranges: Sequence[Sequence[str]],
    pinned: Mapping[str, str] | None = None,
) -> list[str]:
    """What is wrong with the split as the instance recorded it (empty: nothing).

    Every ingest range is exactly one successful ``ingest_job`` run; there is one successful
    ``release_job`` run; every step that started ran on one of the workers (the engine event's
    Celery node is that worker's and the step's ``STEP_START`` pid is the worker's pid); with
    ``pinned`` (queue → worker), each range's steps ran on the worker of its queue; both workers
    ran each per-trial step (:data:`PER_TRIAL_STEPS`: the review and the rows)."""
    problems: list[str] = []
    by_pid = {pid: name for name, pid in worker_pids.items()}
    ingest = [r for r in runs if r["job"] == "ingest_job"]
    release = [r for r in runs if r["job"] == "release_job"]
    wanted = [(b[0], b[-1]) for b in expected_ranges]
    got = [(r["range"][0], r["range"][1]) for r in ingest if r.get("range")]
    if sorted(got) != sorted(wanted) or len(ingest) != len(wanted):
        problems.append(f"ingest runs cover {sorted(got)}, not one run per range {sorted(wanted)}")
    if len(release) != 1:
        problems.append(f"{len(release)} release_job run(s), not one")
    on: dict[str, set[str]] = {step: set() for step in PER_TRIAL_STEPS}
    for r in runs:
        rid = f"{r['job']} {r['run_id'][:8]}"
        if r["status"] != "SUCCESS":
            problems.append(f"{rid}: status {r['status']}")
        if not r["steps"]:
            problems.append(f"{rid}: no step started")
        for step, s in sorted(r["steps"].items()):
            node, pid = s.get("worker"), s.get("pid")
            owner = by_pid.get(pid) if pid is not None else None
            if owner is None:
                problems.append(f"{rid}: step {step} ran in pid {pid}, not in a Celery worker")
                continue
            if not node or not str(node).startswith(f"{owner}@"):
                problems.append(f"{rid}: step {step}: engine event names {node!r}, pid is {owner}")
            if r["job"] == "ingest_job":
                on.setdefault(step, set()).add(owner)
                queue = r.get("queue")
                if pinned and queue in pinned and pinned[queue] != owner:
                    problems.append(f"{rid}: step {step} on {owner}, pinned to {pinned[queue]}")
    if len(expected_ranges) >= len(worker_pids):
        for step in PER_TRIAL_STEPS:
            if on[step] != set(worker_pids):
                problems.append(f"ingest step {step} ran on {sorted(on[step])} only")
    return problems


# ------------------------------------------------------------------------------ (c) the bytes


@dataclass
class Comparison:
    a: str
    b: str
    files: int
    bytes: int
    same: bool
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    release_dir_a: str = ""
    release_dir_b: str = ""


def _files(root: Path) -> dict[str, Path]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = p
    return out


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def compare_trees(a: Path, b: Path) -> Comparison:
    """Every file under the published datasets ``a`` and ``b`` (links to the release
    directories are followed), compared by content."""
    ra, rb = a.resolve(), b.resolve()
    if not ra.is_dir() or not rb.is_dir():
        missing = [str(p) for p in (a, b) if not p.resolve().is_dir()]
        raise ScaleoutError(f"no published dataset at {', '.join(missing)}")
    fa, fb = _files(ra), _files(rb)
    common = sorted(set(fa) & set(fb))
    differ = [
        rel
        for rel in common
        if fa[rel].stat().st_size != fb[rel].stat().st_size or _digest(fa[rel]) != _digest(fb[rel])
    ]
    only_a, only_b = sorted(set(fa) - set(fb)), sorted(set(fb) - set(fa))
    return Comparison(
        str(a),
        str(b),
        len(fa),
        sum(p.stat().st_size for p in fa.values()),
        not (differ or only_a or only_b),
        only_a,
        only_b,
        differ,
        ra.name,
        rb.name,
    )


def exported_rows(out: Path) -> int | None:
    """Exported trials of a published dataset (its manifest's ``rollouts`` config)."""
    try:
        manifest = json.loads((out / "meta" / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    splits = (manifest.get("configs") or {}).get("rollouts") or {}
    return sum(int(v) for v in splits.values()) if splits else None


# ------------------------------------------------------------------------------ helpers (children)


def _register(result: Path, n_ranges: int, max_trials: int | None = None) -> None:
    """Create the instance's storage, register one partition per job directory, and cut the
    instance's partition order into ranges balanced by trials."""
    from bf_assets.defs.ranges import register_ranges

    ranges = register_ranges(n_ranges, max_trials=max_trials)
    result.write_text(json.dumps(ranges))


def _inspect(result: Path, session: str) -> None:
    """The runs of ``session``: job, status, range, queue, and per started step the Celery
    node of its engine event and the pid of its ``STEP_START``."""
    import dagster as dg

    from bf_assets.defs.ranges import PARTITION, RANGE_END, RANGE_START

    instance = dg.DagsterInstance.get()
    out = []
    for run in instance.get_runs(filters=dg.RunsFilter(tags={SESSION_TAG: session})):
        tags = run.tags
        rng = None
        if RANGE_START in tags:
            rng = [tags[RANGE_START], tags[RANGE_END]]
        elif PARTITION in tags:
            rng = [tags[PARTITION], tags[PARTITION]]
        steps: dict[str, dict[str, Any]] = {}
        queues: set[str] = set()
        for record in instance.all_logs(run.run_id):
            ev = record.dagster_event
            if ev is None or ev.step_key is None:
                continue
            s = steps.setdefault(ev.step_key, {})
            if ev.event_type == dg.DagsterEventType.STEP_START:
                s["pid"] = ev.pid
            elif ev.event_type == dg.DagsterEventType.ENGINE_EVENT:
                data = ev.engine_event_data
                node = data.metadata.get("Celery worker") if data is not None else None
                if node is not None:
                    s["worker"] = str(getattr(node, "value", node))
                msg = ev.message or ""
                if msg.startswith("Submitting celery task") and 'to queue "' in msg:
                    queues.add(msg.rsplit('to queue "', 1)[1].rstrip('".'))
        started = {k: v for k, v in steps.items() if "pid" in v}
        out.append(
            {
                "run_id": run.run_id,
                "job": run.job_name,
                "status": run.status.value,
                "range": rng,
                "queue": next(iter(queues)) if len(queues) == 1 else sorted(queues),
                "steps": started,
            }
        )
    out.sort(key=lambda r: (r["job"], r["range"] or []))
    result.write_text(json.dumps(out))


def _wait(result: Path, run_ids: Sequence[str], timeout_s: float) -> None:
    """Wait until every run of ``run_ids`` is finished; their status and wall time."""
    import dagster as dg

    instance = dg.DagsterInstance.get()
    deadline = time.monotonic() + timeout_s
    out: dict[str, dict[str, Any]] = {}
    while len(out) < len(run_ids):
        for run_id in run_ids:
            if run_id in out:
                continue
            record = instance.get_run_record_by_id(run_id)
            if record is None or not record.dagster_run.is_finished:
                continue
            start, end = record.start_time, record.end_time
            out[run_id] = {
                "status": record.dagster_run.status.value,
                "wall_s": round(end - start, 2) if start and end else None,
            }
        if len(out) < len(run_ids):
            if time.monotonic() > deadline:
                raise SystemExit(f"runs not finished after {timeout_s:.0f} s")
            time.sleep(1.0)
    result.write_text(json.dumps(out))


# ------------------------------------------------------------------------------ the command


def _generate(work: Path, n: int) -> Path:
    if str(REPO_ROOT) not in sys.path:  # bf_sample sits beside the package, uninstalled
        sys.path.insert(0, str(REPO_ROOT))
    from bf_sample.generator import generate_corpus

    root = work / f"generated-{n}"
    if not (root / "jobs").is_dir():
        generate_corpus(root, n, seed=0, healthy_fraction=0.8)
    return root / "jobs"


def _jobs_of(corpus: Path) -> Path:
    return corpus / "jobs" if (corpus / "jobs").is_dir() else corpus


def _fmt(u: Usage) -> str:
    return f"wall {u.wall_s:8.1f} s  cpu {u.cpu_s:8.1f} s  peak RSS {u.peak_rss_mb:7.0f} MB  exit {u.exit_code}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=None, help=f"corpus (default {DEFAULT_CORPUS})")
    p.add_argument("--quick", action="store_true", help=f"a generated {QUICK_TRIALS}-trial corpus")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder")
    p.add_argument("--ranges", type=int, default=2, help="partition ranges at least (default 2)")
    p.add_argument(
        "--max-trials",
        type=int,
        default=None,
        help="trials per range at most (default $BF_INGEST_RUN_TRIALS or 2,000; 0: no bound, "
        "exactly --ranges ranges)",
    )
    p.add_argument("--shared-queue", action="store_true", help="no pinning of ranges to workers")
    p.add_argument(
        "--launch",
        choices=("execute", "queue"),
        default="execute",
        help="runs as `dagster job execute` children (default), or submitted with `dagster job "
        "launch` to the run queue of a dagster-daemon and a code server",
    )
    p.add_argument("--skip-one-process", action="store_true", help="skip (a)")
    p.add_argument("--skip-split", action="store_true", help="skip (b) and (c)")
    p.add_argument("--reference", type=Path, help="a published dataset to compare B with")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--pg-host", default="127.0.0.1")
    p.add_argument("--pg-port", type=int, default=5432)
    p.add_argument("--pg-user", default="postgres")
    p.add_argument("--result", type=Path, help="write the figures as JSON here")
    args = p.parse_args(argv)

    work = args.work or Path(__import__("tempfile").mkdtemp(prefix="bf-scaleout-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.quick:
        jobs = _generate(work, QUICK_TRIALS)
    else:
        corpus = args.corpus or DEFAULT_CORPUS
        if not corpus.exists():
            raise ScaleoutError(f"no corpus at {corpus} (give --corpus, or --quick)")
        jobs = _jobs_of(corpus)
    n_trials = sum(1 for j in jobs.iterdir() if j.is_dir() for t in j.iterdir() if t.is_dir())
    print(f"corpus: {jobs} ({n_trials:,} trials)  work: {work}", flush=True)
    report: dict[str, Any] = {"corpus": str(jobs), "trials": n_trials}
    reference = args.reference
    try:
        if not args.skip_one_process:
            print("(a) one process: bf-assets release ...", flush=True)
            one = run_one_process(jobs, work / "A")
            report["one_process"] = asdict(one)
            print(f"    {_fmt(one.usage)}  exported {one.exported}", flush=True)
            reference = Path(one.out)
        if not args.skip_split:
            print("(b) partition ranges on two Celery workers ...", flush=True)
            with (
                postgres_database(args.pg_host, args.pg_port, args.pg_user) as pg,
                redis_database(args.redis) as broker,
            ):
                split = run_split(
                    jobs,
                    work / "B",
                    pg,
                    broker,
                    n_ranges=args.ranges,
                    max_trials=args.max_trials,
                    pin=not args.shared_queue,
                    launch=args.launch,
                )
            report["split"] = asdict(split)
            shown = split.ranges if len(split.ranges) <= 6 else []
            for i, r in enumerate(shown):
                print(
                    f"    range {i}: {r.partitions[0]} .. {r.partitions[-1]} "
                    f"({len(r.partitions)} jobs, {r.trials:,} trials, queue {r.queue})  {_fmt(r.usage)}"
                )
            if not shown:
                trials = [r.trials for r in split.ranges]
                print(
                    f"    {len(split.ranges)} ranges of {min(trials):,}-{max(trials):,} trials, "
                    f"one run each, one per worker at a time: run wall "
                    f"{sum(r.usage.wall_s for r in split.ranges):.1f} s in all, CPU "
                    f"{sum(r.usage.cpu_s for r in split.ranges):.1f} s, largest run "
                    f"{max(r.usage.peak_rss_mb for r in split.ranges):.0f} MB"
                )
            print(f"    release run   {_fmt(split.release)}")
            for name, u in split.workers.items():
                print(f"    worker {name}  {_fmt(u)} (stopped with SIGTERM)")
            print(
                f"    split: setup {split.setup_s:.1f} s, ingest (every range) "
                f"{split.ingest_wall_s:.1f} s, wall {split.wall_s:.1f} s, CPU (all processes) "
                f"{split.cpu_s:.1f} s, largest process {split.peak_rss_mb:.0f} MB"
            )
            for r in split.runs:
                nodes = sorted({s.get("worker", "?") for s in r["steps"].values()})
                print(
                    f"    run {r['run_id'][:8]} {r['job']:<11} {r['status']:<8} "
                    f"{len(r['steps'])} step(s) on {', '.join(nodes)}"
                )
            if split.problems:
                print("    NOT ON THE WORKERS: " + "; ".join(split.problems))
            print(f"    exported {exported_rows(Path(split.out))}")
            if reference is not None:
                cmp = compare_trees(reference, Path(split.out))
                report["comparison"] = asdict(cmp)
                verdict = "byte-identical" if cmp.same else "DIFFERENT"
                print(
                    f"(c) {cmp.files} files, {cmp.bytes / MB:.1f} MB: {verdict} "
                    f"(release dirs {cmp.release_dir_a} / {cmp.release_dir_b})"
                )
                for label, items in (("only in A", cmp.only_a), ("only in B", cmp.only_b)):
                    if items:
                        print(f"    {label}: {', '.join(items[:10])}")
                if cmp.differ:
                    print(f"    differ: {', '.join(cmp.differ[:10])}")
            ok = not split.problems and report.get("comparison", {}).get("same", True)
            report["ok"] = ok
        if args.result:
            args.result.write_text(json.dumps(report, indent=2) + "\n")
        return 0 if report.get("ok", True) else 1
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def _helper_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=("_register", "_inspect", "_wait"))
    p.add_argument("--run-ids", nargs="*", default=[])
    p.add_argument("--timeout", type=float, default=4 * 3600)
    p.add_argument("--result", type=Path, required=True)
    p.add_argument("--ranges", type=int, default=2)
    p.add_argument("--max-trials", type=int, default=None)
    p.add_argument("--session", default="")
    args = p.parse_args(argv)
    if args.cmd == "_register":
        _register(args.result, args.ranges, args.max_trials)
    elif args.cmd == "_wait":
        _wait(args.result, args.run_ids, args.timeout)
    else:
        _inspect(args.result, args.session)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        sys.exit(_helper_main(sys.argv[1:]))
    try:
        sys.exit(main())
    except ScaleoutError as exc:
        sys.stderr.write(f"scaleout: {exc}\n")
        sys.exit(2)
