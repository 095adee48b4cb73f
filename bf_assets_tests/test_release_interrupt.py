"""A release told to stop (SIGTERM, Ctrl-C) during an ingest run stops there: no further run
starts, nothing is published, no process of it is left, and the run's job partitions are
read again by the next release."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
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


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_a_release_stopped_during_an_ingest_run_starts_no_other(tmp_path: Path) -> None:
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
    proc = subprocess.Popen(
        [sys.executable, "-m", "bf_assets.cli.main", "release", "--runs", str(jobs)]
        + ["--out", str(out)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: every process it starts
    )
    db = home / "history" / "runs.db"
    deadline = time.monotonic() + 240
    stopped_at: list[tuple[str, str]] = []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            runs = _runs(db)
            # the second ingest run is going: stop the release inside it
            if len(runs) >= 2 and runs[-1] == ("ingest_job", "STARTED"):
                os.killpg(proc.pid, signal.SIGTERM)
                stopped_at = runs
                break
            time.sleep(0.01)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert stopped_at, f"no ingest run was seen going (exit {proc.returncode}): {err[-2000:]}"
    assert proc.returncode != 0
    runs = _runs(db)
    # no run was started after the one the signal reached, and no release job
    assert len(runs) == len(stopped_at), runs
    assert all(job == "ingest_job" for job, _ in runs)
    assert runs[-1][1] != "SUCCESS"
    assert "interrupted" in err or proc.returncode == -signal.SIGTERM, err[-2000:]
    deadline = time.monotonic() + 30  # every process of the release ends with it
    while alive(proc.pid, group=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(proc.pid, group=True)
    assert not out.exists() or not any(out.iterdir())  # nothing was published
