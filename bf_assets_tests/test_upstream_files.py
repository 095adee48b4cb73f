"""What Benchflow writes beside a rollout, read by the review: the sandbox's mounts
(``docker-compose-mounts.json``), the rubric reviewer's verdicts (``review_report.json``),
the judge's files (``evaluation_details.json``, ``llm_judge_score.txt``, ``answer.txt``) and
``agent_result.usage_details``; and every finding on a JSON document citing its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trialkit import errored_spec, healthy_spec, oracle_spec

from bf_assets.ingest.discovery import discover
from bf_assets.ingest.jsonpos import key_line
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview
from bf_assets.review.trial import review_uncached


def one(root: Path) -> TrialReview:
    (r,) = [review_uncached(ref, ReviewOptions()) for ref in discover([root]).trials]
    return r


def set_mode(t: Any, mode: str) -> None:
    for rel in ("result.json", "config.json"):
        doc = t.read_json(rel)
        doc["skill_mode"] = mode
        t.write_json(rel, doc)


def mounts(*volumes: Any) -> str:
    return json.dumps({"services": {"main": {"volumes": list(volumes)}}}, indent=2)


def by_check(r: TrialReview, check: str) -> list[Any]:
    return [f for f in r.findings if f.check == check]


# --------------------------------------------------------------------------- mounts


def test_a_skills_mount_in_a_no_skill_run_is_a_blocker_citing_its_line(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    set_mode(t, "no-skill")
    skills = {"type": "bind", "source": "/srv/tasks/demo/environment/skills", "target": "/root/.claude/skills", "read_only": True}  # fmt: skip
    data = {"type": "bind", "source": "/srv/tasks/demo/environment/data", "target": "/app/data"}
    t.write_text("docker-compose-mounts.json", mounts(data, skills))
    r = one(tmp_path)
    (f,) = by_check(r, "SANDBOX_MOUNT_SKILLS")
    assert f.severity == "blocker" and r.verdict == "rejected"
    assert f.file == "docker-compose-mounts.json"
    text = (t.path / "docker-compose-mounts.json").read_text().splitlines()
    assert '"source": "/srv/tasks/demo/environment/skills"' in text[f.line - 1]
    assert f.evidence and f.evidence.startswith("services.main.volumes[1] = ")
    assert not by_check(r, "SANDBOX_MOUNT_VERIFIER")


def test_a_skills_mount_in_a_with_skill_run_is_no_finding(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_text("docker-compose-mounts.json", mounts("/srv/skills:/root/.claude/skills:ro"))
    r = one(tmp_path)
    assert not by_check(r, "SANDBOX_MOUNT_SKILLS")


def test_tests_or_solutions_mounted_for_the_agent_are_a_blocker(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_text(
        "docker-compose-mounts.json",
        mounts("/host/verifier-logs:/logs/verifier", "/srv/tasks/demo/tests:/tests:ro"),
    )
    r = one(tmp_path)
    (f,) = by_check(r, "SANDBOX_MOUNT_VERIFIER")
    assert f.severity == "blocker" and f.line == 6  # the second volume's line
    assert "/tests" in f.message


def test_an_oracle_lane_may_mount_its_solution(tmp_path: Path) -> None:
    t = oracle_spec().write(tmp_path)
    t.write_text("docker-compose-mounts.json", mounts("/srv/tasks/demo/solution:/solution:ro"))
    r = one(tmp_path)
    assert r.outcome == "oracle" and not by_check(r, "SANDBOX_MOUNT_VERIFIER")


def test_a_self_generated_run_may_mount_its_own_skills_not_the_tasks(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    set_mode(t, "self-generated")
    own = "/srv/jobs/_self_gen/demo-1a2b3c4d/skills:/root/.claude/skills"
    t.write_text("docker-compose-mounts.json", mounts(own))
    assert not by_check(one(tmp_path), "SANDBOX_MOUNT_SKILLS")
    t.write_text("docker-compose-mounts.json", mounts("/srv/tasks/demo/environment/skills:/skills"))
    (f,) = by_check(one(tmp_path), "SANDBOX_MOUNT_SKILLS")
    assert "self-generated" in f.message


def test_an_unreadable_mounts_file_is_a_quarantine_not_an_exception(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_text("docker-compose-mounts.json", "{not json")
    r = one(tmp_path)
    (f,) = by_check(r, "UPSTREAM_FILE_INVALID")
    assert f.severity == "quarantine" and f.file == "docker-compose-mounts.json"


# --------------------------------------------------------------------------- review report


def review_report(rollout: str, checks: dict[str, Any], *, valid: bool = True) -> dict[str, Any]:
    return {
        "path": "/srv/jobs/x",
        "rubric": {"path": "<default>", "criteria": list(checks), "contracts": []},
        "reviewer": {"agent": "codex-acp", "model": "gpt-x", "environment": "docker"},
        "job_summary": None,
        "trials": [
            {
                "trial_name": "someone-else__1",
                "source_rollout": "/srv/jobs/x/someone-else__1",
                "review_valid": True,
                "checks": {"reward_hacking": {"outcome": "fail", "explanation": "not this one"}},
            },  # fmt: skip
            {
                "trial_name": rollout,
                "source_rollout": f"/srv/jobs/x/{rollout}",
                "review_valid": valid,
                "summary": "s",
                "checks": checks,
                "criterion_metadata": [{"name": "task_specification", "blocker": 1, "weight": 2}],
            },
        ],
    }


def test_a_reviewer_reward_hacking_verdict_quarantines_and_cites_the_report(
    tmp_path: Path,
) -> None:
    t = healthy_spec().write(tmp_path)
    checks = {
        "reward_hacking": {"outcome": "fail", "explanation": "wrote reward.txt directly"},
        "task_specification": {"outcome": "pass", "explanation": "fine"},
    }
    (t.path.parent / "review_report.json").write_text(
        json.dumps(review_report(t.path.name, checks), indent=2)
    )
    r = one(tmp_path)
    (f,) = by_check(r, "REVIEW_REWARD_HACKING")
    assert f.severity == "quarantine" and r.verdict in ("quarantined", "rejected")
    assert f.file == "../review_report.json"
    report = (t.path.parent / "review_report.json").read_bytes()
    assert f.line == key_line(report, "trials[1].checks.reward_hacking.outcome")
    assert '"outcome": "fail"' in report.decode().splitlines()[f.line - 1]
    assert f.evidence and "wrote reward.txt directly" in f.evidence


def test_a_failed_blocker_criterion_quarantines_an_invalid_review_counts_nothing(
    tmp_path: Path,
) -> None:
    t = healthy_spec().write(tmp_path)
    checks = {"task_specification": {"outcome": "fail", "explanation": "ambiguous"}}
    t.write_text("review_report.json", json.dumps(review_report(t.path.name, checks), indent=2))
    (f,) = by_check(one(tmp_path), "REVIEW_CRITERION_FAILED")
    assert f.severity == "quarantine" and f.file == "review_report.json" and f.line
    bad = review_report(t.path.name, {"reward_hacking": {"outcome": "fail", "explanation": "x"}}, valid=False)  # fmt: skip
    t.write_text("review_report.json", json.dumps(bad))
    r = one(tmp_path)
    assert not by_check(r, "REVIEW_REWARD_HACKING") and not by_check(r, "REVIEW_CRITERION_FAILED")


# --------------------------------------------------------------------------- story


def test_judge_files_and_usage_details_feed_the_story(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_json(
        "evaluation_details.json", {"score": 0.75, "n_passed": 3, "n_total": 4, "results": []}
    )
    t.write_text("llm_judge_score.txt", "0.1\n")  # the rubric's details win
    t.write_text("answer.txt", "42 apples\nsecond line\n")
    res = t.read_json("result.json")
    res["agent_result"]["usage_details"] = {"thought_tokens": 17}
    t.write_json("result.json", res)
    st = one(tmp_path).story
    assert (st.judge_score, st.judge_source) == (0.75, "evaluation_details.json")
    assert (st.judge_passed, st.judge_total) == (3, 4)
    assert st.answer_excerpt == "42 apples"
    assert st.tokens_thought == 17
    j = one(tmp_path).to_json()
    assert j["judge_score"] == 0.75 and j["answer_excerpt"] == "42 apples"


def test_a_legacy_judge_score_file_is_read_and_a_bad_one_is_a_finding(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_text("llm_judge_score.txt", "0.5\n")
    assert one(tmp_path).story.judge_score == 0.5
    t.write_text("llm_judge_score.txt", "great job\n")
    r = one(tmp_path)
    assert r.story.judge_score is None
    assert [f.file for f in by_check(r, "UPSTREAM_FILE_INVALID")] == ["llm_judge_score.txt"]


# --------------------------------------------------------------------------- lines


def test_every_finding_on_a_json_document_has_a_line(tmp_path: Path) -> None:
    t = errored_spec("sandbox setup failed: docker daemon", "sandbox_setup", reward=None).write(
        tmp_path
    )
    res = t.read_json("result.json")
    del res["agent_result"]
    t.write_json("result.json", res)
    r = one(tmp_path)
    on_json = [f for f in r.findings if (f.file or "").endswith(".json")]
    assert on_json and all(f.line for f in on_json), [f for f in on_json if not f.line]
    text = (t.path / "result.json").read_text().splitlines()
    (infra,) = by_check(r, "GATE_INFRA_ERROR")
    assert text[infra.line - 1].lstrip().startswith('"error"')
    (reward,) = by_check(r, "GATE_REWARD_MISSING")
    assert text[reward.line - 1].lstrip().startswith('"rewards"')
    assert reward.evidence and reward.evidence.startswith("rewards")


def test_every_finding_on_a_real_json_file_has_a_line(fixtures_dir: Path) -> None:
    opts = ReviewOptions()
    checked = 0
    for name in ("harbor-real", "benchflow-writer", "benchflow-evals"):
        for ref in discover([fixtures_dir / name]).trials:
            r = review_uncached(ref, opts)
            for f in r.findings:
                if not (f.file or "").endswith(".json"):
                    continue
                if not (Path(ref.path) / f.file).is_file():
                    continue  # a file the trial lacks (GATE_RESULT_MISSING) has no line
                checked += 1
                assert f.line, (ref.rel_path, f)
    assert checked >= 100


def test_key_line_finds_keys_in_nested_objects_arrays_and_tricky_strings() -> None:
    doc = {
        "a": 'x"}]{[',
        "rewards": {"reward": None, "x": [1, {"y": "a\\n"}]},
        "trials": [{"checks": {"reward_hacking": {"outcome": "fail"}}}],
    }
    data = json.dumps(doc, indent=2).encode()
    lines = data.decode().splitlines()

    def at(path: str) -> str:
        n = key_line(data, path)
        assert n is not None
        return lines[n - 1].strip()

    assert at("rewards.reward") == '"reward": null,'
    assert at("rewards.x[1].y").startswith('"y"')
    assert at("trials[0].checks.reward_hacking.outcome") == '"outcome": "fail"'
    assert at("rewards.absent") == '"rewards": {'  # the nearest present parent
    assert key_line(data, "rewards.absent", nearest=False) is None
    assert key_line(data, "absent") == 1
    assert key_line(b" " * (5 * 1024 * 1024) + data, "a") is None  # over the cap: not searched


def test_a_new_job_review_report_changes_the_trials_cache_digest(tmp_path: Path) -> None:
    from bf_assets.ingest.discovery import trial_fingerprint

    t = healthy_spec().write(tmp_path)
    (ref,) = discover([tmp_path]).trials
    before = trial_fingerprint(ref)
    checks = {"reward_hacking": {"outcome": "fail", "explanation": "x"}}
    (t.path.parent / "review_report.json").write_text(
        json.dumps(review_report(t.path.name, checks))
    )
    assert (
        trial_fingerprint(ref) != before
    )  # a cached review is not reused: the report is read anew
