"""The agent phase: one LLM exchange per scripted action, plus the ACP events it leaves."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from bf_sample import bodies as B
from bf_sample.harness import HARNESSES, catalog_entries
from bf_sample.plan import PlannedTrial
from bf_sample.tasks import Action, Task

FALLBACK_START = datetime(2026, 6, 1)
# scenarios whose agent ends with a tool call still running (partial ACP trajectory)
PENDING = {"partial_timeout", "incomplete"}


def epoch(dt: datetime) -> int:
    """Seconds since 1970 for a naive timestamp read as UTC (machine-independent)."""
    return int((dt - datetime(1970, 1, 1)).total_seconds())


def acp_tool_event(harness: str, action: Action, call_id: str, status: str) -> dict[str, Any]:
    """The ACP ``tool_call`` event a harness reports for an action (artifacts.md §3.7)."""
    info = HARNESSES[harness]
    text_block = [{"type": "content", "content": {"type": "text", "text": action.output}}]
    if action.kind == "shell":
        kind, title, content = "execute", action.command, text_block
    elif action.kind == "write":
        if harness == "codex-acp":
            kind, title, content = "execute", f"cat > {action.path} <<'EOF'", []
        else:
            diff = {"type": "diff", "path": action.path, "oldText": None, "newText": action.content}
            kind, title, content = "edit", f"Write {action.path}", [diff]
    elif harness == "codex-acp":
        kind, title, content = "read", f"Read {info.skill_root}/{action.skill}/SKILL.md", text_block
    else:
        key = {"claude-agent-acp": ("Skill", "skill"), "openhands": ("invoke_skill", "name")}
        tool, arg = key.get(harness, ("activate_skill", "name"))
        kind, title = "skill", f"{tool} {json.dumps({arg: action.skill})}"
        content = text_block
    if status != "completed":
        content = []
    return {
        "type": "tool_call",
        "tool_call_id": call_id,
        "kind": kind,
        "title": title,
        "status": status,
        "content": content,
    }


def observed(harness: str, action: Action) -> Action:
    """The tool result as the harness feeds it back to the model."""
    if action.kind == "final":
        return action
    out = action.output
    if harness == "codex-acp":
        text = "" if action.kind == "write" else out + "\n"
        meta = {"exit_code": 0, "duration_seconds": 0.1}
        out = json.dumps({"output": text, "metadata": meta}, separators=(",", ":"))
    elif harness == "claude-agent-acp" and action.kind == "skill":
        out = f"Launching skill: {action.skill}\n\n{out}"
    elif harness == "gemini" and action.kind == "skill":
        out = f'<activated_skill name="{action.skill}">\n{out}\n</activated_skill>'
    return replace(action, output=out)


@dataclass
class Run:
    """What the agent phase produced."""

    exchanges: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    usages: list[B.Usage] = field(default_factory=list)
    cost: float = 0.0
    pending: list[str] = field(default_factory=list)
    end: datetime = FALLBACK_START


def _exchange(
    conv: B.Conversation,
    body: dict[str, Any],
    response: dict[str, Any],
    status: int,
    t0: datetime,
    t1: datetime,
) -> dict[str, Any]:
    info = conv.info
    return {
        "request": {
            "timestamp": t0.isoformat(),
            "method": "POST",
            "path": info.path,
            "headers": {},
            "body": body,
        },
        "response": {
            "timestamp": t1.isoformat(),
            "status_code": status,
            "headers": {},
            "body": response,
        },
        "duration_ms": round((t1 - t0).total_seconds() * 1000, 3),
        "metadata": {
            "request_model": info.alias,
            "provider_model": info.model,
            "model_group": info.alias,
            "call_type": info.call_type,
            "input_shape": conv.input_shape(),
            "call_purpose": "agent",
        },
    }


def _rate_limit_body(conv: B.Conversation, rng: random.Random) -> dict[str, Any]:
    msg = (
        'litellm.RateLimitError: AnthropicException - {"type":"error","error":{"type":'
        '"rate_limit_error","message":"This request would exceed the rate limit for your '
        'organization of 400,000 input tokens per minute."},"request_id":"req_'
        + B.token(rng, 24)
        + '"}'
    )
    tb = (
        'Traceback (most recent call last):\n  File "/usr/local/lib/python3.12/site-packages/'
        'litellm/proxy/anthropic_endpoints/endpoints.py", line 212, in anthropic_response\n'
        "    response = await llm_router.aanthropic_messages(**data)\n"
        f"litellm.exceptions.RateLimitError: {msg}\n"
    )
    return {
        "raw": None,
        "model": conv.info.model,
        "error": {"type": "RateLimitError", "message": msg, "traceback": tb},
    }


def run_agent(
    plan: PlannedTrial,
    task: Task,
    actions: list[Action],
    rng: random.Random,
    t: datetime,
    *,
    duplicate_exchange: int | None,
    stretch: float,
) -> Run:
    """Drive the conversation: one LLM exchange per action (scenario quirks included)."""
    with_skill = plan.skill_mode == "with-skill"
    entries = catalog_entries(HARNESSES[plan.harness], task, with_skill)
    conv = B.conversation(plan.harness, entries, task.instruction)
    run = Run(events=[{"type": "user_message", "text": task.instruction}])
    prev_prompt = 0
    for i, raw_action in enumerate(actions):
        action = observed(plan.harness, raw_action)
        body = conv.body()
        usage = B.next_usage(conv, len(json.dumps(body)), action, prev_prompt, rng)
        prev_prompt = usage.prompt
        if plan.scenario == "no_usage":
            usage = B.Usage(0, 0)
        call_id = ""
        for _ in range(2 if duplicate_exchange == i else 1):
            call_id = conv.call_id(rng) if conv.call(action) is not None else ""
            t1 = t + timedelta(seconds=rng.uniform(1.2, 9.0) * (1 + i * 0.15))
            resp = conv.response(action, call_id, usage, conv.response_id(rng), epoch(t1))
            run.exchanges.append(_exchange(conv, body, resp, 200, t, t1))
            run.usages.append(usage)
            run.cost += B.cost(conv.info, usage)
            t = t1 + timedelta(seconds=rng.uniform(0.05, 0.6))
        if action.thought and plan.harness != "openhands":
            run.events.append({"type": "agent_thought", "text": action.thought})
        if action.say and (action.kind == "final" or plan.harness != "codex-acp"):
            run.events.append({"type": "agent_message", "text": action.say})
        if action.kind == "final":
            break
        pending = plan.scenario in PENDING or plan.is_retry_errored
        if pending and i == len(actions) - 1:
            run.events.append(acp_tool_event(plan.harness, raw_action, call_id, "in_progress"))
            run.pending.append(call_id)
            break
        run.events.append(acp_tool_event(plan.harness, raw_action, call_id, "completed"))
        conv.push(action, call_id)
        t += timedelta(seconds=rng.uniform(0.3, 4.0) * stretch)
        if plan.scenario == "api_rate_limit":
            body = conv.body()
            for attempt in range(3):
                t1 = t + timedelta(seconds=rng.uniform(0.2, 0.9))
                run.exchanges.append(_exchange(conv, body, _rate_limit_body(conv, rng), 429, t, t1))
                t = t1 + timedelta(seconds=2.0**attempt + rng.uniform(0, 1))
            break
    run.end = t
    return run
