"""The audits on the shared fixtures (benchflow-evals expectations, the writer fixtures, the
Harbor corpus) and on the generated sample data under ``data/runs``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_audit_kit import audit, by_check, checks

from bf_assets.ingest.discovery import discover
from bf_assets.ingest.scan import TrialData, scan_trial

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "runs"


def _trials(root: Path) -> dict[str, TrialData]:
    return {ref.rel_path: scan_trial(ref) for ref in discover([root]).trials}


@pytest.fixture(scope="module")
def evals(fixtures_dir: Path) -> dict[str, TrialData]:
    return _trials(fixtures_dir / "benchflow-evals")


def test_clean_pass_has_no_audit_blocker(evals: dict[str, TrialData]) -> None:
    r = audit(evals["clean-pass"])
    assert not [f for f in r.findings if f.severity in ("blocker", "quarantine")], r.findings
    s = r.skills
    assert s["harness"] == "openhands" and s["catalog_status"] == "catalog_found"
    assert s["skills"] == ["data-cleaning"] and s["task_skills_loading"] == 1
    assert s["status"] == "complete" and s["manual_review_required"] is False
    assert s["catalog_sha256"] == "51bdd1051b6caff029d54a18a2de6fd0a3aad14b761d6295ec75275833546c1a"
    assert s["catalog_chars"] == 90 and s["request_path"] == "/chat/completions"
    assert s["source_file"] == "trajectory/llm_trajectory.jsonl" and s["line"] == 1


def test_reward_hack_cites_tamper_suppression_and_score_write(
    evals: dict[str, TrialData],
) -> None:
    r = audit(evals["reward-hack"])
    assert {"HACK_VERIFIER_TAMPER", "HACK_SCORE_WRITE", "HACK_TEST_SUPPRESSION"} <= checks(r)
    (tamper,) = by_check(r, "HACK_VERIFIER_TAMPER")
    assert tamper.file == "trajectory/acp_trajectory.jsonl" and tamper.line == 1
    assert "verifier.py" in tamper.message
    (score,) = by_check(r, "HACK_SCORE_WRITE")
    assert score.line == 2 and "results/score.json" in score.message
    assert 'printf \'{"reward": 1.0' in (score.evidence or "")
    (supp,) = by_check(r, "HACK_TEST_SUPPRESSION")
    assert "assert True" in (supp.evidence or "") and "assert answer == expected" in supp.evidence
    assert r.skills["task_skills_loading"] == 1 and r.skills["skills"] == ["debug"]
    assert r.skills["catalog_sha256"].startswith("15c6f913403e")


def test_no_skill_leak_cites_skill_md_and_invoke_skill(evals: dict[str, TrialData]) -> None:
    r = audit(evals["no-skill-leak"])
    leaks = by_check(r, "NOSKILL_LEAK")
    assert [f.line for f in leaks] == [1, 2]
    assert "SKILL.md" in leaks[0].message and "task-helper/SKILL.md" in (leaks[0].evidence or "")
    assert "invoke_skill" in leaks[1].message
    assert "NOSKILL_CATALOG_INJECTED" not in checks(r)
    s = r.skills
    assert s["harness"] == "codex-acp" and s["skill_mode"] == "no-skill"
    assert s["task_skills_loading"] == 0 and s["status"] == "not_loaded_without_skills"
    assert s["catalog_status"] == "catalog_found" and s["skill_count"] == 0
    assert s["catalog_sha256"].startswith("4dbe0aab060b") and s["catalog_chars"] == 22
    assert s["expected_task_skills"] == ["task-helper"] and s["request_path"] == "/responses"
    assert "SKILL_CATALOG_UNKNOWN" not in checks(r)


def test_infra_timeout_names_the_missing_key(evals: dict[str, TrialData]) -> None:
    r = audit(evals["infra-timeout-missing-usage"])
    (attr,) = by_check(r, "ATTR_EXPERIMENT_FIDELITY")
    assert "REQUIRED_TASK_API_KEY" in attr.message and attr.severity == "blocker"
    assert r.skills["task_skills_loading"] == 1 and r.skills["skills"] == ["api-client"]
    assert "VERIFIER_ORDER" not in checks(r)  # the verifier never ran


def test_missing_llm_trajectory_is_catalog_unknown_not_a_crash(
    evals: dict[str, TrialData],
) -> None:
    r = audit(evals["missing-llm-trajectory"])
    assert checks(r) == {"SKILL_CATALOG_UNKNOWN"}
    assert r.skills["catalog_status"] == "unknown" and r.skills["task_skills_loading"] is None


def test_no_hacking_on_the_other_eval_fixtures(evals: dict[str, TrialData]) -> None:
    for name in ("clean-pass", "no-skill-leak", "infra-timeout-missing-usage"):
        assert not {c for c in checks(audit(evals[name])) if c.startswith("HACK_")}, name


def test_writer_fixtures_and_harbor_corpus_never_crash(fixtures_dir: Path) -> None:
    writer = _trials(fixtures_dir / "benchflow-writer" / "jobs")
    tasks = fixtures_dir / "benchflow-writer" / "tasks"
    for rel, t in writer.items():
        r = audit(t, tasks)
        if t.identity.harness != "oracle":
            assert r.skills["expected_task_skills"] == ["demo-skill"], rel
            assert "SKILL_NOT_LOADED" in checks(r), rel  # "You are an agent.": no catalog
    # The Harbor corpus is audited from its agent logs: the citation checker's web searches
    # are the only agent-behaviour findings (3d-scan-calc's load_skill and environment/skills
    # writes are the self-generated skills it was told to write: no leak; harbor tests in
    # test_harbor_logs.py).
    expected = {"citation-check__oXwDHn5": {"HACK_ONLINE_LOOKUP"}}
    for rel, t in _trials(fixtures_dir / "harbor-real").items():
        r = audit(t)
        behaviour = {c for c in checks(r) if c.startswith(("HACK_", "NOSKILL_", "VERIFIER_"))}
        assert behaviour == expected.get(rel.rsplit("/", 1)[-1], set()), rel


# --------------------------------------------------------------------------- sample data


@pytest.fixture(scope="module")
def sample() -> tuple[dict[str, TrialData], dict[str, dict]]:
    if not (SAMPLE / "sample-manifest.json").is_file():
        pytest.skip("sample data not generated")
    manifest = json.loads((SAMPLE / "sample-manifest.json").read_text())
    plan = {f"{m['job']}/{m['rollout']}": m for m in manifest["trials"]}
    return _trials(SAMPLE / "jobs"), plan


def test_sample_with_skill_trials_load_their_task_skills(sample) -> None:
    trials, plan = sample
    seen = 0
    for rel, t in trials.items():
        m = plan[rel]
        if m["skill_mode"] != "with-skill" or not t.llm.first_request:
            continue
        r = audit(t, SAMPLE / "tasks")
        assert r.skills["task_skills_loading"] == 1, (rel, r.skills)
        assert r.skills["expected_source"] == "tasks_dir"
        assert "SKILL_NOT_LOADED" not in checks(r)
        seen += 1
    assert seen >= 10


def test_sample_no_skill_trials_are_clean(sample) -> None:
    trials, plan = sample
    for rel, t in trials.items():
        if plan[rel]["skill_mode"] != "no-skill" or plan[rel]["harness"] == "oracle":
            continue
        r = audit(t, SAMPLE / "tasks")
        assert not {c for c in checks(r) if c.startswith("NOSKILL_")}, (rel, r.findings)
        if t.llm.first_request:
            assert r.skills["task_skills_loading"] == 0
            assert r.skills["status"] == "not_loaded_without_skills"


def test_no_hack_or_isolation_finding_on_any_sample_trial(sample) -> None:
    trials, _ = sample
    for rel, t in trials.items():
        r = audit(t, SAMPLE / "tasks")
        bad = {c for c in checks(r) if c.startswith(("HACK_", "VERIFIER_", "PATH_"))}
        assert not bad, (rel, r.findings)
