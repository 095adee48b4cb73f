"""Where a measured ``bf-assets release`` spent its wall time, read back from its Dagster
instance after it ended.

A release runs the ingest runs (one per range of job partitions), then ``release_job``,
whose ``trial_pages`` step waits for the pages rendered alongside curation and the publish
gate.  The bench measures the whole command; this module reads the instance the command
left (every run's start and end, every step's duration) so each release size can say what
its time went to: the ingest runs, each step of the release job, and what ran outside any
run (importing Dagster, creating the instance, writing the published folder, the exit).

``read(home, env)`` runs :data:`SOURCE` in a child interpreter (Dagster is imported there,
never in the bench) and returns the plain records; :func:`phases` turns them into figures;
:func:`median_phases` and :func:`describe` summarise several runs of one size.  A release
whose instance cannot be read gives ``None``: the breakdown is a note beside the figures,
never a reason for a run to fail.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

INGEST_JOB = "ingest_job"
RELEASE_JOB = "release_job"
PAGES_STEP = "trial_pages"
READ_TIMEOUT_S = 300

# Run in a child with the release's environment: prints every run of the instance at
# DAGSTER_HOME as JSON (job, status, start, end, each step's seconds).
SOURCE = r"""
import json
from dagster import DagsterInstance

with DagsterInstance.get() as instance:
    out = []
    for rec in instance.get_run_records():
        run = rec.dagster_run
        stats = instance.get_run_step_stats(run.run_id)
        steps = {  # in the order the steps started
            s.step_key: s.end_time - s.start_time
            for s in sorted(stats, key=lambda s: s.start_time or 0.0)
            if s.start_time is not None and s.end_time is not None
        }
        out.append(
            {
                "job": run.job_name,
                "status": run.status.value,
                "start": rec.start_time,
                "end": rec.end_time,
                "steps": steps,
            }
        )
print(json.dumps(out))
"""


def read(env: Mapping[str, str], cwd: Path) -> list[dict[str, Any]] | None:
    """The runs of the instance at ``env["DAGSTER_HOME"]``; None when it cannot be read."""
    if not env.get("DAGSTER_HOME"):
        return None
    try:
        done = subprocess.run(
            [sys.executable, "-c", SOURCE],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=READ_TIMEOUT_S,
            check=False,
        )
        runs = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return runs if isinstance(runs, list) else None


def phases(
    runs: Sequence[Mapping[str, Any]], wall_s: float, since: float | None = None
) -> dict[str, Any] | None:
    """Figures of one release from its runs and its measured wall time: the ingest runs
    (how many, first start to last end), the release job (its wall and each step's), the
    wait for the pages, and the wall outside every run.  ``since`` (epoch seconds): only
    the runs that started from then on (a second release into the same instance).  None
    when no such run has both ends."""
    timed = [
        r
        for r in runs
        if r.get("start") is not None
        and r.get("end") is not None
        and (since is None or float(r["start"]) >= since)
    ]
    if not timed:
        return None
    ingest = [r for r in timed if r.get("job") == INGEST_JOB]
    release = [r for r in timed if r.get("job") == RELEASE_JOB]
    first = min(float(r["start"]) for r in timed)
    last = max(float(r["end"]) for r in timed)
    out: dict[str, Any] = {
        "runs": len(timed),
        "ingest_runs": len(ingest),
        "ingest_s": _span(ingest),
        "release_job_s": _span(release),
        "steps_s": {},
        "outside_runs_s": max(0.0, wall_s - (last - first)),
    }
    for r in release:
        for step, secs in (r.get("steps") or {}).items():
            out["steps_s"][step] = out["steps_s"].get(step, 0.0) + float(secs)
    out["pages_wait_s"] = out["steps_s"].get(PAGES_STEP)
    return out


def _span(runs: Sequence[Mapping[str, Any]]) -> float | None:
    if not runs:
        return None
    return max(float(r["end"]) for r in runs) - min(float(r["start"]) for r in runs)


def median_phases(each: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The median of every figure over the runs of one size that have figures."""
    got = [p for p in each if p]
    if not got:
        return None

    def med(values: Sequence[float | None]) -> float | None:
        nums = [float(v) for v in values if v is not None]
        return statistics.median(nums) if nums else None

    steps = list(dict.fromkeys(s for p in got for s in p["steps_s"]))  # in run order
    return {
        "of_runs": len(got),
        "ingest_runs": med([p["ingest_runs"] for p in got]),
        "ingest_s": med([p["ingest_s"] for p in got]),
        "release_job_s": med([p["release_job_s"] for p in got]),
        "steps_s": {s: med([p["steps_s"].get(s) for p in got]) for s in steps},
        "pages_wait_s": med([p["pages_wait_s"] for p in got]),
        "outside_runs_s": med([p["outside_runs_s"] for p in got]),
    }


def describe(p: Mapping[str, Any] | None) -> str:
    """One line: where the release's wall time went (medians)."""
    if not p:
        return "where the time went: the instance could not be read"

    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f} s"

    steps = ", ".join(
        f"{k} {s(v)}" + (" (the wait for the pages rendered alongside)" if k == PAGES_STEP else "")
        for k, v in p["steps_s"].items()
    )
    n = p["ingest_runs"]
    runs = "?" if n is None else f"{n:g}"
    return (
        f"where the time went (median of {p['of_runs']}): ingest {s(p['ingest_s'])} in "
        f"{runs} run(s); release job {s(p['release_job_s'])}: {steps}; outside any run "
        f"{s(p['outside_runs_s'])}"
    )
