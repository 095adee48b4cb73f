"""Deterministic sample data: the committed sample (``generate_jobs_root``) and benchmark corpora.

Same arguments ⇒ byte-identical tree: every random choice comes from ``random.Random(seed)``,
timestamps derive from the job names, and nothing reads the wall clock.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

from bf_sample import artifacts as A
from bf_sample.harness import HARNESSES
from bf_sample.heavy import write_heavy_trial
from bf_sample.plan import (
    HARNESSES as HARNESS_KEYS,
)
from bf_sample.plan import (
    SANDBOXES,
    SKILL_MODES,
    UNHEALTHY_SCENARIOS,
    PlannedTrial,
    planned,
)
from bf_sample.tasks import TASK_NAMES, write_tasks
from bf_sample.trial import JOB_FORMAT, job_start, write_trial

GENERATOR = "bf_sample/1"

__all__ = [
    "PlannedTrial",
    "generate_corpus",
    "generate_jobs_root",
    "write_heavy_trial",
    "write_trial",
]

JOB_A = "2026-06-01__10-00-00"  # finished: has the job-level results.jsonl
JOB_B = "2026-06-02__14-30-00"  # killed mid-run: an incomplete rollout, no job-level files

CX, CL, OH, GM = "codex-acp", "claude-agent-acp", "openhands", "gemini"
W, N = "with-skill", "no-skill"
DK, DT = "docker", "daytona"
CITE, SALES, LOGS = "citation-check", "sales-report", "log-anomaly"

# (job, scenario, task, harness, skill mode, sandbox, n_exchanges, options)
SAMPLE: list[tuple[str, str, str, str, str, str, int, dict[str, Any]]] = [
    (JOB_A, "pass", CITE, CX, W, DT, 4, {}),
    (JOB_A, "pass", CITE, CX, N, DK, 2, {}),
    (JOB_A, "pass", SALES, CL, W, DK, 3, {}),
    (JOB_A, "pass", SALES, CL, N, DT, 2, {}),
    (JOB_A, "pass", LOGS, OH, W, DT, 4, {}),
    (JOB_A, "pass", LOGS, OH, N, DK, 3, {"provenance": False}),
    (JOB_A, "fail", SALES, CX, W, DK, 3, {}),
    (JOB_A, "fail", CITE, OH, N, DT, 2, {}),
    (JOB_A, "fail", LOGS, CL, N, DK, 3, {}),
    (JOB_A, "normal_timeout", CITE, OH, W, DK, 3, {}),
    (JOB_A, "normal_timeout", LOGS, CL, W, DT, 3, {}),
    (JOB_A, "verifier_crash", CITE, CL, W, DK, 3, {}),
    (JOB_A, "partial_timeout", SALES, OH, N, DT, 3, {}),
    (JOB_A, "sandbox_failure", SALES, CX, W, DT, 2, {}),
    (JOB_A, "api_rate_limit", CITE, CL, N, DK, 2, {}),
    (JOB_A, "missing_llm", SALES, OH, W, DK, 3, {}),
    (JOB_A, "missing_rows", LOGS, CX, N, DT, 2, {}),
    (JOB_A, "bad_llm_line", CITE, OH, W, DT, 3, {}),
    (JOB_A, "ready_mismatch", LOGS, CX, W, DK, 3, {}),
    (JOB_A, "steps_mismatch", SALES, CL, W, DT, 3, {}),
    (JOB_A, "cross_mismatch", CITE, OH, N, DK, 2, {}),
    (JOB_A, "no_usage", SALES, CX, N, DK, 2, {}),
    (JOB_A, "oracle", CITE, "oracle", N, DK, 0, {}),
    (JOB_A, "oracle", SALES, "oracle", N, DK, 0, {}),
    (JOB_B, "pass", LOGS, GM, W, DT, 3, {}),
    (JOB_B, "pass", SALES, CX, W, DK, 4, {"duplicate_exchange": 1}),
    (JOB_B, "pass", SALES, OH, N, DT, 2, {}),
    (JOB_B, "fail", CITE, CL, W, DT, 3, {"provenance": False}),
    (JOB_B, "normal_timeout", LOGS, CX, N, DT, 3, {}),
    (JOB_B, "retry_superseded", LOGS, OH, W, DK, 3, {"retry_errored": True}),
    (JOB_B, "retry_superseded", LOGS, OH, W, DK, 3, {}),
    (JOB_B, "oracle", LOGS, "oracle", N, DT, 0, {}),
    (JOB_B, "pass", CITE, CL, N, DK, 2, {}),
    (JOB_B, "incomplete", SALES, CL, N, DT, 3, {}),
]


def _hex8(rng: random.Random, used: set[str]) -> str:
    while True:
        value = f"{rng.getrandbits(32):08x}"
        if value not in used:
            used.add(value)
            return value


def write_manifest(out: Path, seed: int, plans: list[PlannedTrial]) -> None:
    doc = {"generator": GENERATOR, "seed": seed, "trials": [p.to_dict() for p in plans]}
    A.write_text(out / "sample-manifest.json", json.dumps(doc, indent=2) + "\n")


def write_job_files(job_dir: Path) -> None:
    """The files ``Evaluation.run()`` aggregates at job end (artifacts.md §3.11), minus summary.json."""
    rows: list[dict[str, Any]] = []
    verifiers: list[str] = []
    adp: list[str] = []
    ids: dict[str, int] = {}
    for rdir in sorted(p for p in job_dir.iterdir() if p.is_dir()):
        results = rdir / "results.jsonl"
        if results.is_file():
            for line in results.read_text().splitlines():
                row = json.loads(line)
                row["example_id"] = ids.setdefault(row["info"]["task_id"], len(ids))
                rows.append(row)
        for name, sink in (("verifiers.jsonl", verifiers), ("adp.jsonl", adp)):
            path = rdir / "trainer" / name
            if path.is_file():
                sink.append(path.read_text())
    A.write_rows(job_dir / "results.jsonl", rows)
    A.write_text(job_dir / "verifiers.jsonl", "".join(verifiers))
    A.write_text(job_dir / "adp.jsonl", "".join(adp))


def generate_jobs_root(out: Path, *, seed: int = 7) -> list[PlannedTrial]:
    """Write the committed sample: ``<out>/jobs/<job>/<rollout>/``, ``<out>/tasks/<task>/`` and
    ``<out>/sample-manifest.json``; return the plan (one entry per rollout directory)."""
    out = Path(out)
    rng = random.Random(seed)
    write_tasks(out / "tasks")
    plans: list[PlannedTrial] = []
    used: set[str] = set()
    clock: dict[str, float] = {}
    for job, scenario, task, harness, mode, sandbox, n_ex, opts in SAMPLE:
        opts = dict(opts)
        retry_errored = bool(opts.pop("retry_errored", False))
        plan = planned(
            job=job,
            rollout=f"{task}__{_hex8(rng, used)}",
            task=task,
            harness=harness,
            model=None if harness == "oracle" else HARNESSES[harness].model,
            skill_mode=mode,
            sandbox=sandbox,
            scenario=scenario,
            retry_errored=retry_errored,
        )
        offset = clock.get(job, 0.0)
        # the retry starts after its errored attempt ended; others are staggered by concurrency
        clock[job] = offset + (240.0 if retry_errored else 37.0)
        write_trial(
            out / "jobs" / job,
            plan,
            n_exchanges=max(n_ex, 2),
            seed=rng.getrandbits(32),
            start_offset=offset,
            **opts,
        )
        plans.append(plan)
    write_job_files(out / "jobs" / JOB_A)
    write_manifest(out, seed, plans)
    return plans


def generate_corpus(
    out: Path, n_trials: int, *, seed: int = 0, healthy_fraction: float = 0.8
) -> list[PlannedTrial]:
    """Many small production trials in jobs of at most 100 rollouts under ``<out>/jobs/``."""
    out = Path(out)
    rng = random.Random(seed)
    write_tasks(out / "tasks")
    healthy_pool = ("pass", "pass", "pass", "fail", "normal_timeout")
    unhealthy_pool = (*UNHEALTHY_SCENARIOS, "incomplete")
    base = job_start("2026-07-01__00-00-00")
    plans: list[PlannedTrial] = []
    used: set[str] = set()
    for i in range(n_trials):
        job = (base + timedelta(hours=i // 100)).strftime(JOB_FORMAT)
        scenario = (
            rng.choice(healthy_pool)
            if rng.random() < healthy_fraction
            else rng.choice(unhealthy_pool)
        )
        harness = rng.choice(HARNESS_KEYS)
        task = rng.choice(TASK_NAMES)
        plan = planned(
            job=job,
            rollout=f"{task}__{_hex8(rng, used)}",
            task=task,
            harness=harness,
            model=HARNESSES[harness].model,
            skill_mode=rng.choice(SKILL_MODES),
            sandbox=rng.choice(SANDBOXES),
            scenario=scenario,
        )
        write_trial(
            out / "jobs" / job,
            plan,
            n_exchanges=2 + rng.randrange(2),
            seed=rng.getrandbits(32),
            start_offset=(i % 100) * 11.0,
            trainer=False,
        )
        plans.append(plan)
    write_manifest(out, seed, plans)
    return plans
