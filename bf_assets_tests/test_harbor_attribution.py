"""Attribution on evidence (checks.md §1) and Harbor exceptions classified by type and origin;
a with-skill trial without a proven skill load is never publishable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_harbor_logs import checks, harbor_result, of, review, scanned, write_trial
from trialkit import LLM_FILE, healthy_spec, timeout_spec

from bf_assets.corpus.run import review_roots
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.scan import scan_trial
from bf_assets.review.options import ReviewOptions

HARBOR = "harbor/trial/trial.py"


def traceback(*frames: tuple[str, str], error: str) -> str:
    """A Harbor traceback in the shape ``exception_info.exception_traceback`` records."""
    body = "".join(
        f'  File "/home/u/.local/share/uv/tools/harbor/lib/python3.13/site-packages/{path}", '
        f"line 10, in {func}\n    x()\n"
        for path, func in frames
    )
    return f"Traceback (most recent call last):\n{body}{error}\n"


def exception(etype: str, message: str, *frames: tuple[str, str]) -> dict[str, Any]:
    return {
        "exception_type": etype,
        "exception_message": message,
        "exception_traceback": traceback(*frames, error=f"{etype}: {message}"),
        "occurred_at": "2026-01-29T10:23:52.160652",
    }


def harbor_review(tmp: Path, name: str, **kw: Any):
    write_trial(tmp, f"no_skills/{name}", harbor_result(name, "terminus-2", **kw), {})
    return review(scanned(tmp)[name])


# --------------------------------------------------------------------------- Harbor exceptions


def test_terminus_command_timeout_during_the_agent_run_is_not_infra(tmp_path: Path) -> None:
    exc = exception(
        "RuntimeError",
        "Command timed out after 900 seconds",
        (HARBOR, "run"),
        (HARBOR, "_execute_agent"),
        ("harbor/agents/terminus_2/terminus_2.py", "_run_agent_loop"),
        ("harbor/environments/docker/docker.py", "exec"),
    )
    r = harbor_review(tmp_path, "t__AAAAAAA", reward=0.0, exception=exc)
    assert "GATE_INFRA_ERROR" not in checks(r) and "ATTR_EXPERIMENT_FIDELITY" not in checks(r)
    assert r.attribution == "unknown"
    t = scanned(tmp_path)["t__AAAAAAA"]
    from bf_assets.gate.view import result_view

    v = result_view(t)
    assert (v.exception_phase, v.error_category, v.timed_out) == ("agent", "timeout", True)


@pytest.mark.parametrize(
    ("etype", "message", "frames", "expect"),
    [
        (
            "RuntimeError",
            "Docker compose command failed for environment",
            ((HARBOR, "run"), (HARBOR, "_start_environment_with_retry")),
            "GATE_INFRA_ERROR",
        ),
        (
            "RuntimeError",
            "Agent setup failed with exit code 137.",
            (
                (HARBOR, "run"),
                (HARBOR, "_setup_agent"),
                ("harbor/agents/installed/base.py", "setup"),
            ),
            "GATE_INFRA_ERROR",
        ),
        (
            "ValueError",
            "Environment variable 'OPENAI_API_KEY' not found in host environment",
            (
                (HARBOR, "_verify_with_retry"),
                ("harbor/verifier/verifier.py", "verify"),
                ("harbor/utils/env.py", "resolve_env_vars"),
            ),
            "GATE_VERIFIER_ERROR",
        ),
        (
            "RewardFileEmptyError",
            "Reward file is empty",
            ((HARBOR, "_verify_with_retry"),),
            "GATE_VERIFIER_ERROR",
        ),
    ],
)
def test_harbor_exceptions_by_origin(tmp_path: Path, etype, message, frames, expect) -> None:
    early = expect == "GATE_INFRA_ERROR"  # the run stopped before the agent and the verifier
    phases = {"agent_execution": None, "verifier": None} if early else {}
    exc = exception(etype, message, *frames)
    r = harbor_review(tmp_path, "t__BBBBBBB", reward=None, exception=exc, **phases)
    other = {"GATE_INFRA_ERROR", "GATE_VERIFIER_ERROR"} - {expect}
    assert expect in checks(r) and not other & checks(r)
    assert r.attribution == "experiment_fidelity"


def test_a_null_verifier_result_after_a_verifier_start_is_a_verifier_error(tmp_path: Path) -> None:
    r = harbor_review(tmp_path, "t__CCCCCCC", reward=None)  # no exception recorded at all
    (f,) = of(r, "GATE_VERIFIER_ERROR")
    assert "verifier_result is null" in f.message and r.attribution == "experiment_fidelity"


def test_phase_from_timestamps_without_a_traceback(tmp_path: Path) -> None:
    exc = {"exception_type": "RuntimeError", "exception_message": "boom", "exception_traceback": ""}
    res = harbor_result("t__DDDDDDD", "terminus-2", reward=None, exception=exc)
    res["agent_execution"] = {"started_at": "2026-01-29T02:17:41Z", "finished_at": None}
    res["verifier"] = None
    write_trial(tmp_path, "no_skills/t__DDDDDDD", res, {})
    r = review(scanned(tmp_path)["t__DDDDDDD"])
    assert "GATE_INFRA_ERROR" not in checks(r) and r.attribution == "unknown"


# --------------------------------------------------------------------------- harbor-real figures


@pytest.fixture(scope="module")
def real(fixtures_dir: Path):
    return review_roots([fixtures_dir / "harbor-real"]).trials


def test_harbor_real_attribution_on_evidence(real) -> None:
    fidelity = {t.ref.rollout for t in real if t.attribution == "experiment_fidelity"}
    assert fidelity == {
        "user_dogfood_results",  # production layout without its trajectories: broken recording
        "dapt-intrusion-detection__V9bPmpB",  # agent setup exit 137
        "manufacturing-equipment-maintena__JkcRFYa",  # RewardFileNotFoundError
        "pg-essay-to-audiobook__psYV7zM",  # the verifier's missing OPENAI_API_KEY
        "taxonomy-tree-merge__D2vgYbt",  # EnvironmentStartTimeoutError
    }
    assert not [t for t in real if t.reward == 1.0 and t.attribution == "experiment_fidelity"]
    by = {t.ref.rollout: t for t in real}
    pg = by["pg-essay-to-audiobook__psYV7zM"]
    assert "GATE_VERIFIER_ERROR" in checks(pg) and "GATE_INFRA_ERROR" not in checks(pg)
    assert "OPENAI_API_KEY" in of(pg, "ATTR_EXPERIMENT_FIDELITY")[0].message
    # scored timeouts: neither the unscored-timeout cause nor experiment fidelity
    for name in (
        "claude-code-claude-opus-4-5-skills-seismic-phase-picking-478ba4",
        "earthquake-phase-association__HhYd2Tr",
    ):
        t = by[name]
        assert t.attribution == "unknown" and not of(t, "ATTR_EXPERIMENT_FIDELITY"), name
    paths = [t.ref.path for t in real]
    assert len(paths) == len(set(paths)) == 42  # every trial reported once, none crashed
    assert not [t for t in real if any("reviewed safely" in f.message for f in t.findings)]


# --------------------------------------------------------------------------- the contract


def test_reward_hacking_is_not_experiment_fidelity(fixtures_dir: Path) -> None:
    evals = review_roots([fixtures_dir / "benchflow-evals"]).trials
    by = {t.ref.rollout: t for t in evals}
    hack = by["reward-hack"]
    assert {"HACK_SCORE_WRITE", "HACK_VERIFIER_TAMPER"} <= checks(hack)
    assert hack.attribution == "unknown"  # flat fixtures have no results.jsonl by design
    assert by["infra-timeout-missing-usage"].attribution == "experiment_fidelity"
    assert by["missing-llm-trajectory"].attribution == "experiment_fidelity"  # broken recording


def test_a_broken_production_recording_is_experiment_fidelity(runs_root: Path) -> None:
    spec = healthy_spec()
    spec.result["rewards"] = {"reward": 0.0}
    t = spec.sync().write(runs_root)
    t.drop(LLM_FILE)
    assert t.full_review().attribution == "experiment_fidelity"


def test_a_scored_timeout_without_tokens_is_not_the_unscored_finding(runs_root: Path) -> None:
    t = timeout_spec().write(runs_root)
    t.set_result("agent_result.n_input_tokens", 0)
    t.set_result("agent_result.n_output_tokens", 0)
    r = t.full_review()
    assert not [f for f in of(r, "ATTR_EXPERIMENT_FIDELITY") if "token" in f.message]
    assert r.attribution != "experiment_fidelity"


# --------------------------------------------------------------------------- proven skill load


def test_the_writer_fixture_s_with_skill_pass_is_quarantined_without_tasks(
    fixtures_dir: Path,
) -> None:
    jobs = fixtures_dir / "benchflow-writer" / "jobs"
    [ref] = [r for r in discover([jobs]).trials if r.rollout == "demo-task__aaaa1111"]
    from bf_assets.review.trial import review_data

    plain = review_data(scan_trial(ref))
    (f,) = of(plain, "SKILL_CATALOG_UNKNOWN")
    assert "unproven" in f.message and f.severity == "quarantine"
    assert plain.skills["catalog_status"] == "catalog_absent_in_startup_prompt"
    assert plain.skills["manual_review_required"] is True
    assert plain.verdict == "quarantined" and plain.outcome == "pass"
    tasks = fixtures_dir / "benchflow-writer" / "tasks"
    with_tasks = review_data(scan_trial(ref), ReviewOptions(tasks_dir=str(tasks)))
    assert "SKILL_NOT_LOADED" in checks(with_tasks) and with_tasks.verdict == "quarantined"


def test_a_proven_with_skill_pass_is_publishable_and_the_unproven_one_is_not(
    runs_root: Path,
) -> None:
    assert healthy_spec().write(runs_root).full_review().verdict == "publishable"
    t = healthy_spec(proven=False, rollout_id="aaaa9999").write(runs_root)
    r = t.full_review()
    assert r.verdict == "quarantined" and "SKILL_CATALOG_UNKNOWN" in checks(r)
    cfg = json.loads(t.file("config.json").read_text())
    assert "task_skills" not in cfg


def test_exception_txt_gives_the_origin_when_result_json_has_no_traceback(tmp_path: Path) -> None:
    exc = exception(
        "ValueError",
        "Environment variable 'OPENAI_API_KEY' not found in host environment",
        (HARBOR, "_verify_with_retry"),
        ("harbor/verifier/verifier.py", "verify"),
    )
    tb = exc.pop("exception_traceback")
    res = harbor_result("t__EEEEEEE", "claude-code", reward=None, exception=exc, verifier=None)
    log = "Trial t__EEEEEEE failed: Environment variable 'OPENAI_API_KEY' not found in host environment\n"
    write_trial(tmp_path, "no_skills/t__EEEEEEE", res, {"exception.txt": tb, "trial.log": log})
    r = review(scanned(tmp_path)["t__EEEEEEE"])  # only exception.txt names the verifier
    assert "GATE_VERIFIER_ERROR" in checks(r) and "GATE_INFRA_ERROR" not in checks(r)
    (attr,) = of(r, "ATTR_EXPERIMENT_FIDELITY")
    assert "OPENAI_API_KEY" in attr.message
