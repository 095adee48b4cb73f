"""Gate checks on the one ``results.jsonl`` training row.

``GATE_ROW_SHAPE``, ``GATE_ROW_TOOLDEFS``, ``GATE_ROW_READY_MISMATCH``,
``GATE_ROW_STEPS_MISMATCH``, ``GATE_ROW_BANNED_KEY`` and the row's part of
``GATE_REWARD_MISSING`` / ``GATE_TOOLS_MISSING``.  Steps were checked as they streamed past
(:func:`bf_assets.ingest.messages.step_facts`); here their facts meet the selected LLM
exchanges and the result.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bf_assets.contract import BANNED_ROW_KEYS
from bf_assets.findings import Finding, finding
from bf_assets.gate.view import ResultView, num
from bf_assets.ingest.messages import check_messages, tool_names
from bf_assets.ingest.scan import ROWS_FILE, TrialData

F = ROWS_FILE


def check_row(t: TrialData, v: ResultView) -> Iterator[Finding]:
    row = t.rows.single_row()
    if row is None:
        return
    yield from _banned(row)
    info = row.get("info")
    if not isinstance(info, dict):
        yield finding("GATE_ROW_SHAPE", "row.info is not an object", file=F)
        info = {}
    ready = info.get("training_ready")
    defs_raw = row.get("tool_defs") if "tool_defs" in row else row.get("tools")
    defined = tool_names(defs_raw) if defs_raw is not None else set()
    if defs_raw is not None and defined is None:
        yield finding("GATE_ROW_TOOLDEFS", "tool_defs is neither a list nor a JSON list", file=F)
        defined = set()
    elif isinstance(defs_raw, list) and any(not isinstance(d, dict) for d in defs_raw):
        yield finding("GATE_ROW_TOOLDEFS", "a tool definition is not an object", file=F)
    yield from _ready_consistency(t, v, row, info, ready)
    yield from _messages(row, defined, ready is True)
    yield from _steps(t, row, defined, ready is True)
    yield from _telemetry(t, v, row, ready is True)


def _banned(row: dict[str, Any]) -> Iterator[Finding]:
    top = sorted(BANNED_ROW_KEYS.intersection(row))
    if top:
        yield finding(
            "GATE_ROW_BANNED_KEY",
            f"row carries banned key(s) {', '.join(top)}",
            file=F,
            evidence=", ".join(top),
        )


def _ready_consistency(
    t: TrialData, v: ResultView, row: dict[str, Any], info: dict[str, Any], ready: Any
) -> Iterator[Finding]:
    if not isinstance(ready, bool):
        yield finding(
            "GATE_ROW_READY_MISMATCH", f"info.training_ready is {ready!r}, not a boolean", file=F
        )
        return
    terminal = []
    if v.error:
        terminal.append("error")
    if v.verifier_error:
        terminal.append("verifier_error")
    if v.partial:
        terminal.append("partial_trajectory")
    reason = info.get("training_ready_reason")
    if ready:
        if terminal:
            yield finding(
                "GATE_ROW_READY_MISMATCH",
                f"row says training_ready while result.json has {', '.join(terminal)}",
                file=F,
                evidence=v.error or v.verifier_error,
            )
        bad = []
        if row.get("error") is not None:
            bad.append("row.error is set")
        if reason is not None:
            bad.append(f"training_ready_reason is {reason!r}")
        if row.get("is_completed") is not True:
            bad.append("is_completed is not true")
        if row.get("is_truncated") is True:
            bad.append("is_truncated is true")
        if row.get("stop_condition") not in (None, "agent_completed"):
            bad.append(f"stop_condition is {row.get('stop_condition')!r}")
        if bad:
            yield finding("GATE_ROW_READY_MISMATCH", "ready row but " + "; ".join(bad), file=F)
    else:
        missing = [
            name
            for name, val in (("training_ready_reason", reason), ("error", row.get("error")))
            if not val
        ]
        if missing:
            yield finding(
                "GATE_ROW_READY_MISMATCH", f"not-ready row without {' and '.join(missing)}", file=F
            )


def _messages(row: dict[str, Any], defined: set[str], ready: bool) -> Iterator[Finding]:
    msgs = row.get("messages")
    prompt, completion = row.get("prompt"), row.get("completion")
    if msgs is None and isinstance(prompt, list) and isinstance(completion, list):
        msgs = prompt + completion
    if ready:
        for name, val in (("prompt", prompt), ("completion", completion)):
            if not isinstance(val, list) or not val:
                yield finding("GATE_ROW_SHAPE", f"ready row has no non-empty {name}", file=F)
    elif msgs is None and not isinstance(prompt, list):
        yield finding("GATE_ROW_SHAPE", "row has no prompt messages", file=F)
        return
    if msgs is None:
        return  # a not-ready row may have completion null
    for p in check_messages(msgs, where="row messages", defined_tools=defined):
        yield finding(p.check, p.message, file=F)


def _steps(t: TrialData, row: dict[str, Any], defined: set[str], ready: bool) -> Iterator[Finding]:
    steps = t.rows.steps
    rr = t.rows.read.rows[0]
    if not rr.trajectory_is_list:
        yield finding("GATE_ROW_SHAPE", "row.trajectory is not a list", file=F)
        return
    if ready and not steps:
        yield finding("GATE_ROW_SHAPE", "ready row has an empty trajectory", file=F)
    reported = 0
    for s in steps:
        for p in s.problems:
            if reported < 5:
                yield finding(p.check, p.message, file=F)
            reported += 1
    undefined = sorted({n for s in steps for n in s.called_tools} - defined) if defined else []
    if undefined:
        yield finding(
            "GATE_ROW_TOOLDEFS",
            f"steps call tool(s) not in tool_defs: {', '.join(undefined)}",
            file=F,
        )
    elif not defined and any(s.called_tools for s in steps):
        yield finding("GATE_ROW_TOOLDEFS", "steps make tool calls but tool_defs is empty", file=F)
    if ready:
        truncated = [s.position for s in steps if s.is_truncated is True]
        if truncated:
            yield finding(
                "GATE_ROW_READY_MISMATCH",
                f"ready row has truncated step(s) {truncated[:5]}",
                file=F,
            )
    # Steps against the selected successful LLM exchanges (never skipped, unlike Benchflow).
    if not t.llm.present and not steps:
        return
    selected = t.llm.selected if t.llm.present else []
    indices = [s.exchange_index for s in steps]
    if len(steps) != len(selected):
        yield finding(
            "GATE_ROW_STEPS_MISMATCH",
            f"row has {len(steps)} step(s) but the LLM trajectory has {len(selected)} selected successful exchange(s)",
            file=F,
        )
    elif sorted(i for i in indices if isinstance(i, int)) != selected or any(
        not isinstance(i, int) for i in indices
    ):
        yield finding(
            "GATE_ROW_STEPS_MISMATCH",
            f"step exchange indices {indices[:10]} differ from the selected exchanges {selected[:10]}",
            file=F,
        )
    foreign = [s.position for s in steps if s.is_object and s.source != "llm_trajectory"]
    if foreign:
        yield finding(
            "GATE_ROW_STEPS_MISMATCH",
            f"step(s) {foreign[:5]} are not sourced from the LLM trajectory (extras.source)",
            file=F,
        )


def _telemetry(t: TrialData, v: ResultView, row: dict[str, Any], ready: bool) -> Iterator[Finding]:
    if num(row.get("reward")) is None and num(row.get("score")) is None:
        yield finding("GATE_REWARD_MISSING", "row has neither a numeric reward nor a score", file=F)
    tu = row.get("token_usage")
    if ready:
        if not isinstance(tu, dict):
            yield finding("GATE_ROW_SHAPE", "ready row has no token_usage object", file=F)
        else:
            total = num(tu.get("total_tokens")) or 0
            inp = num(tu.get("final_input_tokens")) or num(tu.get("input_tokens")) or 0
            out = num(tu.get("final_output_tokens")) or num(tu.get("output_tokens")) or 0
            if total <= 0 and (inp <= 0 or out <= 0):
                yield finding(
                    "GATE_ROW_SHAPE", "ready row has no positive token_usage", file=F, evidence=tu
                )
        metrics = row.get("metrics")
        result_tools = v.n_tool_calls or 0
        n = num(metrics.get("n_tool_calls")) if isinstance(metrics, dict) else None
        if result_tools > 0 and (n is None or n <= 0):
            yield finding(
                "GATE_TOOLS_MISSING",
                f"result.json counts {result_tools} tool calls but row metrics.n_tool_calls is {n}",
                file=F,
            )
