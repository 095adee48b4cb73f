"""``VERIFIER_ORDER`` and ``VERIFIER_LEAK``."""

from __future__ import annotations

import json
from pathlib import Path

from test_audit_kit import (
    acp_bash,
    audit,
    by_check,
    chat_request,
    chat_response,
    checks,
    flat_trial,
    oh_system,
    one_bash_call,
    prod_trial,
    scan_dir,
    tool_result_request,
)
from trialkit import healthy_spec

SCORE = {"phase": "verifier", "type": "score", "reward": 1.0}
FINAL = {"phase": "agent", "type": "final", "content": "done"}


def test_flat_flag_false_with_a_reward_fires(tmp_path: Path) -> None:
    r = audit(flat_trial(tmp_path, result={"verifier_started_after_agent": False}))
    (f,) = by_check(r, "VERIFIER_ORDER")
    assert f.file == "result.json" and f.severity == "blocker"


def test_flat_flag_false_when_the_verifier_never_ran_is_quiet(tmp_path: Path) -> None:
    res = {"verifier_started_after_agent": False, "reward": None, "status": "timeout"}
    assert "VERIFIER_ORDER" not in checks(audit(flat_trial(tmp_path, result=res)))


def test_verifier_event_before_the_agent_finished(tmp_path: Path) -> None:
    acp = [acp_bash("ls"), SCORE, FINAL]
    (f,) = by_check(audit(flat_trial(tmp_path, acp=acp)), "VERIFIER_ORDER")
    assert f.line == 2 and f.file == "trajectory/acp_trajectory.jsonl"


def test_verifier_event_after_the_agent_is_quiet(tmp_path: Path) -> None:
    acp = [acp_bash("ls"), FINAL, SCORE]
    assert "VERIFIER_ORDER" not in checks(audit(flat_trial(tmp_path, acp=acp)))


def test_reward_recorded_before_the_agent_phase_ended(tmp_path: Path) -> None:
    trial = healthy_spec().write(tmp_path)
    trial.write_text("verifier/reward.txt", "1")
    event = json.loads(trial.file("rewards.jsonl").read_text())
    event["ts"] = "2026-06-01T10:00:10"  # started 10:00:02 + 55.5 s of setup and agent phases
    trial.write_text("rewards.jsonl", json.dumps(event) + "\n")
    (f,) = by_check(audit(scan_dir(tmp_path, trial.path)), "VERIFIER_ORDER")
    assert f.file == "rewards.jsonl" and f.line == 1


def test_reward_after_the_agent_phase_is_quiet(tmp_path: Path) -> None:
    assert "VERIFIER_ORDER" not in checks(audit(prod_trial(tmp_path)))


def test_seen_content_of_a_hidden_file_is_a_leak(tmp_path: Path) -> None:
    llm = one_bash_call("cat /tests/test_outputs.py", "def test_values():\n    assert read() == 42")
    r = audit(flat_trial(tmp_path, llm=llm))
    (f,) = by_check(r, "VERIFIER_LEAK")
    assert "/tests/test_outputs.py" in f.message and f.line == 2
    assert "HACK_HIDDEN_READ" in checks(r)


def test_failed_hidden_read_is_no_leak(tmp_path: Path) -> None:
    llm = one_bash_call(
        "cat /tests/test_outputs.py", "cat: /tests/test_outputs.py: No such file or directory"
    )
    assert "VERIFIER_LEAK" not in checks(audit(flat_trial(tmp_path, llm=llm)))


def _task_with_tests(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    (tasks / "example-task" / "tests").mkdir(parents=True)
    (tasks / "example-task" / "tests" / "test_outputs.py").write_text(
        "import json\n\ndef test_total():\n    assert summary['total_revenue'] == 18233.57\n"
    )
    return tasks


def test_hidden_test_lines_in_an_observation_are_a_leak(tmp_path: Path) -> None:
    tasks = _task_with_tests(tmp_path)
    sysmsg = oh_system("data-cleaning")
    llm = [
        chat_request(sysmsg),
        chat_response("", [("c1", "execute_bash", {"command": "cat /app/notes.txt"})]),
        tool_result_request(
            sysmsg, "c1", "hint:\n    assert summary['total_revenue'] == 18233.57\n"
        ),
        chat_response("Done."),
    ]
    (f,) = by_check(audit(flat_trial(tmp_path / "runs", llm=llm), tasks), "VERIFIER_LEAK")
    assert f.line == 3 and "18233.57" in (f.evidence or "")


def test_hidden_test_lines_in_the_startup_prompt_are_a_leak(tmp_path: Path) -> None:
    tasks = _task_with_tests(tmp_path)
    prompt = "Make this pass: assert summary['total_revenue'] == 18233.57"
    llm = [chat_request(oh_system("data-cleaning"), prompt), chat_response()]
    (f,) = by_check(audit(flat_trial(tmp_path / "runs", llm=llm), tasks), "VERIFIER_LEAK")
    assert "startup prompt" in f.message and f.line == 1


def test_task_tests_absent_from_what_the_agent_saw_is_quiet(tmp_path: Path) -> None:
    tasks = _task_with_tests(tmp_path)
    assert "VERIFIER_LEAK" not in checks(audit(flat_trial(tmp_path / "runs"), tasks))
