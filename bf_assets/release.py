"""``bf-assets release``: run the release build through Dagster on any run roots.

Uses the project-local instance (``.dagster_home`` under the repo, SQLite, telemetry off)
unless ``DAGSTER_HOME`` is set.  Registers one partition per job directory, materializes the
graph for each, and writes the review report (Markdown and JSON) plus the trial tables.
The curation and publish stages join this build as they land; it runs what exists.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import pandas as pd

from bf_assets.ingest.discovery import discover_jobs

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RUNS = REPO_ROOT / "data" / "runs" / "jobs"
DEFAULT_OUT = REPO_ROOT / "data" / "published"


@dataclass(slots=True)
class ReleaseResult:
    ok: bool
    report_md: Path
    report_json: Path
    out_dir: Path
    verdict: str
    failed_partitions: list[str]


def ensure_instance_home() -> Path:
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        home = str(REPO_ROOT / ".dagster_home")
        os.environ["DAGSTER_HOME"] = home
    Path(home).mkdir(parents=True, exist_ok=True)
    cfg = Path(home) / "dagster.yaml"
    if not cfg.exists():
        shutil.copyfile(REPO_ROOT / "dagster.yaml", cfg)
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    return Path(home)


def run_release(runs: Sequence[str], out_dir: str | None = None) -> ReleaseResult:
    roots = [str(Path(r).resolve()) for r in runs] or [str(DEFAULT_RUNS)]
    os.environ["BF_RUN_ROOTS"] = os.pathsep.join(roots)
    ensure_instance_home()
    import dagster as dg

    from bf_assets.definitions import defs
    from bf_assets.defs.partitions import job_partitions
    from bf_assets.reporting import write_report

    out = Path(out_dir).resolve() if out_dir else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    instance = dg.DagsterInstance.get()
    jobs = discover_jobs(roots)
    known = set(instance.get_dynamic_partitions(job_partitions.name or "trial_jobs"))
    new = [j.key for j in jobs if j.key not in known]
    if new:
        instance.add_dynamic_partitions(job_partitions.name or "trial_jobs", new)
    job = defs.resolve_job_def("ingest_job")
    validated, findings, failed = [], [], []
    for j in jobs:
        res = job.execute_in_process(
            partition_key=j.key, instance=instance, raise_on_error=False, tags={"release": "local"}
        )
        if not res.success:
            failed.append(j.key)
            continue
        validated.append(res.asset_value("validated_trials"))
        findings.append(res.asset_value("findings"))
    vdf = pd.concat(validated, ignore_index=True) if validated else pd.DataFrame()
    fdf = pd.concat(findings, ignore_index=True) if findings else pd.DataFrame()
    md, js, verdict = write_report(vdf, fdf, roots=roots, out_dir=out / "report")
    return ReleaseResult(not failed, md, js, out, verdict, failed)


def summary_line(r: ReleaseResult) -> str:
    return orjson.dumps(
        {"verdict": r.verdict, "dataset": str(r.out_dir), "report": str(r.report_md)}
    ).decode()
