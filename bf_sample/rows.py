"""The rollout ``results.jsonl`` row, built the way Benchflow's writer builds it (artifacts.md §5).

Only the LLM exchanges feed the row: strict parse, training-success selection and dedup
(§5.2), OpenAI-style normalization (§5.3), the ``training_ready`` rule and its reason (§5.4).
This is an independent re-implementation for sample data, not Benchflow's code.
"""

from __future__ import annotations

import json
from typing import Any

STEP_SOURCE = {"source": "llm_trajectory", "tracking_source": "litellm_callback"}


# -- normalization (§5.3) ---------------------------------------------------------------------
def flatten(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                text = item.get("text")
                if text is None:
                    text = item.get("content")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    return str(content)


def norm_call(call_id: Any, name: Any, arguments: Any, index: int) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments or {}, sort_keys=True)
    return {
        "id": str(call_id or f"call_{index:06d}"),
        "type": "function",
        "function": {"name": str(name or "tool"), "arguments": arguments},
    }


def norm_message(msg: dict[str, Any]) -> dict[str, Any]:
    kind = msg.get("type")
    if kind == "function_call":
        call = norm_call(
            msg.get("call_id") or msg.get("id"), msg.get("name"), msg.get("arguments", {}), 0
        )
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    if kind == "function_call_output":
        return {
            "role": "tool",
            "tool_call_id": str(msg.get("call_id") or msg.get("id") or ""),
            "content": flatten(msg.get("output")),
        }
    role = {"developer": "system", "model": "assistant"}.get(
        msg.get("role"), msg.get("role") or "user"
    )
    out: dict[str, Any] = {"role": str(role)}
    if role == "tool" and msg.get("tool_call_id") is not None:
        out["tool_call_id"] = str(msg["tool_call_id"])
    out["content"] = flatten(msg.get("content"))
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [
            norm_call(
                c.get("id"),
                (c.get("function") or {}).get("name") or c.get("name"),
                (c.get("function") or {}).get("arguments", c.get("arguments", {})),
                i,
            )
            for i, c in enumerate(calls)
            if isinstance(c, dict)
        ]
    return out


def norm_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for item in body.get("tools") or []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("function"), dict):
            fn = dict(item["function"])
        else:
            fn = {
                "name": item.get("name"),
                "description": item.get("description", ""),
                "parameters": item.get("parameters", {"type": "object", "properties": {}}),
            }
        if not fn.get("name"):
            continue
        fn.setdefault("description", "")
        fn.setdefault("parameters", {"type": "object", "properties": {}})
        tools.append({"type": "function", "function": fn})
    return tools


def assistant_message(body: dict[str, Any], chat: bool) -> dict[str, Any] | None:
    if chat:
        choices = body.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0].get("message"), dict):
            return norm_message(choices[0]["message"])
        content = body.get("content")
        if isinstance(content, list) and content:  # Anthropic blocks
            msg: dict[str, Any] = {"role": "assistant", "content": flatten(content)}
            uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
            if uses:
                msg["tool_calls"] = [
                    norm_call(b.get("id"), b.get("name"), b.get("input", {}), i)
                    for i, b in enumerate(uses)
                ]
            return msg
    output = body.get("output")
    if not isinstance(output, list):
        return None
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            texts.append(flatten(item.get("content")))
        elif item.get("type") in ("function_call", "tool_call"):
            calls.append(
                norm_call(
                    item.get("call_id") or item.get("id"),
                    item.get("name"),
                    item.get("arguments", {}),
                    len(calls),
                )
            )
    if not texts and not calls:
        return None
    msg = {"role": "assistant", "content": "\n".join(t for t in texts if t)}
    if calls:
        msg["tool_calls"] = calls
    return msg


def normalize_exchange(
    ex: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(messages incl. the final assistant, tool_defs), or None when no assistant message."""
    body = ex["request"]["body"]
    chat = "messages" in body
    if chat:
        raw = [
            m
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("type") != "reasoning"
        ]
        msgs = [norm_message(m) for m in raw]
    else:
        msgs = (
            [{"role": "system", "content": flatten(body["instructions"])}]
            if body.get("instructions")
            else []
        )
        msgs += [
            norm_message(m)
            for m in body.get("input") or []
            if isinstance(m, dict) and m.get("type") != "reasoning"
        ]
    assistant = assistant_message(ex["response"]["body"], chat)
    if assistant is None:
        return None
    msgs.append(assistant)
    msgs = [dict(m, role="user") if i and m["role"] == "system" else m for i, m in enumerate(msgs)]
    return msgs, norm_tools(body)


# -- selection (§5.2) -------------------------------------------------------------------------
def response_call_ids(body: Any) -> list[tuple[str, str]]:
    """(id, name) of the tool calls in a response body (chat, Responses, Anthropic)."""
    if not isinstance(body, dict):
        return []
    found: list[tuple[str, str]] = []
    for item in body.get("output") or []:
        if isinstance(item, dict) and item.get("type") in ("function_call", "tool_call"):
            found.append((str(item.get("call_id") or item.get("id")), str(item.get("name"))))
    for choice in body.get("choices") or []:
        for call in ((choice or {}).get("message") or {}).get("tool_calls") or []:
            found.append((str(call.get("id")), str((call.get("function") or {}).get("name"))))
    if isinstance(body.get("content"), list):
        for block in body["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                found.append((str(block.get("id")), str(block.get("name"))))
    return found


def request_ids(body: Any) -> set[str]:
    """Tool-call ids a request body refers to (echoed calls and their results)."""
    ids: set[str] = set()
    if not isinstance(body, dict):
        return ids
    for msg in list(body.get("messages") or []) + list(body.get("input") or []):
        if not isinstance(msg, dict):
            continue
        for key in ("tool_call_id", "call_id"):
            if msg.get(key):
                ids.add(str(msg[key]))
        for call in msg.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id"):
                ids.add(str(call["id"]))
        if isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict):
                    for key in ("tool_use_id", "id"):
                        if block.get(key):
                            ids.add(str(block[key]))
    return ids


def is_candidate(ex: dict[str, Any]) -> bool:
    resp = ex.get("response") or {}
    body = resp.get("body")
    return (
        resp.get("status_code") == 200
        and isinstance(body, dict)
        and body.get("status") in (None, "completed")
        and not body.get("incomplete_details")
    )


def select(exchanges: list[dict[str, Any]]) -> list[int]:
    """Indices of the training-success exchanges, in file order."""
    later: list[set[str]] = [set() for _ in exchanges]
    seen: set[str] = set()
    for i in range(len(exchanges) - 1, -1, -1):
        later[i] = set(seen)
        seen |= request_ids((exchanges[i].get("request") or {}).get("body"))
    groups: dict[str, list[int]] = {}
    for i, ex in enumerate(exchanges):
        if is_candidate(ex):
            key = json.dumps(ex["request"]["body"], sort_keys=True, separators=(",", ":"))
            groups.setdefault(key, []).append(i)
    chosen: list[int] = []
    last = len(exchanges) - 1
    for members in groups.values():
        consumed = safe = None
        for i in members:
            calls = response_call_ids(exchanges[i]["response"]["body"])
            if calls and all(cid in later[i] for cid, _ in calls):
                consumed = i
            if not calls or all(name == "finish" for _, name in calls) or i == last:
                safe = i
        pick = consumed if consumed is not None else safe
        if pick is not None:
            chosen.append(pick)
    return sorted(chosen)


# -- the row (§5.1, §5.4) ---------------------------------------------------------------------
def _window(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    msgs = steps[-1]["prompt"] + steps[-1]["completion"]
    for i in range(len(msgs) - 2, -1, -1):
        if msgs[i]["role"] == "user" and msgs[i + 1]["role"] == "assistant":
            return [msgs[i]], msgs[i + 1 :]
    first = steps[0]["prompt"]
    return first, msgs[len(first) :]


def token_usage(agent_result: dict[str, Any]) -> dict[str, float]:
    inp = float(agent_result.get("n_input_tokens") or 0)
    out = float(agent_result.get("n_output_tokens") or 0)
    total = float(agent_result.get("total_tokens") or 0)
    if inp + out == 0 and total > 0:
        inp = total
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "final_input_tokens": inp,
        "final_output_tokens": out,
        "total_tokens": total,
    }


def build_row(
    result: dict[str, Any],
    exchanges: list[dict[str, Any]] | None,
    prompts: list[str],
    rollout_dir: str,
    llm_error: str | None = None,
) -> dict[str, Any]:
    """One ``results.jsonl`` row. ``exchanges`` None = no LLM file; ``llm_error`` = unparsable."""
    rewards = result.get("rewards")
    reward = (
        float(rewards["reward"])
        if isinstance(rewards, dict) and rewards.get("reward") is not None
        else 0.0
    )
    partial = bool(result.get("partial_trajectory"))
    steps: list[dict[str, Any]] = []
    tool_defs: list[dict[str, Any]] = []
    export_error: str | None = llm_error
    omitted: list[int] = []
    if exchanges and llm_error is None:
        for idx in select(exchanges):
            ex = exchanges[idx]
            normalized = normalize_exchange(ex)
            if normalized is None:
                omitted.append(idx)
                continue
            msgs, tools = normalized
            for tool in tools:
                if all(t["function"]["name"] != tool["function"]["name"] for t in tool_defs):
                    tool_defs.append(tool)
            body = ex["response"]["body"]
            truncated = (
                partial
                or bool(body.get("incomplete_details"))
                or body.get("status") == "incomplete"
            )
            name = result["rollout_name"]
            tid = (
                f"{name}__llm_{idx}"
                if name.startswith(result["task_name"] + "__")
                else f"{result['task_name']}__{name}__llm_{idx}"
            )
            steps.append(
                {
                    "prompt": msgs[:-1],
                    "completion": msgs[-1:],
                    "response": body,
                    "tokens": None,
                    "reward": reward,
                    "advantage": 0.0,
                    "is_truncated": truncated,
                    "trajectory_id": tid,
                    "extras": {**STEP_SOURCE, "exchange_index": idx, **(ex.get("metadata") or {})},
                }
            )
        if omitted:
            export_error = f"Successful LLM exchanges were omitted from results.jsonl: {omitted}"
    if steps:
        prompt, completion = _window(steps)
    else:
        prompt, completion = [{"role": "user", "content": p} for p in prompts], None
    error, verr = result.get("error"), result.get("verifier_error")
    ready = (
        bool(steps) and bool(completion) and export_error is None and not result.get("export_error")
    )
    ready = ready and error is None and verr is None and not partial
    reason = None
    if not ready:
        if llm_error is not None:
            reason = "invalid_llm_trajectory_jsonl"
        elif export_error is not None or result.get("export_error"):
            reason = "export_error"
        elif not steps or not completion:
            reason = "missing_healthy_structured_llm_trajectory"
        elif partial:
            reason = "partial_trajectory"
        elif error is not None:
            reason = "agent_error"
        else:
            reason = "verifier_error"
    payload: dict[str, Any] | None = None
    chain = error or verr or export_error or result.get("export_error")
    if chain:
        kind = "agent_error" if error else "verifier_error" if verr else "export_error"
        payload = {"error": kind, "error_chain_str": chain, "error_chain_repr": chain}
    elif reason is not None:
        msg = f"Rollout is not training-ready: {reason}"
        kind = (
            reason
            if reason in ("agent_error", "verifier_error", "partial_trajectory")
            else "missing_llm_trajectory"
        )
        payload = {"error": kind, "error_chain_str": msg, "error_chain_repr": msg}
    if partial:
        stop = "partial_trajectory"
    elif error:
        stop = "agent_error"
    elif verr:
        stop = "verifier_error"
    elif export_error or result.get("export_error"):
        stop = "export_error"
    else:
        stop = "agent_completed"
    metrics: dict[str, Any] = {
        "n_tool_calls": result["n_tool_calls"],
        "n_prompts": result["n_prompts"],
    }
    if isinstance(rewards, dict):
        for key, value in rewards.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                metrics[key] = float(value)
    return {
        "example_id": 0,
        "prompt": prompt,
        "completion": completion,
        "info": {
            "task_id": result["task_name"],
            "task_name": result["task_name"],
            "rollout_name": result["rollout_name"],
            "environment": result["task_name"],
            "agent": result["agent"],
            "agent_name": result["agent_name"],
            "model": result["model"],
            "source": "benchflow",
            "rollout_dir": rollout_dir,
            "training_ready": ready,
            "training_ready_reason": reason,
        },
        "reward": reward,
        "error": payload,
        "timing": result["timing"],
        "is_completed": payload is None and not partial,
        "is_truncated": partial,
        "stop_condition": stop,
        "metrics": metrics,
        "tool_defs": tool_defs,
        "token_usage": token_usage(result["agent_result"]),
        "score": reward,
        "total_tool_calls": float(result["n_tool_calls"]),
        "trajectory": steps,
    }
