"""Builders for the per-rollout files of the production layout (artifacts.md §2.3, §3).

Key order follows Benchflow's writer output in ``fixtures/benchflow-writer`` exactly; the
serialization helpers reproduce its quirks (indent 2 without a trailing newline for ``.json``,
``\\n``-joined trajectories without one, ``results.jsonl``/``rewards.jsonl`` with one).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

SANDBOX_LOCKED_PATHS = ["/solution", "/tests"]


# -- serialization ----------------------------------------------------------------------------
def _put(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except FileNotFoundError:  # create parents lazily: one syscall less per file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


_quote = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def dumps_indent2(obj: Any, level: int = 0) -> str:
    """Byte-for-byte ``json.dumps(obj, indent=2)`` for JSON-native data, several times faster
    (the stdlib only uses its C encoder without ``indent``)."""
    if isinstance(obj, str):
        return _quote(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, float):
        return json.dumps(obj)
    inner = "\n" + "  " * (level + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        body = ",".join(
            f"{inner}{_quote(k)}: {dumps_indent2(v, level + 1)}" for k, v in obj.items()
        )
        return "{" + body + "\n" + "  " * level + "}"
    if isinstance(obj, list | tuple):
        if not obj:
            return "[]"
        body = ",".join(inner + dumps_indent2(v, level + 1) for v in obj)
        return "[" + body + "\n" + "  " * level + "]"
    raise TypeError(f"not JSON-native: {type(obj).__name__}")


def write_json(path: Path, obj: Any) -> None:
    """Indent 2, no trailing newline (config.json, result.json, timing.json, ...)."""
    _put(path, dumps_indent2(obj).encode())


def write_joined(path: Path, records: list[Any]) -> None:
    """``\\n``-joined JSONL without a trailing newline (trajectory files)."""
    _put(path, "\n".join(json.dumps(r) for r in records).encode())


def write_rows(path: Path, records: list[Any]) -> None:
    """One JSON object per line, each ending with ``\\n`` (results.jsonl, rewards.jsonl)."""
    _put(path, "".join(json.dumps(r) + "\n" for r in records).encode())


def write_text(path: Path, text: str) -> None:
    _put(path, text.encode())


def local(dt: datetime) -> str:
    """Benchflow's naive host-local ``str(datetime)`` (space separator)."""
    return str(dt)


# -- config.json / result.json ----------------------------------------------------------------
def scenes(agent: str, model: str | None) -> list[dict[str, Any]]:
    role = {
        "name": "agent",
        "agent": agent,
        "model": model,
        "reasoning_effort": None,
        "timeout_sec": None,
        "idle_timeout_sec": None,
        "skills_dir": None,
        "capabilities": None,
        "env_keys": [],
    }
    return [
        {
            "name": "default",
            "skills_dir": None,
            "roles": [role],
            "turns": [{"role": "agent", "has_prompt": False}],
        }
    ]


def skill_fields(with_skill: bool, effective_dir: str) -> dict[str, Any]:
    return {
        "skill_mode": "with-skill" if with_skill else "no-skill",
        "skill_source": "task_bundled" if with_skill else "none",
        "requested_skills_dir": None,
        "effective_skills_dir": effective_dir if with_skill else None,
        "skills_sandbox_dir": "/skills" if with_skill else None,
        "include_task_skills": with_skill,
    }


def config_json(
    *,
    task_path: str,
    agent: str,
    model: str | None,
    sandbox: str,
    acp_transport: str,
    skills: dict[str, Any],
    install_timeout: int | None,
    timeout_sec: int,
    started_at: str,
    agent_env: dict[str, str],
    provenance: dict[str, Any] | None,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "task_path": task_path,
        "agent": agent,
        "model": model,
        "reasoning_effort": None,
        "environment": sandbox,
        "acp_transport": acp_transport,
        "environment_manifest": None,
        **skills,
        "sandbox_user": "agent",
        "sandbox_locked_paths": list(SANDBOX_LOCKED_PATHS),
        "sandbox_setup_timeout": 120,
        "skip_install": False,
        "agent_install_timeout": install_timeout,
        "context_root": None,
        "base_image_override": None,
        "timeout_sec": timeout_sec,
        "concurrency": 4,
        "agent_idle_timeout_sec": 600,
        "started_at": started_at,
        "agent_env": agent_env,
        "scenes": scenes(agent, model),
        "loop": {"strategy": "single-shot"},
        "usage_tracking": {"requested": "auto"},
    }
    if provenance:
        cfg.update(provenance)
    return cfg


def agent_result(
    *,
    n_tool_calls: int,
    n_skill: int,
    n_prompts: int,
    tokens: tuple[int, int, int, int, int],
    cost_usd: float | None,
    usage_source: str,
) -> dict[str, Any]:
    n_in, n_out, n_read, n_write, total = tokens
    return {
        "n_tool_calls": n_tool_calls,
        "n_skill_invocations": n_skill,
        "n_prompts": n_prompts,
        "n_input_tokens": n_in,
        "n_output_tokens": n_out,
        "n_cache_read_tokens": n_read,
        "n_cache_creation_tokens": n_write,
        "total_tokens": total,
        "cost_usd": cost_usd,
        "usage_source": usage_source,
        "price_source": "litellm" if cost_usd is not None else None,
    }


def trajectory_summary(
    events: list[dict[str, Any]], partial: bool, source: str | None
) -> dict[str, Any]:
    types = Counter(e["type"] for e in events)
    statuses = Counter(e["status"] for e in events if e["type"] == "tool_call")
    known = ("tool_call", "user_message", "agent_message", "agent_thought")
    return {
        "steps": len(events),
        "tool_call_steps": types["tool_call"],
        "user_message_steps": types["user_message"],
        "agent_message_steps": types["agent_message"],
        "agent_thought_steps": types["agent_thought"],
        "other_steps": sum(n for t, n in types.items() if t not in known),
        "event_type_counts": dict(types),
        "tool_call_status_counts": dict(statuses),
        "partial_trajectory": partial,
        "trajectory_source": source,
    }


ERROR_INFO_KEYS = (
    "idle_timeout_info",
    "agent_timeout_info",
    "sandbox_startup_info",
    "transport_error_info",
    "verifier_timeout_info",
    "api_error_info",
    "suspected_api_error_info",
)


def result_json(
    *,
    task: str,
    rollout: str,
    rewards: dict[str, Any] | None,
    agent: str,
    agent_name: str,
    model: str | None,
    skills: dict[str, Any],
    ar: dict[str, Any],
    events: list[dict[str, Any]],
    usage_tracking: dict[str, Any],
    error: str | None = None,
    error_category: str | None = None,
    verifier_error: str | None = None,
    verifier_error_category: str | None = None,
    infos: dict[str, Any] | None = None,
    partial: bool = False,
    trajectory_source: str | None = "acp",
    started_at: str,
    finished_at: str,
    timing: dict[str, float],
    provenance: dict[str, Any] | None,
    sandbox_id: str | None,
) -> dict[str, Any]:
    res: dict[str, Any] = {
        "task_name": task,
        "rollout_name": rollout,
        "rewards": rewards,
        "agent": agent,
        "agent_name": agent_name,
        "model": model,
        **skills,
        "n_tool_calls": ar["n_tool_calls"],
        "n_skill_invocations": ar["n_skill_invocations"],
        "n_prompts": ar["n_prompts"],
        "agent_result": ar,
        "final_metrics": {
            "total_prompt_tokens": ar["n_input_tokens"],
            "total_completion_tokens": ar["n_output_tokens"],
            "total_cached_tokens": ar["n_cache_read_tokens"],
            "total_cost_usd": ar["cost_usd"],
        },
        "trajectory_summary": trajectory_summary(events, partial, trajectory_source),
        "usage_tracking": usage_tracking,
        "error": error,
        "error_category": error_category,
        "verifier_error": verifier_error,
        "verifier_error_category": verifier_error_category,
        "export_error": None,
    }
    for key in ERROR_INFO_KEYS:
        res[key] = (infos or {}).get(key)
    res.update(
        {
            "partial_trajectory": partial,
            "trajectory_source": trajectory_source,
            "started_at": started_at,
            "finished_at": finished_at,
            "timing": timing,
            "scenes": scenes(agent, model),
            "loop": {"strategy": "single-shot"},
        }
    )
    if provenance:
        res.update(provenance)
    res["sandbox_id"] = sandbox_id
    return res


def reward_event(value: float, finished: datetime) -> dict[str, Any]:
    return {
        "ts": finished.isoformat(),
        "type": "terminal",
        "source": "verifier",
        "value": value,
        "tag": "reward",
        "step_index": None,
        "space": "output",
        "granularity": "terminal",
        "meta": {},
    }


# -- trainer/ (derived from ACP events; lossy by design, artifacts.md §3.10) -------------------
def _tool_text(event: dict[str, Any], as_repr: bool = False) -> str:
    parts = []
    for block in event.get("content") or []:
        if block.get("type") == "content":
            inner = block["content"]
            parts.append(repr(inner) if as_repr else str(inner.get("text", "")))
        elif block.get("type") == "diff":
            parts.append(f"diff {block.get('path')}")
    return "\n".join(parts)


def trainer_files(
    *,
    rollout: str,
    task: str,
    agent_name: str,
    model: str | None,
    prompts: list[str],
    events: list[dict[str, Any]],
    reward: float | None,
    ar: dict[str, Any],
    partial: bool,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(verifiers.jsonl record, adp.jsonl record, atif.json document)."""
    user = [{"role": "user", "content": p} for p in prompts]
    completion: list[dict[str, Any]] = []
    adp: list[dict[str, Any]] = [
        {"class_": "text_observation", "content": p, "source": "user"} for p in prompts
    ]
    steps: list[dict[str, Any]] = [{"source": "user", "message": p} for p in prompts]
    thought: str | None = None
    for ev in events:
        kind = ev["type"]
        if kind == "user_message":
            user.append({"role": "user", "content": ev["text"]})
            adp.append({"class_": "text_observation", "content": ev["text"], "source": "user"})
            steps.append({"source": "user", "message": ev["text"]})
        elif kind == "agent_thought":
            completion.append({"role": "assistant", "content": ev["text"]})
            thought = ev["text"]
        elif kind == "agent_message":
            completion.append({"role": "assistant", "content": ev["text"]})
            adp.append({"class_": "message_action", "content": ev["text"]})
            step: dict[str, Any] = {"source": "agent", "message": ev["text"]}
            if thought:
                step["reasoning_content"], thought = thought, None
            steps.append(step)
        elif kind == "tool_call":
            out = _tool_text(ev)
            shown = _tool_text(ev, as_repr=True)
            completion.append(
                {"role": "assistant", "content": f"[tool_call: {ev['title']}]\n{shown}"}
            )
            action: dict[str, Any] = {
                "class_": "api_action",
                "tool_call_id": ev["tool_call_id"],
                "function": ev["kind"],
                "kwargs": {},
                "description": ev["title"],
            }
            call = {
                "tool_call_id": ev["tool_call_id"],
                "function_name": ev["kind"],
                "arguments": {},
                "extra": {"title": ev["title"], "status": ev["status"]},
            }
            step = {"source": "agent", "message": "", "tool_calls": [call]}
            if thought:
                action["reasoning_content"] = step["reasoning_content"] = thought
                thought = None
            adp.append(action)
            adp.append(
                {
                    "class_": "text_observation",
                    "tool_call_id": ev["tool_call_id"],
                    "content": out,
                    "source": "environment",
                }
            )
            step["observation"] = {
                "results": [{"source_call_id": ev["tool_call_id"], "content": out}]
            }
            steps.append(step)
        elif kind == "oracle":
            text = f"[oracle: {ev['command']}]"
            completion.append({"role": "assistant", "content": text})
            adp.append({"class_": "message_action", "content": text})
            steps.append({"source": "agent", "message": text})
    if reward is not None and len(adp) > len(prompts):
        adp[-1]["reward"] = reward
    verifiers = {
        "example_id": 0,
        "prompt": user,
        "completion": completion,
        "reward": reward if reward is not None else 0.0,
        "metrics": {},
        "is_completed": not partial,
        "is_truncated": partial,
        "info": {
            "task_id": task,
            "environment": task,
            "model": model or "",
            "reward_valid": reward is not None,
            "reward_metadata": {
                "items": {},
                "events": [],
                "error": None,
                "space": "output",
                "granularity": "terminal",
            },
        },
    }
    adp_rec = {
        "schema_version": "1.3.1",
        "id": rollout,
        "content": adp,
        "details": {"task_id": task, "environment": task, "model": model or ""},
    }
    agent: dict[str, Any] = {"name": agent_name, "version": "unknown"}
    if model:
        agent["model_name"] = model
    metrics: dict[str, Any] = {
        "total_steps": len(steps),
        "total_prompt_tokens": ar["n_input_tokens"],
        "total_completion_tokens": ar["n_output_tokens"],
        "total_cached_tokens": ar["n_cache_read_tokens"],
    }
    if ar["cost_usd"] is not None:
        metrics["total_cost_usd"] = ar["cost_usd"]
    atif = {
        "schema_version": "ATIF-v1.7",
        "session_id": rollout,
        "agent": agent,
        "steps": [{"step_id": i + 1, **s} for i, s in enumerate(steps)],
        "final_metrics": metrics,
    }
    return verifiers, adp_rec, atif
