"""The gate on the three shared fixture sets (skipped when ``/work/shared`` is absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trialkit import ACP_FILE, JOB, LLM_FILE, ROWS_FILE, check_ids, healthy_spec

from bf_assets.corpus.run import review_roots
from bf_assets.gate.run import run_gate
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.scan import scan_trial
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview

EVALS = {
    "clean-pass": set(),
    "reward-hack": set(),
    "no-skill-leak": set(),
    "missing-llm-trajectory": {"GATE_LLM_MISSING"},
    "infra-timeout-missing-usage": {
        "GATE_TOKENS_MISSING",
        "GATE_LLM_NO_EXCHANGE",
        "GATE_LLM_NO_USAGE",
        "GATE_REWARD_MISSING",
        "GATE_INFRA_ERROR",
    },
}
ZERO_OUTPUT_MINIMAX = 14


def reviews(root: Path) -> dict[str, TrialReview]:
    return {t.ref.rel_path: t for t in review_roots([root], ReviewOptions(audits=False)).trials}


@pytest.fixture(scope="module")
def writer(fixtures_dir: Path) -> dict[str, TrialReview]:
    return {
        Path(k).name.split("__")[1]: v
        for k, v in reviews(fixtures_dir / "benchflow-writer").items()
    }


@pytest.fixture(scope="module")
def harbor(fixtures_dir: Path) -> dict[str, TrialReview]:
    return reviews(fixtures_dir / "harbor-real")


# --------------------------------------------------------------------------- benchflow-writer


def test_writer_pass(writer: dict[str, TrialReview]) -> None:
    t = writer["aaaa1111"]
    assert (t.outcome, t.healthy, t.training_ready, t.verdict) == (
        "pass",
        True,
        True,
        "publishable",
    )
    assert [f for f in t.findings if f.severity == "blocker"] == []
    assert t.attribution == "n/a"


def test_writer_verifier_crash(writer: dict[str, TrialReview]) -> None:
    t = writer["bbbb2222"]
    assert (t.outcome, t.healthy, t.verdict) == ("unhealthy", False, "rejected")
    assert {"GATE_VERIFIER_ERROR", "GATE_REWARD_MISSING"} <= check_ids(t)
    assert t.attribution == "experiment_fidelity"
    # the row's reward 0.0 is Benchflow's placeholder, never read as a score
    assert "GATE_CROSS_MISMATCH" not in check_ids(t)


def test_writer_partial_timeout_is_not_a_healthy_timeout(writer: dict[str, TrialReview]) -> None:
    t = writer["cccc3333"]
    assert t.outcome == "unhealthy" and not t.healthy and not t.training_ready
    assert "GATE_TRAJECTORY_PARTIAL" in check_ids(t)
    partial = next(f for f in t.findings if f.check == "GATE_TRAJECTORY_PARTIAL")
    assert "call_9" in partial.message


def test_writer_oracle(writer: dict[str, TrialReview]) -> None:
    t = writer["dddd4444"]
    assert t.outcome == "oracle" and not t.training_ready and not t.healthy
    assert "GATE_LLM_MISSING" not in check_ids(t)


def test_writer_job_identity(writer: dict[str, TrialReview]) -> None:
    assert {t.ref.job for t in writer.values()} == {JOB}


# --------------------------------------------------------------------------- benchflow-evals


@pytest.mark.parametrize("name", sorted(EVALS))
def test_eval_fixture_gate_findings(fixtures_dir: Path, name: str) -> None:
    [t] = [r for r in review_roots([fixtures_dir / "benchflow-evals"], ReviewOptions(audits=False)).trials if r.ref.rollout == name]  # fmt: skip
    ids = check_ids(t)
    assert {"GATE_ROWS_MISSING", *EVALS[name]} <= ids
    assert t.layout == "flat" and "LAYOUT_ADAPTED" in ids
    assert t.verdict == "rejected" and not t.healthy


def test_eval_clean_pass_fails_only_for_the_missing_row(fixtures_dir: Path) -> None:
    found = reviews(fixtures_dir / "benchflow-evals")["clean-pass"]
    assert [f.check for f in found.findings if f.severity == "blocker"] == ["GATE_ROWS_MISSING"]


def test_eval_infra_timeout_is_experiment_fidelity(fixtures_dir: Path) -> None:
    t = reviews(fixtures_dir / "benchflow-evals")["infra-timeout-missing-usage"]
    assert t.attribution == "experiment_fidelity"
    infra = next(f for f in t.findings if f.check == "GATE_INFRA_ERROR")
    assert "REQUIRED_TASK_API_KEY" in infra.message


# --------------------------------------------------------------------------- harbor-real


def _harbor_reward(trial_dir: Path) -> float | None:
    try:
        result = json.loads((trial_dir / "result.json").read_text())
    except FileNotFoundError:
        return None
    reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    return reward if isinstance(reward, int | float) else None


def test_harbor_trials_are_reviewed_without_an_exception(fixtures_dir: Path) -> None:
    refs = discover([fixtures_dir / "harbor-real"]).trials
    assert len(refs) == 42
    for ref in refs:  # no try/except here: an exception fails the test
        gate = run_gate(scan_trial(ref))
        assert gate.verdict in ("rejected", "quarantined", "publishable")


def test_every_harbor_trial_is_rejected(harbor: dict[str, TrialReview]) -> None:
    harbor_trials = [t for t in harbor.values() if t.layout == "harbor"]
    assert len(harbor_trials) == 41
    for t in harbor_trials:
        assert not t.healthy and t.verdict != "publishable", t.ref.rel_path
        ids = check_ids(t)
        assert {"GATE_ACP_MISSING", "GATE_LLM_MISSING"} <= ids, t.ref.rel_path
        assert ids & {"GATE_ROWS_MISSING", "GATE_RESULT_MISSING"}, t.ref.rel_path
        assert not any("could not be reviewed safely" in f.message for f in t.findings)


def test_harbor_trial_log_only_is_incomplete(harbor: dict[str, TrialReview]) -> None:
    t = next(v for k, v in harbor.items() if k.endswith("scheduling-email-assistant__4exzDzN"))
    assert t.outcome == "incomplete" and "GATE_RESULT_MISSING" in check_ids(t)


def test_harbor_reward_is_read_from_verifier_result(
    harbor: dict[str, TrialReview], fixtures_dir: Path
) -> None:
    # Benchflow's validator reports a missing reward for every Harbor trial (it reads
    # ``rewards.reward``); the Harbor adapter reads ``verifier_result.rewards.reward``.
    root = fixtures_dir / "harbor-real"
    with_reward = without = 0
    for rel, t in harbor.items():
        if t.layout != "harbor":
            continue
        if _harbor_reward(root / rel) is None:
            without += 1
            assert "GATE_REWARD_MISSING" in check_ids(t) or t.outcome == "incomplete", rel
        else:
            with_reward += 1
            assert "GATE_REWARD_MISSING" not in check_ids(t), rel
    assert (with_reward, without) == (36, 5)


def test_harbor_zero_output_tokens_are_suspicious(
    harbor: dict[str, TrialReview], fixtures_dir: Path
) -> None:
    root = fixtures_dir / "harbor-real"
    flagged = {rel for rel, t in harbor.items() if "GATE_TOKENS_SUSPICIOUS" in check_ids(t)}
    assert len(flagged) == ZERO_OUTPUT_MINIMAX
    for rel in flagged:
        assert "minimax" in rel
        usage = json.loads((root / rel / "result.json").read_text())["agent_result"]
        assert usage["n_output_tokens"] == 0 and usage["n_input_tokens"] > 100_000
    suspicious = next(f for rel in flagged for f in harbor[rel].findings if f.check == "GATE_TOKENS_SUSPICIOUS")  # fmt: skip
    assert suspicious.severity == "warning"


def test_harbor_dogfood_production_result(harbor: dict[str, TrialReview]) -> None:
    t = harbor["benchflow-ai__benchflow/docs/examples/user_dogfood_results"]
    assert t.layout == "production" and t.verdict == "rejected"
    assert {"GATE_ACP_MISSING", "GATE_LLM_MISSING", "GATE_ROWS_MISSING"} <= check_ids(t)
    assert "GATE_REWARD_MISSING" not in check_ids(t)  # rewards.reward 0.0 is a score


# --------------------------------------------------------------------------- trialkit fidelity


def test_built_healthy_trial_mirrors_the_writer_fixture(
    fixtures_dir: Path, runs_root: Path
) -> None:
    """trialkit's healthy trial, without the proof of a skill load it adds by default, is
    Benchflow's aaaa1111 up to timestamps (same files, keys, key order, LLM exchanges and
    training row), so the suite tests the real format."""
    trial = healthy_spec(proven=False).write(runs_root)
    fx = fixtures_dir / "benchflow-writer" / "jobs" / JOB / "demo-task__aaaa1111"

    def files(p: Path) -> set[str]:
        # verifier/ is empty in the fixture (git keeps no empty dirs; live runs fill it),
        # while trialkit writes what a live verifier leaves there.
        return {
            x.relative_to(p).as_posix()
            for x in p.rglob("*")
            if x.is_file() and not x.relative_to(p).as_posix().startswith("verifier/")
        }

    assert files(trial.path) == files(fx)
    for rel in ("config.json", "result.json"):
        want, got = json.loads((fx / rel).read_text()), trial.read_json(rel)
        assert list(got) == list(want)
        assert {k for k in want if want[k] != got[k]} <= {"started_at", "finished_at"}
    assert trial.read_line(ROWS_FILE) == json.loads((fx / ROWS_FILE).read_text())
    llm = (fx / LLM_FILE).read_text().split("\n")
    assert [trial.read_line(LLM_FILE, i + 1) for i in range(2)] == [json.loads(x) for x in llm]
    assert trial.file(ACP_FILE).read_bytes() == (fx / ACP_FILE).read_bytes()
    for rel in ("prompts.json", "timing.json"):
        assert trial.file(rel).read_bytes() == (fx / rel).read_bytes()
