"""``GATE_CROSS_MISMATCH``: task, harness, model, reward, tokens and tool counts agree across files.

Benchflow's validator compares only the task name, and skips even that when one side is
absent.  Here every pair that exists is compared: ``config.json`` vs ``result.json`` vs the
``results.jsonl`` row vs the LLM trajectory (upstream ``metadata.provider_model``, never the
proxy alias) vs the ACP tool events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bf_assets.findings import Finding, finding
from bf_assets.gate.view import ResultView, get, num
from bf_assets.ingest.identity import normalize_harness, posix_name
from bf_assets.ingest.models import canonical_model
from bf_assets.ingest.scan import LLM_FILE, ROWS_FILE, TrialData


def _model_key(m: str) -> str:
    return m.strip().lower().rsplit("/", 1)[-1]


def models_agree(a: str, b: str) -> bool:
    """Same model up to a provider prefix or a version/date suffix (``x`` vs ``openai/x-2025``)."""
    ka, kb = _model_key(a), _model_key(b)
    return ka == kb or ka.startswith(kb + "-") or kb.startswith(ka + "-")


def _mismatch(what: str, values: dict[str, Any], file: str | None = None) -> Finding:
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return finding("GATE_CROSS_MISMATCH", f"{what} disagrees across files: {shown}", file=file)


def check_cross(t: TrialData, v: ResultView) -> Iterator[Finding]:
    if t.layout != "production" or not isinstance(t.result.value, dict):
        return
    r, c = t.result_obj, t.config_obj
    row = t.rows.single_row() or {}
    info = row.get("info") if isinstance(row.get("info"), dict) else {}
    yield from _task(r, c, row, info)
    yield from _harness(r, c, info)
    yield from _model(t, r, c, info, v)
    yield from _reward(v, row)
    yield from _tokens(t, r, row)
    yield from _tools(t, v, row)


def _task(
    r: dict[str, Any], c: dict[str, Any], row: dict[str, Any], info: dict[str, Any]
) -> Iterator[Finding]:
    vals: dict[str, Any] = {}
    if r.get("task_name"):
        vals["result.task_name"] = r["task_name"]
    else:
        yield finding(
            "GATE_CROSS_MISMATCH",
            "result.json names no task (task_name is absent)",
            file="result.json",
        )
    tp = c.get("task_path")
    if isinstance(tp, str) and tp:
        vals["config.task_path"] = posix_name(tp)
    row_task = info.get("task_id") or info.get("task_name") or row.get("task_name")
    if row:
        if not row_task:
            yield finding(
                "GATE_ROW_SHAPE",
                "row has no task identity (info.task_id / task_name)",
                file=ROWS_FILE,
            )
        else:
            vals["row.info.task_id"] = row_task
    if len({str(x) for x in vals.values()}) > 1:
        yield _mismatch("task", vals)


def _harness(r: dict[str, Any], c: dict[str, Any], info: dict[str, Any]) -> Iterator[Finding]:
    vals = {
        k: normalize_harness(x)
        for k, x in (
            ("result.agent", r.get("agent")),
            ("config.agent", c.get("agent")),
            ("row.info.agent", info.get("agent")),
        )
        if x
    }
    if len(set(vals.values())) > 1:
        yield _mismatch("harness", vals)


def _model(
    t: TrialData, r: dict[str, Any], c: dict[str, Any], info: dict[str, Any], v: ResultView
) -> Iterator[Finding]:
    vals = {
        k: x
        for k, x in (
            ("result.model", r.get("model")),
            ("config.model", c.get("model")),
            ("row.info.model", info.get("model")),
        )
        if isinstance(x, str) and x
    }
    if len({canonical_model(x) for x in vals.values()}) > 1:
        yield _mismatch("model", vals)
        return
    declared = next(iter(vals.values()), None)
    if not declared or v.is_oracle:
        return
    upstream = {
        e.provider_model
        for e in t.llm.log.exchanges
        if e.provider_model
        and e.call_purpose in (None, "agent")
        and not e.provider_model.startswith("benchflow-")
    }
    foreign = sorted(m for m in upstream if not models_agree(m, declared))
    if foreign:
        yield finding(
            "GATE_CROSS_MISMATCH",
            f"the LLM trajectory was served by {', '.join(foreign)} but the trial declares {declared!r}",
            file=LLM_FILE,
        )


def _reward(v: ResultView, row: dict[str, Any]) -> Iterator[Finding]:
    if not row or v.reward is None:
        return
    rr = num(row.get("reward"))
    if rr is None:
        rr = num(row.get("score"))
    if rr is not None and abs(rr - v.reward) > 1e-9:
        yield _mismatch("reward", {"result.rewards.reward": v.reward, "row.reward": rr}, ROWS_FILE)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(1.0, 0.01 * max(abs(a), abs(b)))


def _tokens(t: TrialData, r: dict[str, Any], row: dict[str, Any]) -> Iterator[Finding]:
    ar = r.get("agent_result") if isinstance(r.get("agent_result"), dict) else {}
    inp, out = num(ar.get("n_input_tokens")), num(ar.get("n_output_tokens"))
    tu = row.get("token_usage") if isinstance(row.get("token_usage"), dict) else None
    if tu is not None and inp is not None and out is not None:
        ri, ro = num(tu.get("input_tokens")), num(tu.get("output_tokens"))
        if (
            ri is not None
            and ro is not None
            and (inp + out) > 0
            and not (_close(ri, inp) and _close(ro, out))
        ):
            yield _mismatch(
                "token usage",
                {"result.agent_result": (inp, out), "row.token_usage": (ri, ro)},
                ROWS_FILE,
            )
    usage_source = ar.get("usage_source") or get(r, "usage_tracking", "usage_source")
    exs = [e for e in t.llm.log.exchanges if e.usage_positive]
    if usage_source != "provider_response" or not exs or inp is None or out is None:
        return
    si = sum(e.input_tokens for e in exs)
    so = sum(e.output_tokens for e in exs)
    if not (_close(si, inp) and _close(so, out)):
        yield _mismatch(
            "token usage",
            {"result.agent_result": (inp, out), "sum of LLM exchange usage": (si, so)},
            LLM_FILE,
        )


def _tools(t: TrialData, v: ResultView, row: dict[str, Any]) -> Iterator[Finding]:
    if (
        v.n_tool_calls is not None
        and t.acp.present
        and t.acp.objects
        and v.n_tool_calls != t.acp.tool_calls
    ):
        yield _mismatch(
            "tool-call count",
            {"result.n_tool_calls": v.n_tool_calls, "ACP tool_call events": t.acp.tool_calls},
        )
    metrics = row.get("metrics") if isinstance(row.get("metrics"), dict) else None
    if metrics is not None and v.n_tool_calls is not None:
        n = num(metrics.get("n_tool_calls"))
        if n is not None and n != v.n_tool_calls:
            yield _mismatch(
                "tool-call count",
                {"result.n_tool_calls": v.n_tool_calls, "row.metrics.n_tool_calls": n},
                ROWS_FILE,
            )
