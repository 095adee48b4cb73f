"""Validation of OpenAI-style message lists in a ``results.jsonl`` row and its steps.

Rules of Benchflow's ``validate_prime_sft_row`` plus the project's stricter ones: a tool
message must answer an earlier call by id, tool arguments must be JSON objects, a called
tool must be defined, and banned keys are looked for on every message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from bf_assets.contract import BANNED_MESSAGE_KEYS

ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Problem:
    check: str  # GATE_ROW_SHAPE | GATE_ROW_TOOLDEFS | GATE_ROW_BANNED_KEY
    message: str


def tool_names(tool_defs: Any) -> set[str] | None:
    """Names defined in ``tool_defs`` (None when the value is not a usable list)."""
    if isinstance(tool_defs, str):
        try:
            tool_defs = orjson.loads(tool_defs)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(tool_defs, list):
        return None
    names: set[str] = set()
    for t in tool_defs:
        if not isinstance(t, dict):
            continue
        fn = t.get("function")
        name = fn.get("name") if isinstance(fn, dict) else t.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def check_messages(
    messages: Any,
    *,
    where: str,
    defined_tools: set[str] | None,
    require_assistant: bool = True,
    check_tooldefs: bool = True,
    limit: int = 5,
) -> list[Problem]:
    """Problems of one message list; at most ``limit`` per kind to keep reports short."""
    out: list[Problem] = []
    if not isinstance(messages, list) or not messages:
        return [Problem("GATE_ROW_SHAPE", f"{where} is not a non-empty list of messages")]
    seen_calls: set[str] = set()
    has_assistant = False
    any_calls = False
    for i, m in enumerate(messages):
        if len(out) >= limit:
            break
        if not isinstance(m, dict):
            out.append(Problem("GATE_ROW_SHAPE", f"{where}[{i}] is not an object"))
            continue
        banned = sorted(BANNED_MESSAGE_KEYS.intersection(m))
        if banned:
            out.append(
                Problem(
                    "GATE_ROW_BANNED_KEY", f"{where}[{i}] carries banned key(s) {', '.join(banned)}"
                )
            )
        role = m.get("role")
        if role not in ROLES:
            out.append(Problem("GATE_ROW_SHAPE", f"{where}[{i}] has invalid role {role!r}"))
            continue
        if role == "system" and i != 0:
            out.append(
                Problem(
                    "GATE_ROW_SHAPE", f"{where}[{i}] is a system message after the first position"
                )
            )
        if "content" not in m and "tool_calls" not in m:
            out.append(
                Problem("GATE_ROW_SHAPE", f"{where}[{i}] has neither content nor tool_calls")
            )
        calls = m.get("tool_calls")
        if calls and role != "assistant":
            out.append(Problem("GATE_ROW_SHAPE", f"{where}[{i}] ({role}) carries tool_calls"))
        if role == "assistant":
            has_assistant = True
            for call in calls or []:
                if not isinstance(call, dict):
                    out.append(
                        Problem(
                            "GATE_ROW_SHAPE", f"{where}[{i}] has a tool call that is not an object"
                        )
                    )
                    continue
                any_calls = True
                cid = call.get("id")
                if isinstance(cid, str) and cid:
                    seen_calls.add(cid)
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                name = fn.get("name")
                args = fn.get("arguments")
                if not _is_json_object(args):
                    out.append(
                        Problem(
                            "GATE_ROW_SHAPE",
                            f"{where}[{i}] tool call {name!r} has arguments that are not a JSON object",
                        )
                    )
                if check_tooldefs and defined_tools and name not in defined_tools:
                    out.append(
                        Problem(
                            "GATE_ROW_TOOLDEFS",
                            f"{where}[{i}] calls tool {name!r}, which tool_defs does not define",
                        )
                    )
        if role == "tool":
            tcid = m.get("tool_call_id")
            if not isinstance(tcid, str) or not tcid:
                out.append(
                    Problem(
                        "GATE_ROW_SHAPE", f"{where}[{i}] is a tool message without tool_call_id"
                    )
                )
            elif tcid not in seen_calls:
                out.append(
                    Problem(
                        "GATE_ROW_SHAPE",
                        f"{where}[{i}] answers tool call {tcid!r}, which no earlier message made",
                    )
                )
    if require_assistant and not has_assistant:
        out.append(Problem("GATE_ROW_SHAPE", f"{where} has no assistant message"))
    if check_tooldefs and any_calls and not defined_tools:
        out.append(
            Problem(
                "GATE_ROW_TOOLDEFS", f"{where} has tool calls but tool_defs is empty or missing"
            )
        )
    return out


def _is_json_object(args: Any) -> bool:
    if isinstance(args, dict):
        return True
    if not isinstance(args, str):
        return False
    try:
        return isinstance(orjson.loads(args), dict)
    except orjson.JSONDecodeError:
        return False


@dataclass(slots=True)
class StepFacts:
    """What the gate keeps of one ``trajectory[]`` step (the step itself is dropped)."""

    position: int
    is_object: bool
    exchange_index: Any
    source: Any
    has_extras: bool
    is_truncated: Any
    problems: list[Problem]
    called_tools: frozenset[str] = frozenset()


def called_tool_names(messages: Any) -> set[str]:
    names: set[str] = set()
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    names.add(fn["name"])
    return names


def step_facts(position: int, step: Any) -> StepFacts:
    """Facts of one step; tool definitions are checked later against the row's ``tool_defs``."""
    if not isinstance(step, dict):
        return StepFacts(
            position,
            False,
            None,
            None,
            False,
            None,
            [Problem("GATE_ROW_SHAPE", f"trajectory[{position}] is not an object")],
        )
    extras = step.get("extras")
    problems: list[Problem] = []
    called: set[str] = set()
    prompt, completion = step.get("prompt"), step.get("completion")
    if not isinstance(prompt, list) or not isinstance(completion, list):
        problems.append(
            Problem("GATE_ROW_SHAPE", f"trajectory[{position}] prompt/completion are not lists")
        )
    else:
        msgs = prompt + completion
        problems.extend(
            check_messages(
                msgs, where=f"trajectory[{position}]", defined_tools=None, check_tooldefs=False
            )
        )
        called = called_tool_names(msgs)
    return StepFacts(
        position=position,
        is_object=True,
        exchange_index=extras.get("exchange_index") if isinstance(extras, dict) else None,
        source=extras.get("source") if isinstance(extras, dict) else None,
        has_extras=isinstance(extras, dict),
        is_truncated=step.get("is_truncated"),
        problems=problems,
        called_tools=frozenset(called),
    )
