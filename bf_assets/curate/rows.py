"""Building one export row from a trial's ``results.jsonl``.

The row is streamed (:func:`bf_assets.ingest.rowstream.read_rows`): each trajectory step
is cleaned, normalised and serialized as it arrives, so a 140 MB one-line row never exists
twice in memory as Python objects.  Raw provider bodies (``trajectory[].response``) are
dropped; only ``response_meta {id, model, finish_reason, usage}`` is kept.

Tool-call ``arguments`` are parsed before cleaning (so they are cleaned as values: banned
keys, secret-named keys, strings) and published as one compact JSON text of the cleaned
object: a string column in ``rollouts`` and ``prime_sft``, Arrow JSON in ``trl_sft``
(:mod:`bf_assets.curate.schema`); inside the ``trajectory`` JSON they are embedded as objects.

``prompt`` is the conversation's initial prompt (its leading system and user messages) and
``completion`` the rest, so ``messages == prompt + completion`` on every row, as verifiers
and Prime-RL read them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from bf_assets.curate.candidate import RESULT_FILE, Candidate
from bf_assets.curate.schema import TIMING_FIELDS, TOKEN_USAGE, VERIFIERS_TASK
from bf_assets.ingest.readers import DEFAULT_LIMITS, ReadLimits, read_document
from bf_assets.ingest.rowstream import read_rows
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, ROWS_FILE
from bf_assets.redact.clean import CleanedItems, CleanedTexts, Cleaner, CleanStats
from bf_assets.review.record import TrialReview

MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")

StepSink = Callable[[int, dict[str, Any]], None]


class CurationError(Exception):
    """The trial cannot be turned into an export row (it is excluded with this reason)."""


# --------------------------------------------------------------------------- messages


def content_text(content: Any) -> str:
    """Message content as a string: text parts joined, anything else as its JSON text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        for p in content
    ):
        return "\n".join(str(p.get("text") or "") for p in content)
    return orjson.dumps(content).decode()


def _parsed_arguments(args: Any) -> Any:
    """A tool call's ``arguments`` string parsed, when it is a JSON object (else as is)."""
    if isinstance(args, str):
        try:
            parsed = orjson.loads(args)
        except orjson.JSONDecodeError:
            return args
        return parsed if isinstance(parsed, dict) else args
    return args


def _decoded_call(tc: Any) -> Any:
    if not isinstance(tc, dict):
        return tc
    fn = tc.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
        return {**tc, "function": {**fn, "arguments": _parsed_arguments(fn["arguments"])}}
    if fn is None and isinstance(tc.get("arguments"), str):  # the flat verifiers-v1 form
        return {**tc, "arguments": _parsed_arguments(tc["arguments"])}
    return tc


def decode_arguments(msgs: Any) -> Any:
    """Raw messages with each tool call's JSON-string ``arguments`` parsed (copies only
    what changes), so cleaning sees the arguments as values, not as serialized text."""
    if not isinstance(msgs, list):
        return msgs
    out = []
    for m in msgs:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if isinstance(calls, list) and calls:
            m = {**m, "tool_calls": [_decoded_call(tc) for tc in calls]}
        out.append(m)
    return out


def _arguments(args: Any) -> str:
    """The published form of a tool call's arguments: compact JSON text of an object."""
    if args is None or (isinstance(args, str) and not args.strip()):
        return "{}"
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            raise CurationError("a tool call's arguments are not valid JSON") from None
    if not isinstance(args, dict):
        raise CurationError("a tool call's arguments are not a JSON object")
    return orjson.dumps(args).decode()


def norm_tool_call(tc: Any) -> dict[str, Any]:
    if not isinstance(tc, dict):
        return {"id": "", "type": "function", "function": {"name": "", "arguments": "{}"}}
    fn = tc.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments")
    else:  # the flat verifiers-v1 form {id, type, name, arguments}
        name, args = tc.get("name"), tc.get("arguments")
    return {
        "id": str(tc.get("id") or ""),
        "type": str(tc.get("type") or "function"),
        "function": {"name": str(name or ""), "arguments": _arguments(args)},
    }


def norm_message(m: Any) -> dict[str, Any]:
    """An OpenAI chat message with exactly the published keys (``schema.MESSAGE``)."""
    if not isinstance(m, dict):
        return {"role": "", "content": content_text(m), **dict.fromkeys(MESSAGE_KEYS[2:])}
    calls = m.get("tool_calls")
    return {
        "role": str(m.get("role") or ""),
        "content": content_text(m.get("content")),
        "tool_calls": [norm_tool_call(tc) for tc in calls]
        if isinstance(calls, list) and calls
        else None,
        "tool_call_id": str(m["tool_call_id"]) if m.get("tool_call_id") is not None else None,
        "name": str(m["name"]) if isinstance(m.get("name"), str) else None,
    }


def norm_messages(msgs: Any) -> list[dict[str, Any]]:
    return [norm_message(m) for m in msgs] if isinstance(msgs, list) else []


def count_tool_calls(msgs: list[dict[str, Any]]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in msgs if m.get("role") == "assistant")


# --------------------------------------------------------------------------- steps


def _response_meta(resp: Any) -> dict[str, Any] | None:
    if not isinstance(resp, dict):
        return None
    choices = resp.get("choices")
    finish = None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        finish = choices[0].get("finish_reason")
    finish = finish or resp.get("stop_reason") or resp.get("status")
    usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
    return {
        "id": resp.get("id"),
        "model": resp.get("model"),
        "finish_reason": finish,
        "usage": usage,
    }


def clean_step(step: Any, cleaner: Cleaner | None = None) -> dict[str, Any]:
    """A trajectory step without its raw response body, cleaned and normalised."""
    if not isinstance(step, dict):
        raise CurationError("a trajectory step is not an object")
    out: dict[str, Any] = {}
    for k, v in step.items():
        if k == "response":
            out["response_meta"] = _response_meta(v)
        elif k in ("prompt", "completion"):
            out[k] = decode_arguments(v)
        else:
            out[k] = v
    out = (cleaner or Cleaner()).value(out)
    out["prompt"] = norm_messages(out.get("prompt"))
    out["completion"] = norm_messages(out.get("completion"))
    return out


def _embedded(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages whose arguments (JSON text) serialize as the objects they are."""
    out = []
    for m in msgs:
        if m.get("tool_calls"):
            calls = [
                {
                    **tc,
                    "function": {
                        **tc["function"],
                        "arguments": orjson.Fragment(tc["function"]["arguments"]),
                    },
                }
                for tc in m["tool_calls"]
            ]
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def step_json(step: dict[str, Any]) -> bytes:
    """One cleaned step as it goes into the ``trajectory`` JSON (arguments as objects)."""
    return orjson.dumps(
        {**step, "prompt": _embedded(step["prompt"]), "completion": _embedded(step["completion"])}
    )


PROMPT_ROLES = frozenset({"system", "developer", "user"})


def split_initial_prompt(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(prompt, completion)`` of a conversation: the leading system/developer/user
    messages (system prompt and instruction), then everything from the first other turn.
    Both are copies (their strings shared): a row's columns never share a mutable value."""
    k = 0
    while k < len(messages) and messages[k].get("role") in PROMPT_ROLES:
        k += 1
    copied = [_copy_message(m) for m in messages]
    return copied[:k], copied[k:]


def _copy_message(m: dict[str, Any]) -> dict[str, Any]:
    calls = m.get("tool_calls")
    if not calls:
        return dict(m)
    return {
        **m,
        "tool_calls": [{**tc, "function": dict(tc["function"])} for tc in calls],
    }


def flat_tool_defs(tools: Any) -> list[Any]:
    """Tool definitions in the flat verifiers form ``{name, description, parameters,
    strict?}`` (OpenAI ``{type: function, function: {…}}`` entries unwrapped)."""
    out: list[Any] = []
    for t in tools if isinstance(tools, list) else []:
        fn = t.get("function") if isinstance(t, dict) else None
        src = fn if isinstance(fn, dict) else t
        if not isinstance(src, dict):
            out.append(src)
            continue
        flat = {
            "name": src.get("name"),
            "description": src.get("description") or "",
            "parameters": src.get("parameters") or {},
        }
        if "strict" in src:
            flat["strict"] = src["strict"]
        out.append(flat)
    return out


def error_text(err: Any) -> str | None:
    """verifiers' ``error`` (None, a string, or ``{error, error_chain_str, …}``) as one
    message, None when there was none."""
    if err is None or err == "" or err == {}:
        return None
    if isinstance(err, dict):
        for key in ("error_chain_str", "error", "message"):
            if isinstance(err.get(key), str) and err[key]:
                return err[key]
        return orjson.dumps(err).decode()
    return err if isinstance(err, str) else orjson.dumps(err).decode()


def example_id(task_id: Any) -> int:
    """verifiers ``example_id`` of a task: stable across splits and releases (48 bits, so
    it is exact as a JavaScript number too)."""
    digest = hashlib.sha256(str(task_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big")


# --------------------------------------------------------------------------- numbers


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def token_usage(raw: Any) -> dict[str, int | None]:
    d = raw if isinstance(raw, dict) else {}
    out: dict[str, int | None] = {}
    for f in TOKEN_USAGE:
        v = _num(d.get(f.name))
        out[f.name] = None if v is None else int(round(v))
    if out["total_tokens"] is None and None not in (out["input_tokens"], out["output_tokens"]):
        out["total_tokens"] = int(out["input_tokens"] or 0) + int(out["output_tokens"] or 0)
    return out


def timing(raw: Any) -> dict[str, float | None]:
    d = raw if isinstance(raw, dict) else {}
    return {name: _num(d.get(name)) for name in TIMING_FIELDS}


# --------------------------------------------------------------------------- the row


def reviewed_bytes(cand: Candidate, rel: str, sha256: str | None) -> None:
    """Raise :class:`CurationError` unless ``sha256`` (of the bytes curation just read from
    ``rel``) is the digest the review recorded for that file: what is published must be
    what was reviewed, so a file rewritten since (even to the same size and time) or one
    the review holds no digest of excludes the trial."""
    known = cand.file_sha(rel)
    if known is None:
        raise CurationError(f"{rel} has no digest from the review: it cannot be shown unchanged")
    if sha256 != known:
        raise CurationError(f"{rel} changed since the trial was reviewed")


def review_fields(cand: Candidate) -> dict[str, Any]:
    """The row's fields the dataset review has the last word on (the effective verdict, the
    findings with coverage's): a row built before that review is assembled takes them from
    the review's candidate."""
    return {
        "review_verdict": cand.verdict,
        "n_findings": len(cand.finding_checks),
        "finding_checks": sorted({str(c) for c in cand.finding_checks if c}),
    }


def _candidate(review: TrialReview | Candidate) -> Candidate:
    return review if isinstance(review, Candidate) else Candidate.from_review(review)


def build_row(
    trial_dir: str | Path,
    review: TrialReview | Candidate,
    *,
    stats: CleanStats | None = None,
    on_step: StepSink | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    texts: CleanedTexts | None = None,
) -> dict[str, Any]:
    """The ``rollouts`` export row of one trial (see ``bf_assets.curate.schema.ROLLOUTS``).

    ``stats`` accumulates what cleaning did; ``on_step(i, step)`` receives every cleaned
    step (the ``trl_sft`` projection uses it); ``texts``: cleaned long strings shared with
    other trials' rows.  Raises :class:`CurationError` when the trial's row cannot be read,
    or when a file it reads (``results.jsonl``, ``result.json``) is not the one the review
    read (its digest differs from the review's, or the review recorded none).
    """
    cand = _candidate(review)
    tdir = Path(trial_dir)
    root = Path(cand.root) if cand.root else tdir
    row_stats = CleanStats()
    # one cache per trial (its steps repeat the same history), or ``texts``: one shared
    # across the trials of a release (their rows repeat prompts, tools and instructions)
    cleaner = Cleaner(row_stats, texts, CleanedItems())
    chunks: list[bytes] = []
    last: dict[str, Any] = {}
    n_calls = 0

    def take(i: int, raw: Any) -> None:
        nonlocal last, n_calls
        step = clean_step(raw, cleaner)
        chunks.append(step_json(step))
        n_calls += count_tool_calls(step["completion"])
        last = step
        if on_step is not None:
            on_step(i, step)

    read = read_rows(tdir / ROWS_FILE, root, take, limits)
    if not read.present:
        raise CurationError(f"{ROWS_FILE} is missing")
    problems = [i.message for i in read.issues] + [i.message for r in read.rows for i in r.issues]
    if problems or len(read.rows) != 1 or not isinstance(read.rows[0].top, dict):
        raise CurationError(f"{ROWS_FILE} is not exactly one readable row: {'; '.join(problems)}")
    reviewed_bytes(cand, ROWS_FILE, read.stats.sha256)
    top = read.rows[0].top
    if not read.rows[0].trajectory_is_list:
        raise CurationError("the row's trajectory is not a list")
    info = top.get("info") if isinstance(top.get("info"), dict) else {}
    doc = read_document(tdir / RESULT_FILE, root, limits)
    reviewed_bytes(cand, RESULT_FILE, doc.stats.sha256 if doc.present else None)
    result = doc.value if isinstance(doc.value, dict) else {}

    body = cleaner.value(
        {
            "prompt": decode_arguments(top.get("prompt")),
            "completion": decode_arguments(top.get("completion")),
            "tools": top.get("tool_defs") or top.get("tools") or [],
            "metrics": top.get("metrics") if isinstance(top.get("metrics"), dict) else {},
            "stop_condition": top.get("stop_condition"),
            "error": error_text(top.get("error")),
            "finished_at": result.get("finished_at"),
            "timing": top.get("timing") or result.get("timing"),
            "ident": {
                "slot": list(cand.slot),
                "job": cand.job,
                "rollout": cand.rollout,
                "source_ref": cand.source_ref,
                "task_digest": cand.task_digest,
                "started_at": cand.started_at,
            },
        },
    )
    messages = (
        (last["prompt"] + last["completion"])
        if last
        else norm_messages(body["prompt"]) + norm_messages(body["completion"])
    )
    prompt, completion = split_initial_prompt(messages)
    is_completed = top.get("is_completed")
    if not isinstance(is_completed, bool):
        is_completed = body["stop_condition"] is not None
    is_truncated = top.get("is_truncated")
    if not isinstance(is_truncated, bool):
        is_truncated = bool(last.get("is_truncated")) if last else False
    ident = body["ident"]
    slot = ident["slot"]
    decided = review_fields(cand)
    reward = _num(top.get("reward"))
    if reward is None:
        reward = _num(top.get("score"))
    row: dict[str, Any] = {
        "rollout_id": cand.rollout_id,
        "task_id": slot[0],
        "harness": slot[1],
        "model": slot[2],
        "skill_mode": slot[3],
        "sandbox": slot[4],
        "trial_index": slot[5],
        "job": ident["job"],
        "rollout": ident["rollout"],
        "source_ref": ident["source_ref"],
        "task_digest": ident["task_digest"],
        "started_at": ident["started_at"],
        "finished_at": body["finished_at"] if isinstance(body["finished_at"], str) else None,
        "outcome": cand.outcome,
        "reward": reward,
        "metrics": orjson.dumps(body["metrics"]).decode(),
        "token_usage": token_usage(top.get("token_usage")),
        "timing": timing(body["timing"]),
        "training_ready": bool(info.get("training_ready")) and cand.training_ready,
        "stop_condition": body["stop_condition"],
        "is_completed": is_completed,
        "is_truncated": is_truncated,
        "error": body["error"] if isinstance(body["error"], str) else None,
        "example_id": example_id(slot[0]),
        "task": VERIFIERS_TASK,
        "answer": "",  # the gold answer is banned from every row (checks.md)
        "info": orjson.dumps(
            {
                "task_id": slot[0],
                "task_digest": ident["task_digest"],
                "source_ref": ident["source_ref"],
                "harness": slot[1],
                "model": slot[2],
                "skill_mode": slot[3],
                "sandbox": slot[4],
                "trial_index": slot[5],
                "rollout_id": cand.rollout_id,
            }
        ).decode(),
        "prompt": prompt,
        "completion": completion,
        "messages": messages,
        "tools": orjson.dumps(body["tools"]).decode(),
        "tool_defs": orjson.dumps(flat_tool_defs(body["tools"])).decode(),
        "trajectory": (b"[" + b",".join(chunks) + b"]").decode(),
        "n_steps": len(chunks),
        "n_tool_calls": n_calls,
        "review_verdict": decided["review_verdict"],
        "attribution": cand.attribution,
        "n_findings": decided["n_findings"],
        "finding_checks": decided["finding_checks"],
        "results_sha256": read.stats.sha256,
        "llm_trajectory_sha256": cand.file_sha(LLM_FILE),
        "acp_trajectory_sha256": cand.file_sha(ACP_FILE),
        "n_redactions": row_stats.n_redactions,
        "n_host_paths": row_stats.n_host_paths,
    }
    if stats is not None:
        stats.add(row_stats)
    return row


# --------------------------------------------------------------------------- projections


def prime_sft_row(row: dict[str, Any]) -> dict[str, Any]:
    """Prime-RL / verifiers SFT: the whole conversation plus its tools."""
    keys = (
        "rollout_id",
        "task_id",
        "harness",
        "model",
        "skill_mode",
        "reward",
        "messages",
        "tools",
    )
    return {k: row[k] for k in keys}


def task_row(row: dict[str, Any]) -> dict[str, Any]:
    """The ``tasks`` row of a rollout's task (verifiers environment dataset row)."""
    info = orjson.loads(row["info"])
    return {
        "task_id": row["task_id"],
        "example_id": row["example_id"],
        "prompt": row["prompt"],
        "answer": "",  # withheld, as in every row
        "info": orjson.dumps(
            {k: info.get(k) for k in ("task_id", "task_digest", "source_ref")}
        ).decode(),
        "task": row["task"],
    }


def trl_sft_rows(row: dict[str, Any], steps: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """TRL SFT exchange mode: one row per step whose completion is one assistant message."""
    base = {
        k: row[k] for k in ("rollout_id", "task_id", "harness", "model", "skill_mode", "reward")
    }
    for i, step in enumerate(steps):
        completion = [m for m in step["completion"] if m.get("role") == "assistant"]
        if len(completion) != 1 or not step["prompt"]:
            continue
        yield {
            **base,
            "exchange_index": i,
            "prompt": step["prompt"],
            "completion": completion,
            "tools": row["tools"],
        }
