"""``write_trial``: one production rollout directory for a :class:`PlannedTrial`, by scenario."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bf_sample import artifacts as A
from bf_sample import bodies as B
from bf_sample.agent import FALLBACK_START, Run, run_agent
from bf_sample.harness import HARNESSES
from bf_sample.plan import PlannedTrial
from bf_sample.rows import build_row
from bf_sample.scenarios import (
    REWARD,
    TIMEOUT_SEC,
    failure_fields,
    sandbox_failure_fields,
    verifier_stdout,
)
from bf_sample.tasks import TASKS, Task, file_sha, script, task_digest, task_files

JOB_FORMAT = "%Y-%m-%d__%H-%M-%S"
SOURCE_REPO = "benchflow-ai/skillsbench"
SOURCE_SHA = "6f2c9e1a4b7d3f58c0e2a9b1d4c7f3e8a5b2c9d0"
HOST_JOBS = "/srv/bench/jobs"


def job_start(job: str) -> datetime:
    try:
        return datetime.strptime(job, JOB_FORMAT)
    except ValueError:
        return FALLBACK_START


def task_for(name: str) -> Task:
    return TASKS.get(name) or replace(TASKS["sales-report"], name=name)


def provenance_fields(task: Task) -> dict[str, Any]:
    files = task_files(task)
    return {
        "source": {
            "type": "github",
            "repo": SOURCE_REPO,
            "requested_ref": "main",
            "resolved_sha": SOURCE_SHA,
            "path": f"tasks/{task.name}",
            "dirty": False,
            "file_hashes": {rel: file_sha(files[rel]) for rel in sorted(files)},
        },
        "dataset_name": "skillsbench",
        "dataset_version": "1.1",
        "task_digest": task_digest(task),
    }


def agent_env(harness: str, sandbox: str) -> dict[str, str]:
    base = "http://127.0.0.1:4000" if sandbox == "daytona" else "http://host.docker.internal:4000"
    info = HARNESSES[harness]
    env = {info.base_url_env: base + ("/v1" if harness in ("codex-acp", "openhands") else "")}
    if harness == "openhands":
        env["LLM_MODEL"] = info.alias
    return env


@dataclass
class Phase:
    """The rollout clock (artifacts.md §3.3: phase durations rounded to 0.1 s)."""

    start: datetime
    timing: dict[str, float] = field(default_factory=dict)

    def finish(self, overhead: float, floor: datetime | None = None) -> datetime:
        """End = start + phases (or the last agent activity, if later) + ``overhead``."""
        end = self.start + timedelta(seconds=sum(self.timing.values()))
        finished = max(end, floor or end) + timedelta(seconds=overhead)
        self.timing["total"] = round((finished - self.start).total_seconds(), 1)
        return finished


def _tokens(usages: list[B.Usage]) -> tuple[int, int, int, int, int]:
    return (
        sum(u.prompt for u in usages),
        sum(u.output for u in usages),
        sum(u.cache_read for u in usages),
        sum(u.cache_write for u in usages),
        sum(u.total for u in usages),
    )


def write_trial(
    job_dir: Path,
    plan: PlannedTrial,
    *,
    n_exchanges: int = 2,
    tool_output_bytes: int = 200,
    seed: int = 0,
    start_offset: float | None = None,
    provenance: bool = True,
    duplicate_exchange: int | None = None,
    trainer: bool = True,
) -> Path:
    """Write ``<job_dir>/<plan.rollout>/`` for the plan's scenario and return that directory.

    ``start_offset`` (seconds after the job-name time) defaults to a draw from the seed;
    ``provenance=False`` leaves out ``source``/``dataset_*``/``task_digest``;
    ``duplicate_exchange=i`` repeats exchange ``i`` as a superseded provider retry (same
    request body, unconsumed tool-call id), which the row's dedup must drop;
    ``trainer=False`` skips the optional ``trainer/`` exports (faster bulk corpora).
    """
    rng = random.Random(seed)
    job = job_dir.name
    rdir = job_dir / plan.rollout
    rdir.mkdir(parents=True, exist_ok=True)
    task = task_for(plan.task)
    oracle = plan.scenario == "oracle" or plan.harness == "oracle"
    with_skill = plan.skill_mode == "with-skill" and not oracle
    daytona = plan.sandbox == "daytona"
    offset = rng.uniform(0, 1800) if start_offset is None else start_offset
    start = job_start(job) + timedelta(seconds=offset, microseconds=rng.randrange(1, 10**6))
    prov = provenance_fields(task) if provenance else None
    base36 = "0123456789abcdefghijklmnopqrstuvwxyz"
    eff = f"/tmp/benchflow-task-{B.token(rng, 8, base36)}/{task.name}/environment/skills"
    skills = A.skill_fields(with_skill, eff)
    agent = "oracle" if oracle else plan.harness
    info = None if oracle else HARNESSES[plan.harness]
    model = None if info is None else (plan.model or info.model)
    sandbox_id = B.uuid_like(rng) if daytona else None
    transport = "docker-stdio" if not daytona else ("ssh" if plan.harness == "gemini" else "pty")
    A.write_json(
        rdir / "config.json",
        A.config_json(
            task_path=f"tasks/{task.name}" if provenance else task.name,
            agent=agent,
            model=model,
            sandbox=plan.sandbox,
            acp_transport=transport,
            skills=skills,
            install_timeout=None if oracle else 900,
            timeout_sec=TIMEOUT_SEC,
            started_at=A.local(start),
            agent_env={} if oracle else agent_env(plan.harness, plan.sandbox),
            provenance=prov,
        ),
    )
    clock = Phase(start)
    clock.timing["environment_setup"] = round(
        rng.uniform(8, 25) if daytona else rng.uniform(18, 60), 1
    )
    if plan.scenario == "sandbox_failure":
        clock.timing["environment_setup"] = round(600 + rng.uniform(0.5, 9), 1)
        sandbox_id_written = None
    else:
        sandbox_id_written = sandbox_id
        if daytona:
            created = start + timedelta(seconds=clock.timing["environment_setup"] * 0.8)
            A.write_json(
                rdir / "sandbox.json",
                {
                    "sandbox_id": sandbox_id,
                    "provider": "DaytonaSandbox",
                    "created_at": A.local(created),
                },
            )
    prompts = [task.instruction]
    run = Run()
    failure: dict[str, Any] = {}
    partial = False
    traj_source: str | None = "acp"
    if oracle:
        stdout = f"Wrote the reference outputs for {task.name}.\nDone."
        run.events = [
            {"type": "oracle", "command": "solution/solve.sh", "return_code": 0, "stdout": stdout}
        ]
        traj_source = None
        if not daytona:
            A.write_text(rdir / "agent" / "oracle.txt", stdout + "\n")
    elif plan.scenario == "sandbox_failure":
        traj_source = None
        failure = sandbox_failure_fields(plan.sandbox, sandbox_id)
    else:
        assert info is not None
        clock.timing["agent_setup"] = round(rng.uniform(2, 7), 1)
        agent_start = start + timedelta(
            seconds=clock.timing["environment_setup"] + clock.timing["agent_setup"]
        )
        n_tools = max(1, n_exchanges - 1)
        actions = script(
            task,
            with_skill=with_skill,
            n_tools=n_tools,
            rng=rng,
            tool_output_bytes=tool_output_bytes,
        )
        timeout = plan.scenario in ("normal_timeout", "partial_timeout")
        if timeout or plan.scenario == "incomplete" or plan.is_retry_errored:
            actions = actions[:-1]
        if plan.scenario == "api_rate_limit":
            actions = actions[:1]
        stretch = TIMEOUT_SEC * 0.6 / (len(actions) * 4.0) if timeout else 1.0
        run = run_agent(
            plan,
            task,
            actions,
            rng,
            agent_start + timedelta(seconds=rng.uniform(0.5, 1.5)),
            duplicate_exchange=duplicate_exchange,
            stretch=stretch,
        )
        failure = failure_fields(plan, run, run.pending)
        if timeout:
            run.events.append(
                {
                    "type": "agent_timeout",
                    "reason": "wall_clock_timeout",
                    "timeout_sec": float(TIMEOUT_SEC),
                    "pending_tool_call_ids": run.pending,
                    "terminal_trajectory_complete": not run.pending,
                }
            )
            clock.timing["agent_execution"] = float(TIMEOUT_SEC)
        elif not plan.is_retry_errored:
            elapsed = (run.end - agent_start).total_seconds() + rng.uniform(0.2, 1.5)
            clock.timing["agent_execution"] = round(elapsed, 1)
        partial = bool(run.pending)
        traj_source = "partial_acp" if partial else "acp"
    if oracle or info is None:
        agent_name = "oracle"
    else:  # the ACP handshake never happened when the sandbox did not start
        agent_name = "" if plan.scenario == "sandbox_failure" else info.agent_name
    return _finish(
        Rollout(
            plan=plan,
            rdir=rdir,
            rng=rng,
            task=task,
            clock=clock,
            run=run,
            failure=failure,
            partial=partial,
            traj_source=traj_source,
            prompts=prompts,
            agent=agent,
            model=model,
            skills=skills,
            provenance=prov,
            sandbox_id=sandbox_id_written,
            trainer=trainer,
            agent_name=agent_name,
        )
    )


@dataclass
class Rollout:
    plan: PlannedTrial
    rdir: Path
    rng: random.Random
    task: Task
    clock: Phase
    run: Run
    failure: dict[str, Any]
    partial: bool
    traj_source: str | None
    prompts: list[str]
    agent: str
    model: str | None
    skills: dict[str, Any]
    provenance: dict[str, Any] | None
    sandbox_id: str | None
    agent_name: str
    trainer: bool = True


def _write_llm(r: Rollout, host: str) -> str | None:
    """Write trajectory/llm_trajectory.jsonl (absent when nothing was captured); the parse error."""
    scenario = r.plan.scenario
    if not r.run.exchanges or scenario == "missing_llm":
        return None
    lines = [json.dumps(e) for e in r.run.exchanges]
    error = None
    if scenario == "bad_llm_line":
        cut = lines[-1][: int(len(lines[-1]) * 0.6)]
        try:
            json.loads(cut)
        except json.JSONDecodeError as exc:
            error = (
                f"Invalid LLM trajectory JSONL: {host}/trajectory/llm_trajectory.jsonl: "
                f"line {len(lines)}: invalid JSON: {exc}"
            )
        lines[-1] = cut
    text = "\n".join(lines)
    A.write_text(r.rdir / "trajectory" / "llm_trajectory.jsonl", text)
    if scenario == "incomplete":
        A.write_text(
            r.rdir / "trajectory" / "llm_trajectory.jsonl.tmp", text[: int(len(text) * 0.7)]
        )
    return error


def _finish(r: Rollout) -> Path:
    plan, run, rng, rdir = r.plan, r.run, r.rng, r.rdir
    host = f"{HOST_JOBS}/{rdir.parent.name}/{rdir.name}"
    A.write_joined(rdir / "trajectory" / "acp_trajectory.jsonl", run.events)
    llm_error = _write_llm(r, host)
    if plan.scenario == "incomplete":
        return rdir
    verified = plan.scenario != "sandbox_failure" and not plan.is_retry_errored
    if verified:
        r.clock.timing["verifier"] = round(rng.uniform(3, 20), 1)
    finished = r.clock.finish(rng.uniform(0.3, 2.5), run.end if run.exchanges else None)
    reward = None if plan.is_retry_errored else REWARD.get(plan.scenario, 1.0)
    rewards = None if reward is None else {"reward": reward}
    tool_events = [e for e in run.events if e["type"] == "tool_call"]
    n_skill = sum(
        1 for e in tool_events if e["kind"] == "skill" or e["title"].endswith("/SKILL.md")
    )
    captured = any(e["response"]["status_code"] == 200 for e in run.exchanges)
    cost = round(run.cost, 6) if run.cost > 0 else None
    source = "provider_response" if captured else "unavailable"
    ar = A.agent_result(
        n_tool_calls=len(tool_events),
        n_skill=n_skill,
        n_prompts=len(r.prompts),
        tokens=_tokens(run.usages),
        cost_usd=cost,
        usage_source=source,
    )
    tracking = {
        "requested": "auto",
        "status": "enabled" if captured else "unavailable",
        "environment": plan.sandbox,
        "endpoint_kind": ("sandbox" if plan.sandbox == "daytona" else "host")
        if captured
        else "none",
        "usage_source": source,
    }
    result = A.result_json(
        task=r.task.name,
        rollout=rdir.name,
        rewards=rewards,
        agent=r.agent,
        agent_name=r.agent_name,
        model=r.model,
        skills=r.skills,
        ar=ar,
        events=run.events,
        usage_tracking=tracking,
        error=r.failure.get("error"),
        error_category=r.failure.get("error_category"),
        verifier_error=r.failure.get("verifier_error"),
        verifier_error_category=r.failure.get("verifier_error_category"),
        infos=r.failure.get("infos"),
        partial=r.partial,
        trajectory_source=r.traj_source,
        started_at=A.local(r.clock.start),
        finished_at=A.local(finished),
        timing=r.clock.timing,
        provenance=r.provenance,
        sandbox_id=r.sandbox_id,
    )
    A.write_json(rdir / "result.json", result)
    A.write_json(rdir / "timing.json", r.clock.timing)
    A.write_json(rdir / "prompts.json", r.prompts)
    if rewards is not None:
        A.write_rows(rdir / "rewards.jsonl", [A.reward_event(reward or 0.0, finished)])
    if plan.scenario != "missing_rows":
        row_result = result
        if plan.scenario == "ready_mismatch":
            row_result = dict(result, error=None, error_category=None)
        elif plan.scenario == "cross_mismatch":
            row_result = dict(result, rewards={"reward": 1.0})
        exchanges = None if plan.scenario == "missing_llm" or not run.exchanges else run.exchanges
        row = build_row(row_result, exchanges, r.prompts, host, llm_error)
        if plan.scenario == "steps_mismatch":
            row["trajectory"] = row["trajectory"][:-1]
        A.write_rows(rdir / "results.jsonl", [row])
    if r.trainer:
        verifiers, adp, atif = A.trainer_files(
            rollout=rdir.name,
            task=r.task.name,
            agent_name=r.agent_name,
            model=r.model,
            prompts=r.prompts,
            events=run.events,
            reward=reward,
            ar=ar,
            partial=r.partial,
        )
        A.write_rows(rdir / "trainer" / "verifiers.jsonl", [verifiers])
        A.write_rows(rdir / "trainer" / "adp.jsonl", [adp])
        A.write_text(rdir / "trainer" / "atif.json", A.dumps_indent2(atif) + "\n")
    if verified:
        crashed = plan.scenario == "verifier_crash"
        file_reward = 0.0 if plan.scenario == "api_rate_limit" else reward
        passed = None if crashed else file_reward == 1.0
        A.write_text(rdir / "verifier" / "test-stdout.txt", verifier_stdout(r.task, passed))
        if not crashed:
            A.write_text(rdir / "verifier" / "reward.txt", f"{file_reward:g}\n")
    return rdir
