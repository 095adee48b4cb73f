"""Build production-layout Benchflow trials in a temporary directory.

The healthy trial mirrors ``fixtures/benchflow-writer/.../demo-task__aaaa1111`` (a codex-acp
with-skill pass on Daytona: four ACP events, two LLM exchanges, one training-ready row with
two steps), but is written by this module so tests never need ``/work/shared``.  The
serialization follows Benchflow's writers: JSON documents pretty-printed with no trailing
newline, trajectories joined with ``\\n`` and no trailing newline, ``results.jsonl`` and
``rewards.jsonl`` ending with a newline.

Two kinds of knobs:

* :class:`TrialSpec` holds every file as plain Python data; mutate it, optionally call
  :meth:`TrialSpec.sync` to recompute the derived fields (token sums, tool counts, reward
  copies, the row's prompt window), then :meth:`TrialSpec.write` it.
* :class:`Trial` edits the written files: drop a file, replace a line, set a field, write raw
  bytes; then :meth:`Trial.review` runs discovery, the scan and the gate on it.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bf_assets.corpus.run import review_trial
from bf_assets.ingest.discovery import TrialRef, discover
from bf_assets.ingest.readers import ReadLimits
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview

JOB = "2026-06-01__00-00-00"
TASK = "demo-task"
MODEL = "openai/gpt-x"
AGENT = "codex-acp"
STARTED = "2026-06-01 10:00:02.520358"
FINISHED = "2026-06-01 10:01:17.533172"
TIMING = {
    "environment_setup": 12.3,
    "agent_setup": 3.2,
    "agent_execution": 40.0,
    "verifier": 5.5,
    "total": 75.0,
}
SYSTEM_PROMPT = "You are an agent."
INSTRUCTION = "Create hello.txt"
TERMINAL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "terminal",
        "description": "run",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
ACP_FILE = "trajectory/acp_trajectory.jsonl"
LLM_FILE = "trajectory/llm_trajectory.jsonl"
ROWS_FILE = "results.jsonl"


# --------------------------------------------------------------------------- messages


def tool_call(call_id: str, command: str, name: str = "terminal") -> dict[str, Any]:
    """An OpenAI chat ``tool_calls`` entry."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"command": command})},
    }


def assistant(content: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = list(calls)
    return msg


def tool_result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


TASK_SKILL = "demo-skill"
# The Codex skills block a with-skill codex-acp run carries at startup, listing the task's
# skill: the proof of a skill load a with-skill trial needs to be publishable (checks.md §1).
SKILLS_CATALOG = (
    "<skills_instructions>\n## Skills\n### Available skills\n"
    f"- {TASK_SKILL}: Writes the files the demo task asks for. "
    f"(file: /skills/{TASK_SKILL}/SKILL.md)\n"
    "### How to use skills\nOpen a skill's SKILL.md before using it.\n</skills_instructions>"
)


def opening(proven: bool = False) -> list[dict[str, Any]]:
    """The startup request messages: system prompt and the task instruction (``proven``:
    the system prompt also lists the task skill, see :data:`SKILLS_CATALOG`)."""
    system = f"{SYSTEM_PROMPT}\n{SKILLS_CATALOG}" if proven else SYSTEM_PROMPT
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": INSTRUCTION},
    ]


def chat_exchange(
    messages: list[dict[str, Any]],
    reply: dict[str, Any],
    *,
    usage: tuple[int, int] | None = (100, 20),
    status: int | None = 200,
    tools: list[dict[str, Any]] | None = None,
    provider_model: str = MODEL,
    second: int = 0,
    took: int = 1,
    n: int = 1,
) -> dict[str, Any]:
    """One ``llm_trajectory.jsonl`` line (LiteLLM-callback era, chat completions shape).

    The request starts at second ``second``, the response arrives ``took`` seconds later;
    ``n`` numbers the provider response id.
    """
    body: dict[str, Any] = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": provider_model.rsplit("/", 1)[-1],
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                "message": copy.deepcopy(reply),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    response: dict[str, Any] = {
        "timestamp": f"2026-06-01T00:00:{second + took:02d}",
        "status_code": status,
        "headers": {},
        "body": body,
    }
    if status is None:
        del response["status_code"]  # capture without status codes (review-rules V-3)
    return {
        "request": {
            "timestamp": f"2026-06-01T00:00:{second:02d}",
            "method": "POST",
            "path": "/v1/chat/completions",
            "headers": {},
            "body": {
                "model": MODEL,
                "messages": copy.deepcopy(messages),
                "tools": copy.deepcopy(tools if tools is not None else [TERMINAL_TOOL]),
                "stream": True,
            },
        },
        "response": response,
        "duration_ms": took * 1000.0,
        "metadata": {
            "request_model": MODEL,
            "provider_model": provider_model,
            "model_group": MODEL,
            "call_type": "acompletion",
            "input_shape": {
                "has_messages": True,
                "has_input": False,
                "n_messages": len(messages),
            },
            "call_purpose": "agent",
        },
    }


def failed_exchange(
    messages: list[dict[str, Any]], *, status: int = 500, second: int = 0
) -> dict[str, Any]:
    """A provider failure as Benchflow records it (kept in the file, never a training step)."""
    ex = chat_exchange(messages, assistant(""), usage=None, second=second)
    ex["response"]["status_code"] = status
    ex["response"]["body"] = {
        "raw": None,
        "model": MODEL,
        "error": {"type": "APIError", "message": f"HTTP {status}", "traceback": ""},
    }
    return ex


def normalize_message(m: dict[str, Any]) -> dict[str, Any]:
    """Benchflow's message normalization (``export_prime_sft``), reduced to what tests use."""
    out: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
    if m.get("tool_calls"):
        out["tool_calls"] = copy.deepcopy(m["tool_calls"])
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    return out


def step_for(
    exchange: dict[str, Any], index: int, *, rollout: str, reward: float
) -> dict[str, Any]:
    """The ``results.jsonl`` trajectory step Benchflow writes for one selected exchange."""
    req = exchange["request"]["body"]
    resp = exchange["response"]["body"]
    extras: dict[str, Any] = {
        "source": "llm_trajectory",
        "tracking_source": "litellm_callback",
        "exchange_index": index,
    }
    extras.update(copy.deepcopy(exchange.get("metadata") or {}))
    return {
        "prompt": [normalize_message(m) for m in req["messages"]],
        "completion": [normalize_message(resp["choices"][0]["message"])],
        "response": copy.deepcopy(resp),
        "tokens": None,
        "reward": reward,
        "advantage": 0.0,
        "is_truncated": False,
        "trajectory_id": f"{rollout}__llm_{index}",
        "extras": extras,
    }


# --------------------------------------------------------------------------- dotted paths


def _key(part: str) -> str | int:
    return int(part) if part.lstrip("-").isdigit() else part


def set_path(obj: Any, dotted: str, value: Any) -> None:
    """``set_path(d, "a.b.0.c", v)``: set a nested value, creating missing dicts."""
    parts = [_key(p) for p in dotted.split(".")]
    for p in parts[:-1]:
        if isinstance(obj, dict) and p not in obj:
            obj[p] = {}
        obj = obj[p]
    obj[parts[-1]] = value


def del_path(obj: Any, dotted: str) -> None:
    parts = [_key(p) for p in dotted.split(".")]
    for p in parts[:-1]:
        obj = obj[p]
    del obj[parts[-1]]


# --------------------------------------------------------------------------- the spec


def _dump_doc(value: Any) -> str:
    return json.dumps(value, indent=2)


def _dump_lines(values: list[Any], *, trailing_newline: bool) -> str:
    text = "\n".join(json.dumps(v) for v in values)
    return text + "\n" if trailing_newline and values else text


def _usage_sums(llm: list[dict[str, Any]]) -> tuple[int, int, int]:
    inp = out = tot = 0
    for ex in llm:
        body = (ex.get("response") or {}).get("body")
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            continue
        i = usage.get("prompt_tokens", usage.get("input_tokens", 0)) or 0
        o = usage.get("completion_tokens", usage.get("output_tokens", 0)) or 0
        inp, out = inp + i, out + o
        tot += usage.get("total_tokens", i + o) or 0
    return inp, out, tot


@dataclass
class TrialSpec:
    """Every file of one production trial as Python data (``None`` = the file is not written)."""

    task: str
    rollout: str
    config: dict[str, Any]
    result: dict[str, Any]
    prompts: list[str]
    timing: dict[str, Any]
    rewards: list[dict[str, Any]] | None
    sandbox: dict[str, Any] | None
    acp: list[dict[str, Any]] | None
    llm: list[dict[str, Any]] | None
    row: dict[str, Any] | None

    # ------------------------------------------------------------------ derived fields

    def sync(self) -> TrialSpec:
        """Recompute what Benchflow derives: token sums, tool counts, reward copies, window."""
        r = self.result
        inp, out, tot = _usage_sums(self.llm or [])
        ar = r.setdefault("agent_result", {})
        ar.update({"n_input_tokens": inp, "n_output_tokens": out, "total_tokens": tot})
        r["final_metrics"].update({"total_prompt_tokens": inp, "total_completion_tokens": out})
        n_tools = sum(1 for e in self.acp or [] if e.get("type") == "tool_call")
        r["n_tool_calls"] = ar["n_tool_calls"] = n_tools
        r["trajectory_summary"] = _trajectory_summary(self.acp or [], r)
        rewards = r.get("rewards")
        reward = rewards.get("reward") if isinstance(rewards, dict) else None
        self.rewards = None if reward is None else [_reward_event(reward)]
        if isinstance(r.get("timing"), dict):
            self.timing = copy.deepcopy(r["timing"])
        if self.row is None:
            return self
        row = self.row
        score = float(reward) if reward is not None else 0.0
        row["reward"] = row["score"] = score
        row["metrics"] = {"n_tool_calls": n_tools, "n_prompts": len(self.prompts)}
        if reward is not None:
            row["metrics"]["reward"] = score
        row["total_tool_calls"] = float(n_tools)
        row_in = float(inp if inp + out > 0 else tot)
        row["token_usage"] = {
            "input_tokens": row_in,
            "output_tokens": float(out),
            "final_input_tokens": row_in,
            "final_output_tokens": float(out),
            "total_tokens": float(tot),
        }
        row["timing"] = copy.deepcopy(r.get("timing"))
        for step in row.get("trajectory") or []:
            step["reward"] = score
        self._window()
        return self

    def _window(self) -> None:
        """Top-level prompt/completion: the last user turn of the last step and what follows."""
        row = self.row
        assert row is not None
        steps = row.get("trajectory") or []
        if not steps:
            row["prompt"] = [{"role": "user", "content": p} for p in self.prompts]
            row["completion"] = None
            return
        msgs = steps[-1]["prompt"] + steps[-1]["completion"]
        users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
        start = users[-1] if users else 0
        row["prompt"] = copy.deepcopy(msgs[start : start + 1])
        row["completion"] = copy.deepcopy(msgs[start + 1 :])

    def rebuild_steps(self, indices: list[int] | None = None) -> TrialSpec:
        """Row steps from the given exchange indices (default: every status-200 exchange)."""
        assert self.row is not None and self.llm is not None
        if indices is None:
            indices = [
                i for i, ex in enumerate(self.llm) if ex["response"].get("status_code") == 200
            ]
        reward = self.row.get("reward", 0.0)
        tools: dict[str, Any] = {}
        for i in indices:
            for t in self.llm[i]["request"]["body"].get("tools") or []:
                tools.setdefault(t["function"]["name"], copy.deepcopy(t))
        self.row["tool_defs"] = list(tools.values())
        self.row["trajectory"] = [
            step_for(self.llm[i], i, rollout=self.rollout, reward=reward) for i in indices
        ]
        self._window()
        return self

    def not_ready(self, reason: str, error: str, message: str) -> TrialSpec:
        """Mark the row not training-ready the way Benchflow's writer does."""
        assert self.row is not None
        self.row["info"]["training_ready"] = False
        self.row["info"]["training_ready_reason"] = reason
        self.row["error"] = {
            "error": error,
            "error_chain_str": message,
            "error_chain_repr": message,
        }
        self.row["is_completed"] = False
        self.row["stop_condition"] = (
            error if error != "missing_llm_trajectory" else "agent_completed"
        )
        return self

    # ------------------------------------------------------------------ writing

    def write(self, root: Path, job: str = JOB, *, under: str = "") -> Trial:
        """Write the trial at ``root/<under>/<job>/<rollout>``; ``root`` is the run root."""
        path = root / under / job / self.rollout
        for sub in ("agent", "verifier", "artifacts", "trajectory", "trainer"):
            (path / sub).mkdir(parents=True, exist_ok=True)
        docs = {
            "config.json": self.config,
            "result.json": self.result,
            "timing.json": self.timing,
            "prompts.json": self.prompts,
            "sandbox.json": self.sandbox,
        }
        for name, value in docs.items():
            if value is not None:
                (path / name).write_text(_dump_doc(value))
        if self.rewards is not None:
            (path / "rewards.jsonl").write_text(_dump_lines(self.rewards, trailing_newline=True))
        reward = (self.result or {}).get("rewards") if isinstance(self.result, dict) else None
        if isinstance(reward, dict) and isinstance(reward.get("reward"), int | float):
            # What a live verifier leaves behind (the writer fixture's verifier/ is empty).
            (path / "verifier" / "test-stdout.txt").write_text("1 passed\n")
            (path / "verifier" / "reward.txt").write_text(f"{reward['reward']}\n")
        if self.acp is not None:
            (path / ACP_FILE).write_text(_dump_lines(self.acp, trailing_newline=False))
        if self.llm is not None:
            (path / LLM_FILE).write_text(_dump_lines(self.llm, trailing_newline=False))
        if self.row is not None:
            (path / ROWS_FILE).write_text(_dump_lines([self.row], trailing_newline=True))
        self._write_trainer(path / "trainer")
        return Trial(root=root, path=path)

    def _write_trainer(self, trainer: Path) -> None:
        """Minimal ACP-derived trainer files (not gate inputs; inventoried like real ones)."""
        details = {"task_id": self.task, "environment": self.task, "model": self.result["model"]}
        verifiers = {"example_id": 0, "prompt": self.prompts, "completion": [], "info": details}
        (trainer / "verifiers.jsonl").write_text(json.dumps(verifiers) + "\n")
        adp = {"schema_version": "1.3.1", "id": self.rollout, "content": [], "details": details}
        (trainer / "adp.jsonl").write_text(json.dumps(adp) + "\n")
        atif = {"schema_version": "ATIF-v1.7", "session_id": self.rollout, "steps": []}
        (trainer / "atif.json").write_text(_dump_doc(atif))


def _reward_event(value: float) -> dict[str, Any]:
    return {
        "ts": "2026-06-01T10:01:17.533",
        "type": "terminal",
        "source": "verifier",
        "value": value,
        "tag": "reward",
        "step_index": None,
        "space": "output",
        "granularity": "terminal",
        "meta": {},
    }


SKILLS_DIR = "/srv/bench/tasks/demo-task/environment/skills"  # a host path, as Benchflow keeps it


def _scenes() -> list[dict[str, Any]]:
    role = {"name": "agent", "agent": AGENT, "model": MODEL, "reasoning_effort": None}
    role.update(timeout_sec=None, idle_timeout_sec=None, skills_dir=None, capabilities=None)
    role["env_keys"] = []
    turns = [{"role": "agent", "has_prompt": False}]
    return [{"name": "default", "skills_dir": None, "roles": [role], "turns": turns}]


def _skills() -> dict[str, Any]:
    return {
        "skill_mode": "with-skill",
        "skill_source": "task_bundled",
        "requested_skills_dir": None,
        "effective_skills_dir": SKILLS_DIR,
        "skills_sandbox_dir": "/skills",
        "include_task_skills": True,
    }


def _config(task: str) -> dict[str, Any]:
    """``config.json`` with every 0.6.6+ key in write order (artifacts.md §3.1)."""
    source = {
        "type": "github",
        "repo": "benchflow-ai/skillsbench",
        "requested_ref": "main",
        "resolved_sha": "a" * 40,
        "path": f"tasks/{task}",
        "dirty": False,
        "file_hashes": {"task.toml": "sha256:" + "b" * 64},
    }
    return {
        "task_path": f"tasks/{task}",
        "agent": AGENT,
        "model": MODEL,
        "reasoning_effort": None,
        "environment": "daytona",
        "acp_transport": "pty",
        "environment_manifest": None,
        **_skills(),
        "sandbox_user": "agent",
        "sandbox_locked_paths": ["/solution", "/tests"],
        "sandbox_setup_timeout": 120,
        "skip_install": False,
        "agent_install_timeout": 900,
        "context_root": None,
        "base_image_override": None,
        "timeout_sec": 900,
        "concurrency": 4,
        "agent_idle_timeout_sec": 600,
        "started_at": STARTED,
        "agent_env": {"OPENAI_BASE_URL": "http://127.0.0.1:4000/v1", "FOO": "bar"},
        "scenes": _scenes(),
        "loop": {"strategy": "single-shot"},
        "usage_tracking": {"requested": "auto"},
        "source": source,
        "dataset_name": "skillsbench",
        "dataset_version": "1.0",
        "task_digest": "sha256:" + "c" * 64,
    }


def _result(task: str, rollout: str, config: dict[str, Any]) -> dict[str, Any]:
    """``result.json`` with every key in write order (artifacts.md §3.2); counts via sync()."""
    counts = {"n_tool_calls": 0, "n_skill_invocations": 0, "n_prompts": 1}
    diagnostics = (
        "idle_timeout_info",
        "agent_timeout_info",
        "sandbox_startup_info",
        "transport_error_info",
        "verifier_timeout_info",
        "api_error_info",
        "suspected_api_error_info",
    )
    return {
        "task_name": task,
        "rollout_name": rollout,
        "rewards": {"reward": 1.0},
        "agent": AGENT,
        "agent_name": AGENT,
        "model": MODEL,
        **_skills(),
        **counts,
        "agent_result": {
            **counts,
            "n_input_tokens": 0,
            "n_output_tokens": 0,
            "n_cache_read_tokens": 0,
            "n_cache_creation_tokens": 0,
            "total_tokens": 0,
            "cost_usd": 0.0012,
            "usage_source": "provider_response",
            "price_source": "litellm",
        },
        "final_metrics": {
            "total_prompt_tokens": 0,
            "total_completion_tokens": 0,
            "total_cached_tokens": 0,
            "total_cost_usd": 0.0012,
        },
        "trajectory_summary": {},
        "usage_tracking": {
            "requested": "auto",
            "status": "enabled",
            "environment": "daytona",
            "endpoint_kind": "sandbox",
            "usage_source": "provider_response",
        },
        "error": None,
        "error_category": None,
        "verifier_error": None,
        "verifier_error_category": None,
        "export_error": None,
        **dict.fromkeys(diagnostics),
        "partial_trajectory": False,
        "trajectory_source": "acp",
        "started_at": STARTED,
        "finished_at": FINISHED,
        "timing": dict(TIMING),
        "scenes": _scenes(),
        "loop": {"strategy": "single-shot"},
        "source": copy.deepcopy(config["source"]),
        "dataset_name": config["dataset_name"],
        "dataset_version": config["dataset_version"],
        "task_digest": config["task_digest"],
        "sandbox_id": "sbx-123",
    }


def _trajectory_summary(acp: list[dict[str, Any]], result: dict[str, Any]) -> dict[str, Any]:
    types = [e.get("type") for e in acp]
    kinds = {"user_message": "user_message_steps", "agent_message": "agent_message_steps"}
    kinds.update(agent_thought="agent_thought_steps", tool_call="tool_call_steps")
    summary: dict[str, Any] = {"steps": len(acp)}
    for etype, key in kinds.items():
        summary[key] = types.count(etype)
    summary["other_steps"] = sum(1 for t in types if t not in kinds)
    summary["event_type_counts"] = {t: types.count(t) for t in dict.fromkeys(types) if t}
    statuses = [e.get("status") for e in acp if e.get("type") == "tool_call"]
    summary["tool_call_status_counts"] = {s: statuses.count(s) for s in dict.fromkeys(statuses)}
    summary["partial_trajectory"] = result.get("partial_trajectory")
    summary["trajectory_source"] = result.get("trajectory_source")
    return summary


def _row(task: str, rollout: str) -> dict[str, Any]:
    return {
        "example_id": 0,
        "prompt": [],
        "completion": [],
        "info": {
            "task_id": task,
            "task_name": task,
            "rollout_name": rollout,
            "environment": task,
            "agent": AGENT,
            "agent_name": AGENT,
            "model": MODEL,
            "source": "benchflow",
            "rollout_dir": f"/srv/bench/jobs/{JOB}/{rollout}",
            "training_ready": True,
            "training_ready_reason": None,
        },
        "reward": 0.0,
        "error": None,
        "timing": {},
        "is_completed": True,
        "is_truncated": False,
        "stop_condition": "agent_completed",
        "metrics": {},
        "tool_defs": [],
        "token_usage": {},
        "score": 0.0,
        "total_tool_calls": 0.0,
        "trajectory": [],
    }


def healthy_spec(
    *, task: str = TASK, rollout_id: str = "aaaa1111", tools: bool = True, proven: bool = True
) -> TrialSpec:
    """A valid with-skill pass: ``outcome == "pass"``, healthy, training-ready, publishable.

    ``tools=False`` gives the same pass without any tool call (one exchange, one step).
    ``proven`` (the default) proves its skill load, as a publishable with-skill trial must:
    ``config.json`` declares the task skill (``task_skills``) and the startup request lists
    it.  ``proven=False`` is Benchflow's writer fixture ``demo-task__aaaa1111`` exactly (up
    to timestamps): no catalog, no declared skill, so quarantined (SKILL_CATALOG_UNKNOWN).
    """
    rollout = f"{task}__{rollout_id}"
    config = _config(task)
    if proven:
        config["task_skills"] = [TASK_SKILL]
    if tools:
        call = tool_call("call_1", "echo hi > hello.txt")
        acp = [
            {"type": "user_message", "text": INSTRUCTION},
            {"type": "agent_thought", "text": "I will write the file."},
            {
                "type": "tool_call",
                "tool_call_id": "call_1",
                "kind": "execute",
                "title": "echo hi > hello.txt",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}],
            },
            {"type": "agent_message", "text": "Done."},
        ]
        first = chat_exchange(opening(proven), assistant(None, call), usage=(100, 20), took=2)
        follow = [*opening(proven), assistant(None, call), tool_result("call_1")]
        llm = [first, chat_exchange(follow, assistant("Done."), usage=(140, 5), second=3, n=2)]
    else:
        acp = [
            {"type": "user_message", "text": INSTRUCTION},
            {"type": "agent_message", "text": "Done."},
        ]
        llm = [chat_exchange(opening(proven), assistant("Done."), usage=(100, 5), second=0)]
    spec = TrialSpec(
        task=task,
        rollout=rollout,
        config=config,
        result=_result(task, rollout, config),
        prompts=[INSTRUCTION],
        timing=dict(TIMING),
        rewards=None,
        sandbox={"sandbox_id": "sbx-123", "provider": "DaytonaSandbox", "created_at": FINISHED},
        acp=acp,
        llm=llm,
        row=_row(task, rollout),
    )
    return spec.rebuild_steps().sync()


def timeout_spec(*, task: str = TASK, rollout_id: str = "eeee5555") -> TrialSpec:
    """A clean wall-clock timeout (scored, complete trajectories): a healthy ``normal_timeout``."""
    spec = healthy_spec(task=task, rollout_id=rollout_id)
    message = "Agent prompt exceeded wall-clock budget 900s"
    spec.result.update(
        {
            "rewards": {"reward": 0.0},
            "error": message,
            "error_category": "timeout",
            "agent_timeout_info": {
                "reason": "wall_clock_timeout",
                "timeout_sec": 900.0,
                "n_tool_calls": 1,
                "pending_tool_call_ids": [],
                "terminal_event_recorded": True,
                "terminal_trajectory_complete": True,
            },
        }
    )
    assert spec.acp is not None
    spec.acp.append(
        {
            "type": "agent_timeout",
            "reason": "wall_clock_timeout",
            "timeout_sec": 900.0,
            "pending_tool_call_ids": [],
            "terminal_trajectory_complete": True,
        }
    )
    return spec.sync().not_ready("agent_error", "agent_error", message)


def oracle_spec(*, task: str = TASK, rollout_id: str = "dddd4444") -> TrialSpec:
    """An oracle lane on Docker: one ``oracle`` ACP event, no LLM trajectory, zero usage."""
    spec = healthy_spec(task=task, rollout_id=rollout_id)
    spec.config.update(
        {
            "agent": "oracle",
            "model": None,
            "environment": "docker",
            "acp_transport": "docker-stdio",
            "skill_mode": "no-skill",
        }
    )
    r = spec.result
    r.update({"agent": "oracle", "agent_name": "oracle", "model": None, "skill_mode": "no-skill"})
    r.update({"trajectory_source": None, "sandbox_id": None})
    r["agent_result"].update({"usage_source": "unavailable", "cost_usd": None})
    r["timing"] = {"environment_setup": 12.3, "verifier": 5.5, "total": 30.0}
    spec.sandbox = None
    spec.acp = [
        {
            "type": "oracle",
            "command": "solution/solve.sh",
            "return_code": 0,
            "stdout": "wrote hello.txt",
        }
    ]
    spec.llm = None
    assert spec.row is not None
    spec.row["info"].update({"agent": "oracle", "agent_name": "oracle", "model": None})
    spec.row["trajectory"] = []
    spec.row["tool_defs"] = []
    spec.sync()
    return spec.not_ready(
        "missing_healthy_structured_llm_trajectory",
        "missing_llm_trajectory",
        "Rollout is not training-ready: missing_healthy_structured_llm_trajectory",
    )


def fail_spec(*, rollout_id: str = "aaaa0000") -> TrialSpec:
    """The healthy run scored 0.0: a present reward, a healthy model-capability ``fail``."""
    spec = healthy_spec(rollout_id=rollout_id)
    spec.result["rewards"] = {"reward": 0.0}
    return spec.sync()


def total_only_spec(*, rollout_id: str = "aaaa2222") -> TrialSpec:
    """Every usage source reports only a total (a provider that gives ``total_tokens`` only)."""
    spec = healthy_spec(rollout_id=rollout_id)
    assert spec.llm is not None
    for ex in spec.llm:
        usage = ex["response"]["body"]["usage"]
        ex["response"]["body"]["usage"] = {"total_tokens": usage["total_tokens"]}
    return spec.rebuild_steps().sync()


def retry_spec(*, status: int = 429, rollout_id: str = "aaaa3333") -> TrialSpec:
    """A failed provider call retried with the identical body: kept in the file, not a step."""
    spec = healthy_spec(rollout_id=rollout_id)
    assert spec.llm is not None
    spec.llm.insert(0, failed_exchange(opening(), status=status))
    return spec.rebuild_steps([1, 2]).sync()


def errored_spec(message: str, category: str | None, *, reward: float | None = 0.0) -> TrialSpec:
    """The run ended with an agent-side ``error`` and a consistent not-ready row."""
    spec = healthy_spec(rollout_id="aaaa4444")
    spec.result.update(
        {
            "rewards": None if reward is None else {"reward": reward},
            "error": message,
            "error_category": category,
        }
    )
    return spec.sync().not_ready("agent_error", "agent_error", message)


def build_trial(root: Path, **kwargs: Any) -> Trial:
    """Write the healthy trial under ``root/<JOB>/<task>__<id>`` and return its handle."""
    return healthy_spec(**kwargs).write(root)


# --------------------------------------------------------------------------- the handle


@dataclass
class Trial:
    """A trial written on disk, with knobs to mutate its files and a way to review it."""

    root: Path
    path: Path

    def file(self, rel: str) -> Path:
        return self.path / rel

    def drop(self, rel: str) -> None:
        self.file(rel).unlink()

    def write_text(self, rel: str, text: str) -> None:
        self.file(rel).parent.mkdir(parents=True, exist_ok=True)
        self.file(rel).write_text(text)

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.file(rel).parent.mkdir(parents=True, exist_ok=True)
        self.file(rel).write_bytes(data)

    def rewrite_in_place(self, rel: str, old: bytes, new: bytes) -> None:
        """Replace the first ``old`` of file ``rel`` with ``new`` (the same length) and put
        back its times: the same size and mtime, other bytes."""
        assert len(old) == len(new) and old != new
        p = self.file(rel)
        st = p.stat()
        data = p.read_bytes()
        assert old in data, f"{old!r} is not in {rel}"
        p.write_bytes(data.replace(old, new, 1))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns

    # ------------------------------------------------------------------ JSON documents

    def read_json(self, rel: str) -> Any:
        return json.loads(self.file(rel).read_text())

    def write_json(self, rel: str, value: Any) -> None:
        self.write_text(rel, _dump_doc(value))

    # ------------------------------------------------------------------ JSONL files

    def lines(self, rel: str) -> list[str]:
        return self.file(rel).read_text().split("\n")

    def _write_lines(self, rel: str, lines: list[str]) -> None:
        self.write_text(rel, "\n".join(lines))

    def replace_line(self, rel: str, lineno: int, text: str) -> None:
        """Replace the 1-based physical line ``lineno`` of a JSONL file."""
        lines = self.lines(rel)
        lines[lineno - 1] = text
        self._write_lines(rel, lines)

    def append_line(self, rel: str, text: str) -> None:
        lines = [x for x in self.lines(rel) if x.strip()]
        trailing = rel == ROWS_FILE
        self._write_lines(rel, [*lines, text] + ([""] if trailing else []))

    def read_line(self, rel: str, lineno: int = 1) -> Any:
        return json.loads(self.lines(rel)[lineno - 1])

    def write_line(self, rel: str, lineno: int, value: Any) -> None:
        self.replace_line(rel, lineno, json.dumps(value))

    # ------------------------------------------------------------------ fields

    def _is_jsonl(self, rel: str) -> bool:
        return rel.endswith(".jsonl")

    def set_field(self, rel: str, dotted: str, value: Any, *, line: int = 1) -> None:
        """Set a (dotted, list-index aware) field of a JSON document or of one JSONL line."""
        if self._is_jsonl(rel):
            obj = self.read_line(rel, line)
            set_path(obj, dotted, value)
            self.write_line(rel, line, obj)
        else:
            obj = self.read_json(rel)
            set_path(obj, dotted, value)
            self.write_json(rel, obj)

    def del_field(self, rel: str, dotted: str, *, line: int = 1) -> None:
        if self._is_jsonl(rel):
            obj = self.read_line(rel, line)
            del_path(obj, dotted)
            self.write_line(rel, line, obj)
        else:
            obj = self.read_json(rel)
            del_path(obj, dotted)
            self.write_json(rel, obj)

    def set_row(self, dotted: str, value: Any) -> None:
        self.set_field(ROWS_FILE, dotted, value)

    def set_result(self, dotted: str, value: Any) -> None:
        self.set_field("result.json", dotted, value)

    # ------------------------------------------------------------------ review

    def ref(self) -> TrialRef:
        """This trial as discovery reports it (fails when discovery does not find it)."""
        for ref in discover([self.root]).trials:
            if Path(ref.path) == self.path:
                return ref
        raise AssertionError(f"discovery did not report {self.path}")

    def review(self, limits: ReadLimits | None = None) -> TrialReview:
        """The hard gate alone (what the gate tests judge)."""
        opts = (
            ReviewOptions(limits=limits, audits=False)
            if limits is not None
            else ReviewOptions(audits=False)
        )
        return review_trial(self.ref(), opts)

    def full_review(self, limits: ReadLimits | None = None) -> TrialReview:
        """The gate and every audit, as the CLI runs them."""
        return review_trial(
            self.ref(), ReviewOptions(limits=limits) if limits is not None else None
        )

    def checks(self, limits: ReadLimits | None = None) -> set[str]:
        return {f.check for f in self.review(limits).findings}


def check_ids(review: TrialReview) -> set[str]:
    return {f.check for f in review.findings}


# --------------------------------------------------------------------------- test helpers


@contextmanager
def peak_traced_memory() -> Iterator[list[int]]:
    """Yields a one-item list that holds the peak traced bytes once the block ends."""
    out: list[int] = []
    tracemalloc.start()
    try:
        yield out
    finally:
        out.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


@contextmanager
def deadline(seconds: int = 5) -> Iterator[None]:
    """Fail instead of hanging if a reader ever opens a FIFO (an open blocks on it)."""

    def _expired(signum: int, frame: Any) -> None:
        raise TimeoutError("a reader blocked: it opened a special file")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def quarantine_first_trial(corpus: Path, out_dir: Path) -> Path:
    """A quarantine file (YAML) that quarantines the first trial of the first job of a
    generated corpus (``corpus/jobs/<job>/<trial>``)."""
    job = sorted((corpus / "jobs").iterdir())[0]
    trial = sorted(p for p in job.iterdir() if p.is_dir())[0]
    q = out_dir / "quarantine.yaml"
    q.write_text(
        f"- trial: {job.name}/{trial.name}\n  action: quarantine\n"
        '  reason: "looked too good"\n  by: reviewer\n  at: 2026-11-03\n'
    )
    return q
