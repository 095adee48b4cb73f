"""``ATTR_EXPERIMENT_FIDELITY`` causes, ``PATH_MISMATCH`` and ``PROVENANCE_MISSING``."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_audit_kit import (
    acp_bash,
    audit,
    by_check,
    chat_request,
    chat_response,
    checks,
    flat_trial,
    oh_system,
    prod_trial,
    tool_result_request,
)
from trialkit import errored_spec, fail_spec, healthy_spec

from bf_assets.audit import AuditContext, audit_trial

FAIL = {"status": "fail", "reward": 0.0}


def attr(tmp_path: Path, *, result=None, run_config=None, llm=None, outcome="fail") -> list:
    t = flat_trial(tmp_path, result=result or FAIL, run_config=run_config, llm=llm)
    r = audit_trial(t, AuditContext(), outcome=outcome, attribution="model_capability")
    return by_check(r, "ATTR_EXPERIMENT_FIDELITY")


def test_declared_key_in_the_error_text(tmp_path: Path) -> None:
    (f,) = attr(
        tmp_path,
        result={**FAIL, "error": "REQUIRED_TASK_API_KEY was empty"},
        run_config={"required_env": ["REQUIRED_TASK_API_KEY"]},
    )
    assert "REQUIRED_TASK_API_KEY" in f.message and "run_config.json:required_env" in f.message


def test_declared_key_missing_in_tool_output(tmp_path: Path) -> None:
    sysmsg = oh_system("data-cleaning")
    llm = [
        chat_request(sysmsg),
        chat_response("", [("c1", "execute_bash", {"command": "python query.py"})]),
        tool_result_request(
            sysmsg, "c1", "KeyError: 'TASK_DB_TOKEN' (environment variable not set)"
        ),
        chat_response("Cannot continue."),
    ]
    (f,) = attr(tmp_path, run_config={"required_env": ["TASK_DB_TOKEN"]}, llm=llm)
    assert (
        "TASK_DB_TOKEN" in f.message and f.file == "trajectory/llm_trajectory.jsonl" and f.line == 3
    )


def test_undeclared_credential_in_error_text(tmp_path: Path) -> None:
    (f,) = attr(tmp_path, result={**FAIL, "error": "OPENWEATHER_API_KEY is not set"})
    assert "OPENWEATHER_API_KEY" in f.message


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (
            "pip: Could not find a version that satisfies the requirement torch==9",
            "dependency install failure",
        ),
        ("curl: (6) Could not resolve host: data.example.org", "network failure"),
        ("OSError: [Errno 28] No space left on device", "too little compute, memory or disk"),
        ("fatal: Authentication failed for 'https://x'", "missing or invalid credential"),
    ],
)
def test_error_text_causes(tmp_path: Path, error: str, label: str) -> None:
    (f,) = attr(tmp_path, result={**FAIL, "error": error})
    assert label in f.message


def test_quiet_for_passes_and_plain_model_failures(tmp_path: Path) -> None:
    assert attr(tmp_path / "a", result={**FAIL, "error": "TOKEN missing"}, outcome="pass") == []
    assert attr(tmp_path / "b", result=FAIL) == []
    assert attr(tmp_path / "c", result={**FAIL, "error": "AssertionError: wrong total"}) == []


def test_key_mentioned_without_missing_context_in_output_is_quiet(tmp_path: Path) -> None:
    sysmsg = oh_system("data-cleaning")
    llm = [
        chat_request(sysmsg),
        chat_response("", [("c1", "execute_bash", {"command": "env | grep TASK"})]),
        tool_result_request(sysmsg, "c1", "TASK_DB_TOKEN=abc123"),
        chat_response("ok"),
    ]
    assert attr(tmp_path, run_config={"required_env": ["TASK_DB_TOKEN"]}, llm=llm) == []


def test_gate_attribution_is_acknowledged(tmp_path: Path) -> None:
    t = prod_trial(tmp_path, errored_spec("Missing OPENAI_API_KEY for the task client", "other"))
    r = audit(t)
    (f,) = by_check(r, "ATTR_EXPERIMENT_FIDELITY")
    assert "OPENAI_API_KEY" in f.message and "gate also" in f.message


# --------------------------------------------------------------------------- paths


def test_other_task_directory_in_actions(tmp_path: Path) -> None:
    r = audit(flat_trial(tmp_path, acp=[acp_bash("cd /tasks/other-task && ls")]))
    (f,) = by_check(r, "PATH_MISMATCH")
    assert "other-task" in f.message and f.line == 1


def test_own_task_directory_is_quiet(tmp_path: Path) -> None:
    r = audit(flat_trial(tmp_path, acp=[acp_bash("ls /tasks/example-task/data")]))
    assert "PATH_MISMATCH" not in checks(r)


def test_known_task_under_a_relative_tasks_path(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "sales-report").mkdir(parents=True)
    t = flat_trial(tmp_path / "runs", acp=[acp_bash("cat ../tasks/sales-report/instruction.md")])
    assert "PATH_MISMATCH" in checks(audit(t, tasks))
    quiet = flat_trial(tmp_path / "runs2", acp=[acp_bash("ls celery/tasks/cleanup/")])
    assert "PATH_MISMATCH" not in checks(audit(quiet, tasks))


def test_skills_dir_of_another_task(tmp_path: Path) -> None:
    spec = healthy_spec()
    spec.config["effective_skills_dir"] = "/tmp/bf-x/other-task/environment/skills"
    (f,) = by_check(audit(prod_trial(tmp_path, spec)), "PATH_MISMATCH")
    assert f.file == "config.json" and "other-task" in f.message


def test_task_path_and_source_path_disagree(tmp_path: Path) -> None:
    spec = healthy_spec()
    spec.config["source"]["path"] = "tasks/other-task"
    assert "PATH_MISMATCH" in checks(audit(prod_trial(tmp_path, spec)))


def test_rollout_dir_names_another_rollout(tmp_path: Path) -> None:
    spec = healthy_spec()
    assert spec.row is not None
    spec.row["info"]["rollout_dir"] = "/srv/bench/jobs/j/demo-task__zzzz9999"
    (f,) = by_check(audit(prod_trial(tmp_path, spec)), "PATH_MISMATCH")
    assert f.file == "results.jsonl"


def test_healthy_production_trial_paths_agree(tmp_path: Path) -> None:
    r = audit(prod_trial(tmp_path, fail_spec()))
    assert not {"PATH_MISMATCH", "PROVENANCE_MISSING"} & checks(r)


def test_provenance_missing(tmp_path: Path) -> None:
    spec = healthy_spec()
    for doc in (spec.config, spec.result):
        doc.pop("task_digest")
        doc["source"].pop("resolved_sha")
    (f,) = by_check(audit(prod_trial(tmp_path, spec)), "PROVENANCE_MISSING")
    assert f.severity == "warning"


def test_resolved_sha_alone_or_flat_source_ref_is_provenance(tmp_path: Path) -> None:
    spec = healthy_spec()
    for doc in (spec.config, spec.result):
        doc.pop("task_digest")
    assert "PROVENANCE_MISSING" not in checks(audit(prod_trial(tmp_path / "a", spec)))
    assert "PROVENANCE_MISSING" not in checks(audit(flat_trial(tmp_path / "b")))
    flat = flat_trial(tmp_path / "c", run_config={"source_ref": None})
    assert "PROVENANCE_MISSING" in checks(audit(flat))


@pytest.mark.parametrize(
    ("output", "fires"),
    [
        ("Traceback ...\nKeyError: 'GITHUB_TOKEN'", True),
        ("fatal: missing GITHUB_TOKEN for the task API", True),
        ("README: the client reads OPENAI_API_KEY required for live calls", False),
        ("Usage: export OPENAI_API_KEY=... (required)", False),
    ],
)
def test_undeclared_credential_in_tool_output(tmp_path: Path, output: str, fires: bool) -> None:
    sysmsg = oh_system("data-cleaning")
    llm = [
        chat_request(sysmsg),
        chat_response("", [("c1", "execute_bash", {"command": "python run.py"})]),
        tool_result_request(sysmsg, "c1", output),
        chat_response("stuck"),
    ]
    assert bool(attr(tmp_path, llm=llm)) is fires
