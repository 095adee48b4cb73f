"""``write_heavy_trial``: one very large, healthy with-skill OpenHands pass, written as a stream.

Every request re-sends the whole growing conversation (system prompt with a 44-skill catalog,
then one assistant tool call and one tool message of ~``tool_output_bytes`` serialized bytes per
exchange), so the
LLM file grows quadratically: n=400 with 1,500-byte outputs gives about 145 MB, and the
one-line ``results.jsonl`` about as much. Messages are serialized once and spliced into each
line, so memory stays at a few MB whatever the file size.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from bf_sample import artifacts as A
from bf_sample import bodies as B
from bf_sample import rows as R
from bf_sample.agent import acp_tool_event, epoch
from bf_sample.harness import HARNESSES, catalog_entries
from bf_sample.plan import planned
from bf_sample.scenarios import verifier_stdout
from bf_sample.tasks import script
from bf_sample.trial import (
    HOST_JOBS,
    Phase,
    agent_env,
    job_start,
    provenance_fields,
    task_for,
)

HEAVY_TIMEOUT_SEC = 7200
EXTRA_GLOBAL_SKILLS = 40
# JSON around a tool result (role, call id, escapes): tool messages serialize to ~tool_output_bytes
TOOL_MESSAGE_OVERHEAD = 110
_HOLE = "\x00splice\x00"
_HOLE_JSON = json.dumps(_HOLE)


def _splice(handle: IO[str], template: dict[str, Any], parts: list[str]) -> None:
    """Write ``template`` as JSON with the ``_HOLE`` value replaced by the list ``parts``."""
    head, tail = json.dumps(template).split(_HOLE_JSON)
    handle.write(head)
    handle.write("[")
    handle.write(", ".join(parts))
    handle.write("]")
    handle.write(tail)


def write_heavy_trial(
    job_dir: Path,
    *,
    n_exchanges: int = 400,
    tool_output_bytes: int = 1500,
    task: str = "heavy-task",
    seed: int = 0,
) -> Path:
    """Write one heavy rollout under ``job_dir`` (streamed) and return its directory."""
    rng = random.Random(seed)
    job_dir = Path(job_dir)
    spec = task_for(task)
    info = HARNESSES["openhands"]
    plan = planned(
        job=job_dir.name,
        rollout=f"{spec.name}__{rng.getrandbits(32):08x}",
        task=spec.name,
        harness=info.key,
        model=info.model,
        skill_mode="with-skill",
        sandbox="daytona",
        scenario="pass",
    )
    rdir = job_dir / plan.rollout
    host = f"{HOST_JOBS}/{job_dir.name}/{plan.rollout}"
    start = job_start(job_dir.name) + timedelta(seconds=rng.uniform(0, 600))
    prov = provenance_fields(spec)
    skills = A.skill_fields(
        True, f"/tmp/benchflow-task-{B.hex_token(rng, 8)}/{spec.name}/environment/skills"
    )
    sandbox_id = B.uuid_like(rng)
    A.write_json(
        rdir / "config.json",
        A.config_json(
            task_path=f"tasks/{spec.name}",
            agent=info.key,
            model=info.model,
            sandbox="daytona",
            acp_transport="pty",
            skills=skills,
            install_timeout=900,
            timeout_sec=HEAVY_TIMEOUT_SEC,
            started_at=A.local(start),
            agent_env=agent_env(info.key, "daytona"),
            provenance=prov,
        ),
    )
    clock = Phase(start)
    clock.timing["environment_setup"] = round(rng.uniform(8, 25), 1)
    clock.timing["agent_setup"] = round(rng.uniform(2, 7), 1)
    created = start + timedelta(seconds=clock.timing["environment_setup"] * 0.8)
    A.write_json(
        rdir / "sandbox.json",
        {"sandbox_id": sandbox_id, "provider": "DaytonaSandbox", "created_at": A.local(created)},
    )
    entries = catalog_entries(info, spec, True, extra_globals=EXTRA_GLOBAL_SKILLS)
    conv = B.conversation(info.key, entries, spec.instruction)
    actions = script(
        spec,
        with_skill=True,
        n_tools=max(1, n_exchanges - 1),
        rng=rng,
        tool_output_bytes=max(0, tool_output_bytes - TOOL_MESSAGE_OVERHEAD),
    )
    raw_parts = [json.dumps(m) for m in conv.history]
    norm_parts = [json.dumps(R.norm_message(m)) for m in conv.history]
    tools = conv.body()["tools"]
    tools_chars = len(json.dumps(tools))
    agent_start = start + timedelta(
        seconds=clock.timing["environment_setup"] + clock.timing["agent_setup"]
    )
    t = agent_start + timedelta(seconds=rng.uniform(0.5, 1.5))
    usages: list[B.Usage] = []
    steps: list[tuple[int, dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    events: list[dict[str, Any]] = [{"type": "user_message", "text": spec.instruction}]
    total_cost = 0.0
    prev = 0
    (rdir / "trajectory").mkdir(parents=True, exist_ok=True)
    with (rdir / "trajectory" / "llm_trajectory.jsonl").open(
        "w", encoding="utf-8", newline=""
    ) as llm:
        for i, action in enumerate(actions):
            chars = sum(len(p) for p in raw_parts) + 2 * (len(raw_parts) - 1) + tools_chars + 80
            usage = B.next_usage(conv, chars, action, prev, rng)
            prev = usage.prompt
            call_id = conv.call_id(rng)
            t1 = t + timedelta(seconds=rng.uniform(1.0, 4.0))
            response = conv.response(action, call_id, usage, conv.response_id(rng), epoch(t1))
            metadata = {
                "request_model": info.alias,
                "provider_model": info.model,
                "model_group": info.alias,
                "call_type": info.call_type,
                "input_shape": {
                    "has_messages": True,
                    "has_input": False,
                    "n_messages": len(raw_parts),
                },
                "call_purpose": "agent",
            }
            exchange = {
                "request": {
                    "timestamp": t.isoformat(),
                    "method": "POST",
                    "path": info.path,
                    "headers": {},
                    "body": {
                        "model": info.alias,
                        "messages": _HOLE,
                        "tools": tools,
                        "stream": True,
                    },
                },
                "response": {
                    "timestamp": t1.isoformat(),
                    "status_code": 200,
                    "headers": {},
                    "body": response,
                },
                "duration_ms": round((t1 - t).total_seconds() * 1000, 3),
                "metadata": metadata,
            }
            if i:
                llm.write("\n")
            _splice(llm, exchange, raw_parts)
            steps.append(
                (len(raw_parts), response, metadata, R.assistant_message(response, True) or {})
            )
            usages.append(usage)
            total_cost += B.cost(info, usage)
            t = t1 + timedelta(seconds=rng.uniform(0.2, 1.0))
            if action.say:
                events.append({"type": "agent_message", "text": action.say})
            if action.kind == "final":
                break
            events.append(acp_tool_event(info.key, action, call_id, "completed"))
            before = len(conv.history)
            conv.push(action, call_id)
            for message in conv.history[before:]:
                raw_parts.append(json.dumps(message))
                norm_parts.append(json.dumps(R.norm_message(message)))
            conv.history = conv.history[:2]  # parts hold the history; keep memory flat
    A.write_joined(rdir / "trajectory" / "acp_trajectory.jsonl", events)
    clock.timing["agent_execution"] = round(
        (t - agent_start).total_seconds() + rng.uniform(0.2, 1.5), 1
    )
    clock.timing["verifier"] = round(rng.uniform(3, 20), 1)
    finished = clock.finish(rng.uniform(0.3, 2.5))
    tool_events = [e for e in events if e["type"] == "tool_call"]
    ar = A.agent_result(
        n_tool_calls=len(tool_events),
        n_skill=sum(1 for e in tool_events if e["kind"] == "skill"),
        n_prompts=1,
        tokens=(
            sum(u.prompt for u in usages),
            sum(u.output for u in usages),
            sum(u.cache_read for u in usages),
            sum(u.cache_write for u in usages),
            sum(u.total for u in usages),
        ),
        cost_usd=round(total_cost, 6),
        usage_source="provider_response",
    )
    result = A.result_json(
        task=spec.name,
        rollout=plan.rollout,
        rewards={"reward": 1.0},
        agent=info.key,
        agent_name=info.agent_name,
        model=info.model,
        skills=skills,
        ar=ar,
        events=events,
        usage_tracking={
            "requested": "auto",
            "status": "enabled",
            "environment": "daytona",
            "endpoint_kind": "sandbox",
            "usage_source": "provider_response",
        },
        started_at=A.local(start),
        finished_at=A.local(finished),
        timing=clock.timing,
        provenance=prov,
        sandbox_id=sandbox_id,
    )
    A.write_json(rdir / "result.json", result)
    A.write_json(rdir / "timing.json", clock.timing)
    A.write_json(rdir / "prompts.json", [spec.instruction])
    A.write_rows(rdir / "rewards.jsonl", [A.reward_event(1.0, finished)])
    _write_row(
        rdir / "results.jsonl", result, host, norm_parts, steps, R.norm_tools({"tools": tools})
    )
    A.write_text(rdir / "verifier" / "test-stdout.txt", verifier_stdout(spec, True))
    A.write_text(rdir / "verifier" / "reward.txt", "1\n")
    return rdir


def _write_row(
    path: Path,
    result: dict[str, Any],
    host: str,
    norm_parts: list[str],
    steps: list[tuple[int, dict[str, Any], dict[str, Any], dict[str, Any]]],
    tool_defs: list[dict[str, Any]],
) -> None:
    """The one-line ready row: top-level window, then one step per exchange, streamed."""
    name = result["rollout_name"]
    final = json.dumps(steps[-1][3])
    head = {
        "example_id": 0,
        "prompt": [json.loads(norm_parts[1])],
        "completion": _HOLE,
        "info": {
            "task_id": result["task_name"],
            "task_name": result["task_name"],
            "rollout_name": name,
            "environment": result["task_name"],
            "agent": result["agent"],
            "agent_name": result["agent_name"],
            "model": result["model"],
            "source": "benchflow",
            "rollout_dir": host,
            "training_ready": True,
            "training_ready_reason": None,
        },
        "reward": 1.0,
        "error": None,
        "timing": result["timing"],
        "is_completed": True,
        "is_truncated": False,
        "stop_condition": "agent_completed",
        "metrics": {
            "n_tool_calls": result["n_tool_calls"],
            "n_prompts": result["n_prompts"],
            "reward": 1.0,
        },
        "tool_defs": tool_defs,
        "token_usage": R.token_usage(result["agent_result"]),
        "score": 1.0,
        "total_tool_calls": float(result["n_tool_calls"]),
        "trajectory": "\x01",
    }
    with path.open("w", encoding="utf-8", newline="") as out:
        text = json.dumps(head)
        before, after = text.split(json.dumps("\x01"))
        top_head, top_tail = before.split(_HOLE_JSON)
        out.write(top_head)
        out.write("[" + ", ".join(norm_parts[2:] + [final]) + "]")
        out.write(top_tail)
        out.write("[")
        for idx, (n_parts, response, metadata, assistant) in enumerate(steps):
            step = {
                "prompt": _HOLE,
                "completion": [assistant],
                "response": response,
                "tokens": None,
                "reward": 1.0,
                "advantage": 0.0,
                "is_truncated": False,
                "trajectory_id": f"{name}__llm_{idx}",
                "extras": {**R.STEP_SOURCE, "exchange_index": idx, **metadata},
            }
            if idx:
                out.write(", ")
            _splice(out, step, norm_parts[:n_parts])
        out.write("]")
        out.write(after)
        out.write("\n")
