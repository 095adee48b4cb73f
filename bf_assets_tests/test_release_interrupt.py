"""A release told to stop (SIGTERM, Ctrl-C) during an ingest run stops there: no further run
starts, nothing is published, no process of it is left, and the run's job partitions are
read again by the next release."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from benchkit import REPO, run_bench
from prockit import alive

from bf_assets.defaults import default_file
from bf_assets.defs.ranges import INGEST_RUN_TRIALS_ENV

JOBS = 6
TRIALS = 600  # the bench's generator: 100 trials a job directory


def _corpus(work: Path) -> Path:
    rb = run_bench()
    corpus = rb.CorpusFactory(work, None).trials(TRIALS)
    assert len([p for p in corpus.jobs.iterdir() if p.is_dir()]) == JOBS
    return corpus.jobs


def _runs(db: Path) -> list[tuple[str, str]]:
    """(job, status) of every run of the instance, oldest first."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(
                "SELECT pipeline_name, status FROM runs ORDER BY create_timestamp, id"
            ).fetchall()
    except sqlite3.OperationalError:  # not made yet
        return []


def _release(tmp_path: Path, driver: str | None = None) -> tuple[subprocess.Popen[str], Path, Path]:
    """A real ``bf-assets release`` of six job directories (one ingest run each), in a
    process group of its own: the process, its runs database and its ``--out``.  With
    ``driver``: that Python source runs instead of ``-m bf_assets.cli.main`` (it gets the
    release's arguments in ``sys.argv[1:]``)."""
    jobs = _corpus(tmp_path / "work")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes(default_file("dagster.yaml"))
    out = tmp_path / "out"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "BF_RUN_ROOTS": "",
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
        INGEST_RUN_TRIALS_ENV: "100",  # one run per job directory: six runs
        "PYTHONPATH": str(REPO),
    }
    start = ["-c", driver] if driver is not None else ["-m", "bf_assets.cli.main"]
    proc = subprocess.Popen(
        [sys.executable, *start, "release", "--runs", str(jobs), "--out", str(out)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: every process it starts
    )
    return proc, home / "history" / "runs.db", out


def _stop_when(
    proc: subprocess.Popen[str],
    db: Path,
    going: Callable[[list[tuple[str, str]]], bool],
    *,
    group: bool = True,
) -> tuple[list[tuple[str, str]], str]:
    """SIGTERM to the release's process group (``group=False``: to its first process alone,
    as ``kill PID`` does) as soon as its runs satisfy ``going``; the runs then and its
    stderr (empty runs: it ended before)."""
    deadline = time.monotonic() + 240
    stopped_at: list[tuple[str, str]] = []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            runs = _runs(db)
            if going(runs):
                if group:
                    os.killpg(proc.pid, signal.SIGTERM)
                else:
                    os.kill(proc.pid, signal.SIGTERM)
                stopped_at = runs
                break
            time.sleep(0.01)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return stopped_at, err


def _ended_whole(proc: subprocess.Popen[str], out: Path) -> None:
    """Every process of the release ended with it, and nothing was published."""
    deadline = time.monotonic() + 30
    while alive(proc.pid, group=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(proc.pid, group=True)
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_a_release_stopped_during_an_ingest_run_starts_no_other(tmp_path: Path) -> None:
    proc, db, out = _release(tmp_path)
    # the second ingest run is going: stop the release inside it
    stopped_at, err = _stop_when(
        proc, db, lambda runs: len(runs) >= 2 and runs[-1] == ("ingest_job", "STARTED")
    )
    assert stopped_at, f"no ingest run was seen going (exit {proc.returncode}): {err[-2000:]}"
    assert proc.returncode != 0
    runs = _runs(db)
    # no run was started after the one the signal reached, and no release job
    assert len(runs) == len(stopped_at), runs
    assert all(job == "ingest_job" for job, _ in runs)
    assert runs[-1][1] != "SUCCESS"
    assert "interrupted" in err or proc.returncode == -signal.SIGTERM, err[-2000:]
    _ended_whole(proc, out)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
@pytest.mark.parametrize("group", [True, False], ids=["kill-group", "kill-pid"])
def test_a_release_stopped_during_its_release_job_says_interrupted(
    tmp_path: Path, group: bool
) -> None:
    """Stopped once the release job (curation, the gate, publishing) is under way, by a
    SIGTERM to all its processes or to the one started (which waits for the release job's
    process): the same outcome as during an ingest run, not a failed or finished release."""
    proc, db, out = _release(tmp_path)
    stopped_at, err = _stop_when(
        proc, db, lambda runs: ("release_job", "STARTED") in runs, group=group
    )
    assert stopped_at, f"no release job was seen going (exit {proc.returncode}): {err[-2000:]}"
    assert proc.returncode != 0
    assert _runs(db)[-1] == ("release_job", "CANCELED") or _runs(db)[-1][1] == "FAILURE"
    assert "the release failed" not in err, err[-2000:]
    assert err.endswith("bf-assets: interrupted\n") or proc.returncode == -signal.SIGTERM, err[
        -2000:
    ]
    _ended_whole(proc, out)


# A release whose review worker is killed outright once (the out-of-memory killer, kill -9):
# the first trial a worker (not the release's own process) reviews ends it.
LOST_WORKER = textwrap.dedent(
    """
    import os, signal, sys
    import bf_assets.corpus.inventory as inventory

    main_pid, real = os.getpid(), inventory.inventory_review
    marker = os.path.join(os.getcwd(), "worker-killed")

    def lost(ref, options):
        if os.getpid() != main_pid:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(ref, options)

    inventory.inventory_review = lost
    from bf_assets.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers")
def test_a_release_whose_review_worker_is_killed_fails_and_publishes_nothing(
    tmp_path: Path,
) -> None:
    """It used to wait for ever: the standard pool asked the other worker, which ignores
    SIGTERM, to stop and waited for it."""
    proc, db, out = _release(tmp_path, LOST_WORKER)
    try:
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (tmp_path / "worker-killed").exists(), err[-2000:]  # a worker was killed
    assert proc.returncode == 2, err[-2000:]
    assert "the release failed" in err and "killed by SIGKILL" in err, err[-2000:]
    assert not any(job == "release_job" for job, _ in _runs(db))
    _ended_whole(proc, out)
