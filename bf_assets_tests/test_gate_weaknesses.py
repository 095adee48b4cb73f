"""The gate's deliberate fixes of Benchflow validator weaknesses (``review-rules.md`` §10.1).

Each test names the weakness it covers.  The short single-mutation fixes (V-3, V-5, V-6,
V-7, V-9, V-11) are also cases of the tables in ``test_gate_checks.py``; the scenarios here
need a purpose-built trial or check more than one file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trialkit import (
    ACP_FILE,
    LLM_FILE,
    ROWS_FILE,
    Trial,
    TrialSpec,
    assistant,
    chat_exchange,
    check_ids,
    errored_spec,
    healthy_spec,
    opening,
    tool_call,
    tool_result,
)

from bf_assets.ingest.readers import ReadLimits


def _v13_spec(step_indices: list[int]) -> TrialSpec:
    """Two attempts of the first request answer ``call_12`` then ``call_1``; only ``call_12``
    is consumed by the follow-up request.  Exact ids select exchanges 0 and 2; Benchflow's
    substring test also sees ``call_1`` inside ``"call_12"`` and picks the later retry, 1."""
    spec = healthy_spec()
    c12 = tool_call("call_12", "echo hi > hello.txt")
    c1 = tool_call("call_1", "echo hi > hello.txt")
    follow = [*opening(), assistant(None, c12), tool_result("call_12")]
    spec.llm = [
        chat_exchange(opening(), assistant(None, c12), second=0),
        chat_exchange(opening(), assistant(None, c1), second=2),
        chat_exchange(follow, assistant("Done."), usage=(140, 5), second=4),
    ]
    assert spec.acp is not None
    spec.acp[2]["tool_call_id"] = "call_12"
    return spec.rebuild_steps(step_indices).sync()


def test_v13_call_ids_match_exactly_not_as_substrings(runs_root: Path) -> None:
    # V-13: ``call_1`` must not count as consumed by a request that only mentions ``call_12``.
    exact = _v13_spec([0, 2]).write(runs_root / "exact").review()
    assert exact.findings == [] and exact.training_ready
    substring = _v13_spec([1, 2]).write(runs_root / "substring").review()
    assert "GATE_ROW_STEPS_MISMATCH" in check_ids(substring)


def test_v3_three_steps_against_one_exchange_without_status_codes(trial: Trial) -> None:
    # V-3: a 3-step row against 1 exchange passes Benchflow when no status_code is recorded.
    row = trial.read_line(ROWS_FILE)
    row["trajectory"].append(json.loads(json.dumps(row["trajectory"][1])))
    trial.write_line(ROWS_FILE, 1, row)
    trial.write_text(LLM_FILE, trial.lines(LLM_FILE)[1])
    trial.del_field(LLM_FILE, "response.status_code")
    assert "GATE_ROW_STEPS_MISMATCH" in trial.checks()


def test_v4_task_checked_when_the_row_lacks_it(trial: Trial) -> None:
    # V-4: Benchflow skips the task comparison when the row names no task.
    trial.del_field(ROWS_FILE, "info.task_id")
    trial.del_field(ROWS_FILE, "info.task_name")
    assert "GATE_ROW_SHAPE" in trial.checks()


def test_v4_task_checked_when_result_lacks_it(trial: Trial) -> None:
    trial.del_field("result.json", "task_name")
    assert check_ids(trial.review()) & {"GATE_CROSS_MISMATCH", "GATE_RESULT_INVALID"}


def test_v4_model_served_by_another_upstream(trial: Trial) -> None:
    # V-4: a proxy serving another model than the declared one went unnoticed.
    for line in (1, 2):
        trial.set_field(LLM_FILE, "metadata.provider_model", "anthropic/claude-x", line=line)
    assert "GATE_CROSS_MISMATCH" in trial.checks()


def test_v4_model_prefix_is_not_the_same_model(runs_root: Path) -> None:
    spec = healthy_spec()
    spec.config["model"] = spec.result["model"] = "openai/gpt-4"
    assert spec.row is not None and spec.llm is not None
    spec.row["info"]["model"] = "openai/gpt-4"
    for ex in spec.llm:
        ex["metadata"]["provider_model"] = "openai/gpt-4o"
    assert "GATE_CROSS_MISMATCH" in spec.write(runs_root).checks()


def test_v6_any_positive_token_source_counts(trial: Trial) -> None:
    # V-6: zeros in agent_result hid a positive token_usage (first source found wins).
    r = trial.read_json("result.json")
    r["agent_result"].update(n_input_tokens=0, n_output_tokens=0, total_tokens=0)
    r["final_metrics"].update(total_prompt_tokens=0, total_completion_tokens=0)
    r["token_usage"] = {"input_tokens": 240.0, "output_tokens": 25.0, "total_tokens": 265.0}
    trial.write_json("result.json", r)
    assert "GATE_TOKENS_MISSING" not in trial.checks()


@pytest.mark.parametrize(
    "acp",
    [
        # the flat fixtures' harness-phase timeout row
        [{"type": "user_message", "text": "x"}, {"phase": "harness", "type": "timeout"}],
        # the production wall-clock timeout event
        [{"type": "user_message", "text": "x"}, {"type": "agent_timeout", "timeout_sec": 9.0}],
        # verifier-phase events are not agent activity either
        [{"phase": "verifier", "type": "tool_call"}, {"phase": "verifier", "type": "score"}],
    ],
)
def test_v8_harness_rows_are_not_agent_activity(trial: Trial, acp: list[dict]) -> None:
    # V-8: Benchflow counts any typed non-verifier row, a harness ``timeout`` included.
    trial.write_text(ACP_FILE, "\n".join(json.dumps(e) for e in acp))
    assert "GATE_ACP_NO_AGENT_EVENTS" in trial.checks()


def test_v7_category_decides_before_text(runs_root: Path) -> None:
    # V-7: the category taxonomy, not substrings: an idle timeout is fidelity, not infra text.
    idle = errored_spec("Agent idle for 600s with no new tool call", "idle_timeout")
    review = idle.write(runs_root).review()
    assert "GATE_INFRA_ERROR" not in check_ids(review)
    assert review.attribution == "experiment_fidelity" and not review.healthy


def test_experiment_fidelity_failure_is_not_publishable(runs_root: Path) -> None:
    idle = errored_spec("Agent idle for 600s with no new tool call", "idle_timeout")
    review = idle.write(runs_root).review()
    assert review.verdict != "publishable"


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("rel", "limits"),
    [
        ("result.json", None),
        (ACP_FILE, None),
        (LLM_FILE, None),
        (ROWS_FILE, None),
        (ROWS_FILE, ReadLimits(max_line_bytes=1024)),  # the streaming row parser
    ],
)
def test_v11_deep_nesting_is_a_finding_not_a_crash(
    trial: Trial, rel: str, limits: ReadLimits | None
) -> None:
    # V-11: a deeply nested line raised RecursionError and aborted Benchflow's whole batch.
    if rel == "result.json":
        trial.write_text(rel, '{"deep": ' + DEEP + "}")
    elif rel == ROWS_FILE:
        row = trial.file(rel).read_text().rstrip("\n")
        trial.write_text(rel, row[:-1] + ', "deep": ' + DEEP + "}\n")
    else:
        trial.append_line(rel, DEEP)
    review = trial.review(limits)
    unreadable = [f for f in review.findings if f.check == "GATE_UNREADABLE"]
    assert [f.file for f in unreadable][:1] == [rel]
    assert not any("could not be reviewed safely" in f.message for f in review.findings)


def test_v11_nesting_just_under_the_cap_is_a_finding_on_the_file(trial: Trial) -> None:
    trial.append_line(ACP_FILE, "[" * 1000 + "]" * 1000)
    review = trial.review()
    assert not any("could not be reviewed safely" in f.message for f in review.findings)
    assert ACP_FILE in {f.file for f in review.findings}
