"""A production trial whose recording is broken is attributed to the experiment
(``checks.md`` §1: a broken recording is a cause on record, and means "rerun it"), whether
the verifier scored a fail or a pass; a cross-file disagreement is not a lost record."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from trialkit import ACP_FILE, ROWS_FILE, Trial, TrialSpec, check_ids, healthy_spec


def _duplicated_row(t: Trial) -> None:
    t.append_line(ROWS_FILE, t.lines(ROWS_FILE)[0])


def _no_row(t: Trial) -> None:
    t.write_text(ROWS_FILE, "")


def _no_timing(t: Trial) -> None:
    result = t.read_json("result.json")
    del result["started_at"]
    t.write_json("result.json", result)


def _impossible_timing(t: Trial) -> None:
    t.set_result("timing.total", -5)


def _empty_acp(t: Trial) -> None:
    t.write_text(ACP_FILE, "")


def _acp_without_agent_events(t: Trial) -> None:
    t.write_text(ACP_FILE, json.dumps({"type": "user_message", "text": "Create hello.txt"}))


def _no_tool_count(t: Trial) -> None:
    t.set_result("n_tool_calls", None)
    t.set_result("agent_result.n_tool_calls", None)


def _zero_tokens(spec: TrialSpec) -> None:
    assert spec.llm is not None
    for ex in spec.llm:
        ex["response"]["body"]["usage"] = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "total_tokens": 0,
        }
    spec.rebuild_steps().sync()


def _keep(spec: TrialSpec) -> None:
    pass


def _untouched(t: Trial) -> None:
    pass


CASES: list[tuple[str, Callable[[TrialSpec], None], Callable[[Trial], None], str]] = [
    ("duplicated row", _keep, _duplicated_row, "GATE_ROWS_COUNT"),
    ("no row", _keep, _no_row, "GATE_ROWS_COUNT"),
    ("zero tokens", _zero_tokens, _untouched, "GATE_TOKENS_MISSING"),
    ("missing timing", _keep, _no_timing, "GATE_TIMING_MISSING"),
    ("impossible timing", _keep, _impossible_timing, "GATE_TIMING_INVALID"),
    ("empty ACP file", _keep, _empty_acp, "GATE_ACP_EMPTY"),
    ("ACP without agent events", _keep, _acp_without_agent_events, "GATE_ACP_NO_AGENT_EVENTS"),
    ("no tool count", _keep, _no_tool_count, "GATE_TOOLS_MISSING"),
]


@pytest.mark.parametrize("reward", [0.0, 1.0], ids=["scored fail", "scored pass"])
@pytest.mark.parametrize(("name", "before", "after", "check"), CASES, ids=[c[0] for c in CASES])
def test_a_broken_recording_is_experiment_fidelity(
    tmp_path: Path,
    name: str,
    before: Callable[[TrialSpec], None],
    after: Callable[[Trial], None],
    check: str,
    reward: float,
) -> None:
    spec = healthy_spec()
    spec.result["rewards"] = {"reward": reward}
    spec.sync()
    before(spec)
    t = spec.write(tmp_path)
    after(t)
    for review in (t.review(), t.full_review()):
        assert check in check_ids(review), name
        assert review.outcome == "unhealthy" and not review.healthy
        assert review.attribution == "experiment_fidelity", name
        assert review.reward == reward  # a broken pass is still visibly a pass


def test_a_result_that_disagrees_with_its_trajectory_is_not_a_broken_recording(
    tmp_path: Path,
) -> None:
    """result.json's zero tokens beside a trajectory with usage: a disagreement between
    files (GATE_CROSS_MISMATCH), not a lost record; its cause stays unknown."""
    spec = healthy_spec()
    spec.result["rewards"] = {"reward": 0.0}
    t = spec.sync().write(tmp_path)
    t.set_result("agent_result.n_input_tokens", 0)
    t.set_result("agent_result.n_output_tokens", 0)
    r = t.full_review()
    assert check_ids(r) & {"GATE_CROSS_MISMATCH"} and "GATE_TOKENS_MISSING" not in check_ids(r)
    assert r.attribution == "unknown"
