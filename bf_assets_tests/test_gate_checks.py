"""Every gate check id fires on a minimal mutation of the healthy trial and stays quiet otherwise.

``FIRE`` and ``QUIET`` are tables of cases; the meta-test at the end fails the suite when a
``GATE_*`` id of ``bf_assets.contract`` has no fire case, so a new id cannot land untested.
Cases that encode a deliberate fix of a Benchflow validator weakness say so (``V-n`` are the
labels of ``reference/review-rules.md`` §10.1); longer weakness scenarios live in
``test_gate_weaknesses.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from trialkit import (
    ACP_FILE,
    LLM_FILE,
    ROWS_FILE,
    Trial,
    TrialSpec,
    check_ids,
    deadline,
    errored_spec,
    fail_spec,
    healthy_spec,
    oracle_spec,
    retry_spec,
    timeout_spec,
    total_only_spec,
)

from bf_assets.contract import CHECKS, GATE_IDS
from bf_assets.ingest.readers import ReadLimits

READ_WARNINGS = frozenset({"READ_INVALID_UTF8", "READ_NONFINITE"})
COVERED_IDS = GATE_IDS | READ_WARNINGS


@dataclass(frozen=True)
class Case:
    check: str
    name: str
    mutate: Callable[[Trial], None] | None = None  # applied to the written trial
    spec: Callable[[], TrialSpec] = healthy_spec  # the trial to start from
    limits: ReadLimits | None = None

    def build(self, root: Path) -> Trial:
        t = self.spec().write(root)
        if self.mutate is not None:
            self.mutate(t)
        return t


def _case_id(case: Case) -> str:
    return f"{case.check}:{case.name}"


# --------------------------------------------------------------------------- mutations


def replace_bytes(rel: str, old: bytes, new: bytes) -> Callable[[Trial], None]:
    def mutate(t: Trial) -> None:
        data = t.file(rel).read_bytes()
        assert old in data, f"{old!r} not in {rel}"
        t.write_bytes(rel, data.replace(old, new, 1))

    return mutate


def set_fields(rel: str, *pairs: tuple[str, object], line: int = 1) -> Callable[[Trial], None]:
    def mutate(t: Trial) -> None:
        for dotted, value in pairs:
            t.set_field(rel, dotted, value, line=line)

    return mutate


def on_every_exchange(
    dotted: str, value: object = None, *, delete: bool = False
) -> Callable[[Trial], None]:
    def mutate(t: Trial) -> None:
        for line in range(1, len(t.lines(LLM_FILE)) + 1):
            if delete:
                t.del_field(LLM_FILE, dotted, line=line)
            else:
                t.set_field(LLM_FILE, dotted, value, line=line)

    return mutate


def drop(rel: str) -> Callable[[Trial], None]:
    return lambda t: t.drop(rel)


def write(rel: str, text: str) -> Callable[[Trial], None]:
    return lambda t: t.write_text(rel, text)


def zero_result_tokens(t: Trial) -> None:
    r = t.read_json("result.json")
    r["agent_result"].update(n_input_tokens=0, n_output_tokens=0, total_tokens=0)
    r["final_metrics"].update(total_prompt_tokens=0, total_completion_tokens=0)
    t.write_json("result.json", r)


def zero_output_large_input(t: Trial) -> None:
    r = t.read_json("result.json")
    r["agent_result"].update(n_input_tokens=3_000_000, n_output_tokens=0, total_tokens=3_000_000)
    t.write_json("result.json", r)


def link_out_of_root(rel: str) -> Callable[[Trial], None]:
    def mutate(t: Trial) -> None:
        outside = t.root.parent / "elsewhere"
        outside.mkdir(exist_ok=True)
        target = outside / Path(rel).name
        target.write_bytes(t.file(rel).read_bytes())
        t.drop(rel)
        os.symlink(target, t.file(rel))

    return mutate


def make_fifo(rel: str) -> Callable[[Trial], None]:
    def mutate(t: Trial) -> None:
        t.drop(rel)
        os.mkfifo(t.file(rel))

    return mutate


def duplicate_row(t: Trial) -> None:
    t.write_text(ROWS_FILE, t.file(ROWS_FILE).read_text() * 2)


def drop_last_step(t: Trial) -> None:
    t.set_row("trajectory", t.read_line(ROWS_FILE)["trajectory"][:1])


def link_inside(t: Trial) -> None:
    store = t.file("artifacts/row.jsonl")
    t.file(ROWS_FILE).rename(store)
    os.symlink(store, t.file(ROWS_FILE))


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


SMALL_LINES = ReadLimits(max_line_bytes=2048)
HUGE_ACP_LINE = json.dumps({"type": "agent_message", "text": "x" * 4096})

# --------------------------------------------------------------------------- fire cases

FIRE: list[Case] = [
    Case("GATE_RESULT_MISSING", "no result.json", drop("result.json")),
    Case("GATE_RESULT_INVALID", "not JSON", write("result.json", '{"task_name": ')),
    Case("GATE_RESULT_INVALID", "not an object", write("result.json", "[1, 2]")),
    Case("GATE_RESULT_INVALID", "empty", write("result.json", "")),
    Case("GATE_ACP_MISSING", "no ACP file", drop(ACP_FILE)),
    Case("GATE_ACP_EMPTY", "0 bytes", write(ACP_FILE, "")),
    Case("GATE_ACP_EMPTY", "blank lines only", write(ACP_FILE, "\n  \n")),
    Case("GATE_ACP_INVALID", "unparsable line", lambda t: t.replace_line(ACP_FILE, 2, "{oops")),
    Case("GATE_ACP_INVALID", "array line", lambda t: t.replace_line(ACP_FILE, 2, "[1]")),
    Case("GATE_ACP_INVALID", "untyped event", lambda t: t.replace_line(ACP_FILE, 2, '{"text": 1}')),
    Case("GATE_ACP_NO_AGENT_EVENTS", "user message only", write(ACP_FILE, '{"type": "user_message"}')),
    Case("GATE_LLM_MISSING", "no LLM file", drop(LLM_FILE)),
    Case("GATE_LLM_EMPTY", "0 bytes", write(LLM_FILE, "")),
    Case("GATE_LLM_INVALID", "unparsable line", lambda t: t.replace_line(LLM_FILE, 2, '{"request"')),
    Case("GATE_LLM_INVALID", "request body a string", set_fields(LLM_FILE, ("request.body", "x"), line=2)),
    Case("GATE_LLM_INVALID", "response body a string", set_fields(LLM_FILE, ("response.body", "x"), line=2)),
    Case("GATE_LLM_NO_EXCHANGE", "a response missing", lambda t: t.del_field(LLM_FILE, "response", line=2)),
    Case("GATE_LLM_NO_EXCHANGE", "no request bodies", on_every_exchange("request", delete=True)),
    Case("GATE_LLM_NO_USAGE", "no usage anywhere", on_every_exchange("response.body.usage", delete=True)),
    Case("GATE_LLM_NO_USAGE", "a selected exchange without usage", lambda t: t.del_field(LLM_FILE, "response.body.usage", line=2)),
    Case("GATE_ROWS_MISSING", "no results.jsonl", drop(ROWS_FILE)),
    Case("GATE_ROWS_INVALID", "unparsable row", write(ROWS_FILE, "garbage\n")),
    Case("GATE_ROWS_INVALID", "row not an object", write(ROWS_FILE, "[1]\n")),
    Case("GATE_ROWS_COUNT", "two rows", duplicate_row),
    Case("GATE_ROWS_COUNT", "empty file", write(ROWS_FILE, "")),
    Case("GATE_ROW_SHAPE", "invalid role", set_fields(ROWS_FILE, ("completion.2.role", "robot"))),
    Case("GATE_ROW_SHAPE", "system not first", set_fields(ROWS_FILE, ("completion.2.role", "system"))),
    Case("GATE_ROW_SHAPE", "no assistant", set_fields(ROWS_FILE, ("completion", [{"role": "user", "content": "x"}]))),
    Case("GATE_ROW_SHAPE", "tool answers no call", set_fields(ROWS_FILE, ("completion.1.tool_call_id", "call_9"))),
    Case("GATE_ROW_SHAPE", "arguments not an object", set_fields(ROWS_FILE, ("completion.0.tool_calls.0.function.arguments", "[1]"))),
    Case("GATE_ROW_SHAPE", "info not an object", set_fields(ROWS_FILE, ("info", "x"))),
    Case("GATE_ROW_SHAPE", "ready row without token usage", set_fields(ROWS_FILE, ("token_usage", {"input_tokens": 0.0, "output_tokens": 0.0, "total_tokens": 0.0}))),
    Case("GATE_ROW_SHAPE", "ready row with empty completion", set_fields(ROWS_FILE, ("completion", []))),
    Case("GATE_ROW_TOOLDEFS", "calls but tool_defs empty", set_fields(ROWS_FILE, ("tool_defs", []))),
    Case("GATE_ROW_TOOLDEFS", "called tool not defined", set_fields(ROWS_FILE, ("tool_defs.0.function.name", "shell"))),
    Case("GATE_ROW_TOOLDEFS", "tool_defs not a list", set_fields(ROWS_FILE, ("tool_defs", "not json"))),
    Case("GATE_ROW_READY_MISMATCH", "training_ready not a bool", set_fields(ROWS_FILE, ("info.training_ready", "yes"))),
    Case("GATE_ROW_READY_MISMATCH", "not ready without reason or error", set_fields(ROWS_FILE, ("info.training_ready", False))),
    Case("GATE_ROW_READY_MISMATCH", "ready but truncated", set_fields(ROWS_FILE, ("is_truncated", True))),
    Case("GATE_ROW_READY_MISMATCH", "ready but stop_condition", set_fields(ROWS_FILE, ("stop_condition", "agent_error"))),
    Case("GATE_ROW_READY_MISMATCH", "ready despite result error", set_fields("result.json", ("error", "boom"))),
    Case("GATE_ROW_READY_MISMATCH", "ready with a truncated step", set_fields(ROWS_FILE, ("trajectory.0.is_truncated", True))),
    Case("GATE_ROW_STEPS_MISMATCH", "a step missing", drop_last_step),
    Case("GATE_ROW_STEPS_MISMATCH", "wrong exchange index", set_fields(ROWS_FILE, ("trajectory.1.extras.exchange_index", 5))),
    Case("GATE_ROW_STEPS_MISMATCH", "step not from the LLM trajectory", set_fields(ROWS_FILE, ("trajectory.1.extras.source", "acp"))),
    # V-3: Benchflow skips this comparison when no response has status_code 200.
    Case("GATE_ROW_STEPS_MISMATCH", "no status codes (V-3)", on_every_exchange("response.status_code", delete=True)),
    Case("GATE_ROW_BANNED_KEY", "top-level gold", set_fields(ROWS_FILE, ("gold", "42"))),
    Case("GATE_ROW_BANNED_KEY", "reasoning_content on a message", set_fields(ROWS_FILE, ("completion.2.reasoning_content", "hmm"))),
    # V-9: Benchflow scans only the row's top level and its top-level messages.
    Case("GATE_ROW_BANNED_KEY", "thinking_blocks in a step prompt (V-9)", set_fields(ROWS_FILE, ("trajectory.1.prompt.0.thinking_blocks", []))),
    Case("GATE_ROW_BANNED_KEY", "provider_specific_fields in a step completion (V-9)", set_fields(ROWS_FILE, ("trajectory.1.completion.0.provider_specific_fields", {}))),
    Case("GATE_REWARD_MISSING", "rewards null", set_fields("result.json", ("rewards", None))),
    Case("GATE_REWARD_MISSING", "row without reward or score", set_fields(ROWS_FILE, ("reward", None), ("score", None))),
    Case("GATE_TIMING_MISSING", "no started_at", set_fields("result.json", ("started_at", None))),
    Case("GATE_TIMING_MISSING", "no end and no total", lambda t: (t.set_result("finished_at", None), t.del_field("result.json", "timing.total"))),
    # V-5: Benchflow checks timing values for truthiness only.
    Case("GATE_TIMING_INVALID", "garbage end (V-5)", set_fields("result.json", ("finished_at", "yesterday-ish"))),
    Case("GATE_TIMING_INVALID", "end before start (V-5)", set_fields("result.json", ("finished_at", "2026-06-01 09:00:00"))),
    Case("GATE_TIMING_INVALID", "negative total", set_fields("result.json", ("timing.total", -1.0))),
    Case("GATE_TIMING_INVALID", "total not a number", set_fields("result.json", ("timing.total", "75s"))),
    Case("GATE_TOKENS_MISSING", "zero usage in result.json", zero_result_tokens),
    Case("GATE_TOKENS_SUSPICIOUS", "zero output next to large input", zero_output_large_input),
    Case("GATE_TOOLS_MISSING", "n_tool_calls null with tool calls", set_fields("result.json", ("n_tool_calls", None))),
    Case("GATE_TOOLS_MISSING", "row metrics without tool calls", set_fields(ROWS_FILE, ("metrics.n_tool_calls", 0))),
    Case("GATE_CROSS_MISMATCH", "reward", set_fields(ROWS_FILE, ("reward", 0.0))),
    Case("GATE_CROSS_MISMATCH", "task", set_fields("result.json", ("task_name", "other-task"))),
    Case("GATE_CROSS_MISMATCH", "model", set_fields("config.json", ("model", "anthropic/claude-x"))),
    Case("GATE_CROSS_MISMATCH", "harness", set_fields("config.json", ("agent", "openhands"))),
    Case("GATE_CROSS_MISMATCH", "row tokens", set_fields(ROWS_FILE, ("token_usage.input_tokens", 999.0))),
    Case("GATE_CROSS_MISMATCH", "LLM usage vs agent_result", set_fields("result.json", ("agent_result.n_output_tokens", 999))),
    Case("GATE_CROSS_MISMATCH", "upstream model", on_every_exchange("metadata.provider_model", "anthropic/claude-x")),
    Case("GATE_CROSS_MISMATCH", "ACP tool count", set_fields("result.json", ("n_tool_calls", 3))),
    Case("GATE_VERIFIER_ERROR", "verifier crashed", set_fields("result.json", ("rewards", None), ("verifier_error", "verifier crashed: boom"), ("verifier_error_category", "verifier_failure"))),
    Case("GATE_VERIFIER_ERROR", "no reward and no error", set_fields("result.json", ("rewards", None))),
    Case("GATE_INFRA_ERROR", "error_category", spec=lambda: errored_spec("Sandbox startup failed: quota", "sandbox_setup", reward=None)),
    Case("GATE_INFRA_ERROR", "provider rate limit", spec=lambda: errored_spec("429 Too Many Requests", "provider_rate_limit", reward=None)),
    # V-7: Benchflow's substring list misses ``api_key`` with an underscore.
    Case("GATE_INFRA_ERROR", "uncategorised missing key (V-7)", spec=lambda: errored_spec("Missing OPENAI_API_KEY in the sandbox", None)),
    Case("GATE_INFRA_ERROR", "uncategorised transport (V-7)", spec=lambda: errored_spec("ACP transport closed: closed stdout", "other")),
    Case("GATE_UNREADABLE", "ACP line over the line cap", lambda t: t.replace_line(ACP_FILE, 4, HUGE_ACP_LINE), limits=SMALL_LINES),
    Case("GATE_UNREADABLE", "link leaving the run root", link_out_of_root(ACP_FILE)),
    Case("GATE_UNREADABLE", "results.jsonl is a FIFO", make_fifo(ROWS_FILE)),
    Case("GATE_UNREADABLE", "a special file in verifier/", lambda t: os.mkfifo(t.file("verifier/pipe"))),
    # V-11: Benchflow's validator dies with RecursionError and writes no report.
    Case("GATE_UNREADABLE", "5,000 levels deep (V-11)", lambda t: t.append_line(ACP_FILE, nested(5000))),
    Case("GATE_UNREADABLE", "invalid UTF-8 that prevents parsing", replace_bytes("result.json", b'"error": null', b'"error": \xff')),
    Case("GATE_TRAJECTORY_PARTIAL", "partial_trajectory", set_fields("result.json", ("partial_trajectory", True))),
    Case("GATE_TRAJECTORY_UNTRUSTED", "scraped", set_fields("result.json", ("trajectory_source", "scraped"))),
    Case("GATE_TRAJECTORY_UNTRUSTED", "hosted_env", set_fields("result.json", ("trajectory_source", "hosted_env"))),
    Case("READ_INVALID_UTF8", "replaced byte in an ACP line", replace_bytes(ACP_FILE, b'"Done."', b'"Done.\xff"')),
    Case("READ_NONFINITE", "NaN in an LLM line", replace_bytes(LLM_FILE, b'"duration_ms": 1000.0', b'"duration_ms": NaN')),
]  # fmt: skip

# --------------------------------------------------------------------------- quiet look-alikes

QUIET: list[Case] = [
    Case("GATE_REWARD_MISSING", "a 0.0 reward is present", spec=fail_spec),
    Case("GATE_VERIFIER_ERROR", "a 0.0 reward is a score", spec=fail_spec),
    Case("GATE_ROW_READY_MISMATCH", "not ready with reason and error", spec=timeout_spec),
    Case("GATE_TRAJECTORY_PARTIAL", "clean timeout, complete trajectory", spec=timeout_spec),
    Case("GATE_ROW_SHAPE", "total-only token usage", spec=total_only_spec),
    Case("GATE_TOKENS_MISSING", "total-only token usage", spec=total_only_spec),
    Case("GATE_TOOLS_MISSING", "no tool calls anywhere", spec=lambda: healthy_spec(tools=False)),
    Case("GATE_LLM_MISSING", "oracle lane has no LLM file", spec=oracle_spec),
    Case("GATE_ACP_NO_AGENT_EVENTS", "oracle event", spec=oracle_spec),
    Case("GATE_LLM_NO_EXCHANGE", "a failed call retried", spec=retry_spec),
    Case("GATE_ROW_STEPS_MISMATCH", "a failed 429 call is not a step", spec=retry_spec),
    Case("GATE_ROW_STEPS_MISMATCH", "a failed 500 call is not a step", spec=lambda: retry_spec(status=500)),
    Case("GATE_ROWS_COUNT", "blank lines after the row", lambda t: t.write_text(ROWS_FILE, t.file(ROWS_FILE).read_text() + "\n \n")),
    Case("GATE_ROW_TOOLDEFS", "tool_defs as a JSON string", lambda t: t.set_row("tool_defs", json.dumps(t.read_line(ROWS_FILE)["tool_defs"]))),
    Case("GATE_ROW_BANNED_KEY", "reasoning in a raw step response", set_fields(ROWS_FILE, ("trajectory.1.response.choices.0.message.reasoning_content", "thinking"))),
    Case("GATE_CROSS_MISMATCH", "harness alias", set_fields("config.json", ("agent", "codex"))),
    Case("GATE_CROSS_MISMATCH", "proxy alias as provider_model", on_every_exchange("metadata.provider_model", "benchflow-openai-gpt-x")),
    Case("GATE_CROSS_MISMATCH", "dated upstream model", on_every_exchange("metadata.provider_model", "openai/gpt-x-2026-01-01")),
    Case("GATE_TIMING_MISSING", "no finished_at but a total", set_fields("result.json", ("finished_at", None))),
    Case("GATE_TIMING_INVALID", "ISO timestamps with T", set_fields("result.json", ("started_at", "2026-06-01T10:00:02"), ("finished_at", "2026-06-01T10:01:17"))),
    # V-6: Benchflow ignores float totals and trusts the first token source it finds.
    Case("GATE_TOKENS_MISSING", "float totals (V-6)", set_fields("result.json", ("agent_result.n_input_tokens", 240.0), ("agent_result.n_output_tokens", 25.0), ("agent_result.total_tokens", 265.0))),
    Case("GATE_TOKENS_SUSPICIOUS", "zero output with a small input", spec=total_only_spec),
    # V-7: a legitimate task error that merely mentions "connection" is not infrastructure.
    Case("GATE_INFRA_ERROR", "task error mentioning connection (V-7)", spec=lambda: errored_spec("Task failed: the DB connection string in settings.py is wrong", None)),
    Case("GATE_INFRA_ERROR", "task error mentioning provider and docker (V-7)", spec=lambda: errored_spec("the provider module could not parse docker-compose.yml", None)),
    Case("GATE_UNREADABLE", "a link inside the trial", link_inside),
    Case("GATE_UNREADABLE", "ACP line under a small cap", limits=ReadLimits(max_line_bytes=64 * 1024)),
    Case("READ_INVALID_UTF8", "valid non-ASCII text", replace_bytes(ACP_FILE, b'"Done."', '"Fertig ✓"'.encode())),
    Case("READ_NONFINITE", "finite floats", set_fields(LLM_FILE, ("duration_ms", 1e308), line=1)),
]  # fmt: skip


# --------------------------------------------------------------------------- tests


def test_healthy_trial_passes_the_gate_cleanly(trial: Trial) -> None:
    review = trial.review()
    assert review.findings == []
    assert (review.layout, review.outcome, review.verdict) == ("production", "pass", "publishable")
    assert review.healthy and review.training_ready
    assert review.attribution == "n/a"


@pytest.mark.parametrize(
    "spec",
    [fail_spec, timeout_spec, total_only_spec, retry_spec, lambda: healthy_spec(tools=False)],
)
def test_clean_variants_are_healthy(spec: Callable[[], TrialSpec], runs_root: Path) -> None:
    review = spec().write(runs_root).review()
    assert [f for f in review.findings if f.severity == "blocker"] == []
    assert review.healthy
    assert review.outcome in ("pass", "fail", "normal_timeout")


@pytest.mark.parametrize("case", FIRE, ids=_case_id)
def test_check_fires(case: Case, runs_root: Path) -> None:
    with deadline():  # a reader that opened the FIFO case would block forever
        review = case.build(runs_root).review(case.limits)
    hits = [f for f in review.findings if f.check == case.check]
    assert hits, f"{case.check} did not fire; got {sorted(check_ids(review))}"
    assert {f.severity for f in hits} == {CHECKS[case.check].severity.value}
    if CHECKS[case.check].severity == "blocker":
        assert review.verdict == "rejected"
        assert not review.healthy and not review.training_ready


@pytest.mark.parametrize("case", QUIET, ids=_case_id)
def test_check_stays_quiet(case: Case, runs_root: Path) -> None:
    review = case.build(runs_root).review(case.limits)
    assert case.check not in check_ids(review), [f.message for f in review.findings]


def test_every_gate_id_has_a_fire_case() -> None:
    """A new ``GATE_*`` id in the contract without a fire case here fails the suite."""
    assert {c.check for c in FIRE} == COVERED_IDS


def test_quiet_cases_name_contract_ids() -> None:
    assert {c.check for c in QUIET} <= COVERED_IDS


def test_read_warnings_do_not_change_the_verdict(runs_root: Path) -> None:
    for case in FIRE:
        if case.check in READ_WARNINGS:
            review = case.build(runs_root / case.check).review()
            assert review.verdict == "publishable" and review.training_ready
