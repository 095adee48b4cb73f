"""Every trial's story in its record, its table row, its page and the CLI's JSON: how the run
ended (``execution``), the recorded error (type and a cleaned message), the reward beside an
unhealthy outcome, usage, and the verifier's CTRF test results; and the skill mode as run
(``self-generated`` from the task path, the config and the prompt).

Built trials (``trialkit``, Harbor results as ``test_harbor_logs`` builds them) and the shared
real fixtures (skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from leakproof_corpus import Gen, vendor_secrets
from test_harbor_logs import harbor_result, write_trial
from trialkit import (
    errored_spec,
    healthy_spec,
    timeout_spec,
)

from bf_assets.corpus.cache import ReviewCache
from bf_assets.corpus.run import review_roots
from bf_assets.dataset.store import full_review
from bf_assets.ingest.discovery import discover
from bf_assets.pages.trial import PageInput, render_trial
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import SlimMaker, TrialReview, slim_tuple
from bf_assets.review.story import MESSAGE_MAX, NO_STORY, TrialStory
from bf_assets.review.tables import reviews_from_frame, validated_frames
from bf_assets.review.trial import review_uncached

HARBOR = "harbor-real/benchflow-ai__skillsbench-trajectories"
CTRF = {
    "results": {
        "tool": {"name": "pytest", "version": "8.4.1"},
        "summary": {"tests": 4, "passed": 2, "failed": 1, "skipped": 1, "pending": 0, "other": 0},
        "tests": [
            {"name": "test_outputs.py::test_file_exists", "status": "passed", "duration": 1},
            {"name": "test_outputs.py::test_values", "status": "failed", "duration": 2},
            {"name": "test_outputs.py::test_units", "status": "passed", "duration": 1},
            {"name": "test_outputs.py::test_optional", "status": "skipped", "duration": 0},
        ],
    }
}


def reviewed(root: Path) -> dict[str, TrialReview]:
    opts = ReviewOptions()
    return {ref.rollout: review_uncached(ref, opts) for ref in discover([root]).trials}


def one(root: Path) -> TrialReview:
    (r,) = reviewed(root).values()
    return r


# --------------------------------------------------------------------------- production


def test_a_finished_production_run_has_its_usage_and_tests(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_json("verifier/ctrf.json", CTRF)
    r = one(tmp_path)
    st = r.story
    assert (st.execution, st.exception_type, st.exception_message) == ("finished", None, None)
    assert (st.tokens_in, st.tokens_out, st.cost_usd) == (240, 25, 0.0012)
    assert (st.wall_time_sec, st.tool_calls, st.verifier_outcome) == (75.0, 1, "pass")
    assert (st.tests_total, st.tests_passed, st.tests_failed, st.tests_skipped) == (4, 2, 1, 1)
    assert st.failing_tests == ("test_outputs.py::test_values",)
    j = r.to_json()
    assert j["execution"] == "finished" and j["tests_failed"] == 1
    assert j["failing_tests"] == ["test_outputs.py::test_values"]
    assert "GATE_UNREADABLE" not in {f.check for f in r.findings}


def test_an_unreadable_ctrf_report_is_no_finding_and_no_counts(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    t.write_text("verifier/ctrf.json", "{not json")
    r = one(tmp_path)
    assert r.story.tests_total is None and r.story.failing_tests == ()
    assert r.verdict == one_verdict(tmp_path / "plain")


def one_verdict(root: Path) -> str:
    healthy_spec().write(root)
    return one(root).verdict


def test_a_wall_clock_timeout_is_an_agent_timeout_with_its_message(tmp_path: Path) -> None:
    timeout_spec().write(tmp_path)
    r = one(tmp_path)
    assert r.outcome == "normal_timeout"
    st = r.story
    assert (st.execution, st.exception_type) == ("agent_timeout", "timeout")
    assert st.exception_message == "Agent prompt exceeded wall-clock budget 900s"
    assert st.verifier_outcome == "fail" and r.reward == 0.0


@pytest.mark.parametrize(
    ("category", "extra", "execution"),
    [
        ("sandbox_setup", {}, "not_started"),
        ("install_failure", {}, "not_started"),
        (
            "infra_failure",
            {"sandbox_startup_info": {"reason": "sandbox_startup_failed"}},
            "not_started",
        ),  # fmt: skip
        ("idle_timeout", {"idle_timeout_info": {"reason": "idle_timeout"}}, "agent_timeout"),
        ("api_error", {}, "exception"),
        (None, {}, "exception"),
    ],
)
def test_production_errors_by_category(
    tmp_path: Path, category: str | None, extra: dict[str, Any], execution: str
) -> None:
    spec = errored_spec("the run broke\nTraceback: more detail", category, reward=None)
    spec.result.update(extra)
    spec.write(tmp_path)
    st = one(tmp_path).story
    assert (st.execution, st.exception_type) == (execution, category)
    assert st.exception_message == "the run broke"  # the first line
    assert st.verifier_outcome is None


@pytest.mark.parametrize(
    ("verifier_error", "category", "extra", "execution"),
    [
        ("verifier crashed: boom", "verifier_failure", {}, "exception"),
        ("verifier timed out after 600s", "verifier_timeout", {}, "verifier_timeout"),
        (
            "no reward",
            None,
            {"verifier_timeout_info": {"timeout_budget_sec": 60}},
            "verifier_timeout",
        ),  # fmt: skip
    ],
)
def test_verifier_errors(
    tmp_path: Path, verifier_error: str, category: str | None, extra: dict, execution: str
) -> None:
    spec = healthy_spec()
    spec.result.update(
        {"rewards": None, "verifier_error": verifier_error, "verifier_error_category": category}
    )
    spec.result.update(extra)
    spec.sync().not_ready("verifier_error", "verifier_error", verifier_error).write(tmp_path)
    st = one(tmp_path).story
    assert (st.execution, st.exception_type, st.exception_message) == (
        execution,
        category,
        verifier_error,
    )


def test_the_message_is_cleaned_and_clipped(tmp_path: Path) -> None:
    secret = vendor_secrets(Gen(23))[0].secret
    message = f"failed with {secret} in /home/alice/work/run.py " + "x" * 600
    errored_spec(message, "other").write(tmp_path)
    msg = one(tmp_path).story.exception_message
    assert msg is not None and len(msg) == MESSAGE_MAX and msg.endswith("…")
    assert secret not in msg and "/home/alice" not in msg
    assert msg.startswith("failed with [REDACTED:")


# --------------------------------------------------------------------------- Harbor (built)


def _harbor(tmp_path: Path, name: str, exc: dict | None, reward: float | None, **kw: Any) -> TrialReview:  # fmt: skip
    write_trial(tmp_path, f"no_skills/{name}", harbor_result(name, "terminus-2", reward=reward, exception=exc, **kw), {})  # fmt: skip
    return one(tmp_path)


def _exc(etype: str, message: str, frame: str) -> dict[str, Any]:
    tb = (
        "Traceback (most recent call last):\n"
        f'  File "/x/site-packages/harbor/trial/trial.py", line 359, in {frame}\n'
        f"{etype}: {message}\n"
    )
    return {
        "exception_type": etype,
        "exception_message": message,
        "exception_traceback": tb,
        "occurred_at": "2026-01-29T03:23:33.123456",
    }


def test_a_harbor_timeout_with_a_pass_stays_a_visible_pass(tmp_path: Path) -> None:
    exc = _exc("AgentTimeoutError", "Agent execution timed out after 2400.0 seconds", "_execute_agent")  # fmt: skip
    r = _harbor(tmp_path, "x__AAAAAAA", exc, 1.0)
    assert r.outcome == "unhealthy" and r.reward == 1.0
    st = r.story
    assert (st.execution, st.exception_type, st.verifier_outcome) == (
        "agent_timeout",
        "AgentTimeoutError",
        "pass",
    )
    assert st.exception_message == "Agent execution timed out after 2400.0 seconds"
    assert (st.tokens_in, st.tokens_out, st.wall_time_sec) == (32587, 6117, 840.0)


@pytest.mark.parametrize(
    ("etype", "message"),
    [
        ("ContextLengthExceededError", "prompt is too long: 212345 tokens > 200000 maximum"),
        ("TypeError", "'NoneType' object is not subscriptable"),
    ],
)
def test_an_exception_while_the_agent_ran_is_visible_beside_its_score(
    tmp_path: Path, etype: str, message: str
) -> None:
    r = _harbor(tmp_path, "y__BBBBBBB", _exc(etype, message, "_execute_agent"), 0.0)
    st = r.story
    assert (st.execution, st.exception_type, st.exception_message) == ("exception", etype, message)
    assert st.verifier_outcome == "fail" and r.to_json()["exception_type"] == etype


def test_a_harbor_setup_failure_never_started(tmp_path: Path) -> None:
    exc = _exc("RuntimeError", "Agent setup failed with exit code 137.", "_setup_agent")
    r = _harbor(tmp_path, "z__CCCCCCC", exc, None, agent_result=None, agent_execution=None)
    assert (r.story.execution, r.story.exception_type) == ("not_started", "RuntimeError")
    assert r.story.tokens_in is None and r.story.verifier_outcome is None


# --------------------------------------------------------------------------- every record


def test_the_story_survives_tables_cache_spill_and_store(tmp_path: Path) -> None:
    timeout_spec().write(tmp_path / "runs")
    t = healthy_spec(rollout_id="bbbb0000").write(tmp_path / "runs")
    t.write_json("verifier/ctrf.json", CTRF)
    reviews = sorted(reviewed(tmp_path / "runs").values(), key=lambda r: r.ref.rollout)
    validated, _ = validated_frames(reviews)
    assert str(validated["tests_failed"].dtype) == "Int64"
    assert str(validated["wall_time_sec"].dtype) == "float64"
    back = reviews_from_frame(validated)
    assert [b.story for b in back] == [r.story for r in reviews]
    cache = ReviewCache(tmp_path / "cache", "test")
    for r in reviews:
        fp = cache.key(r.ref)
        cache.put(fp, r)
        assert cache.get(r.ref, fp).story == r.story
    for r in reviews:
        slim = SlimMaker().make(r, r.findings)
        assert slim.story.execution == r.story.execution
        assert slim.story.verifier_outcome == r.story.verifier_outcome
        whole = full_review(slim, orjson.dumps(r.to_json()))
        assert whole.story == r.story
        again = SlimMaker().from_tuple(slim_tuple(r), r.ref)
        assert again.story.execution == r.story.execution
    assert {r.story.execution for r in reviews} == {"finished", "agent_timeout"}


def test_the_cli_json_carries_the_story(tmp_path: Path) -> None:
    timeout_spec().write(tmp_path)
    report = review_roots([tmp_path], ReviewOptions(workers=1), slim=True)
    try:
        (j,) = [orjson.loads(b) for b in report.trial_json()]
    finally:
        report.close()
    assert j["execution"] == "agent_timeout" and j["exception_type"] == "timeout"
    assert j["reward"] == 0.0 and j["verifier_outcome"] == "fail"


def test_the_trial_page_tells_the_story(tmp_path: Path) -> None:
    message = "Agent prompt exceeded wall-clock budget 900s"
    timeout_spec().write(tmp_path)
    r = one(tmp_path)
    html, _ = render_trial(PageInput(review=r))
    assert 'id="story"' in html and "agent_timeout" in html and message in html
    assert "a fail by the verifier" in html


def test_an_unreviewable_trial_has_no_story(tmp_path: Path) -> None:
    assert TrialStory.from_dict(None) is NO_STORY
    assert NO_STORY.to_dict()["execution"] is None


# --------------------------------------------------------------------------- skill modes


def test_benchflow_self_gen_is_self_generated(tmp_path: Path) -> None:
    spec = healthy_spec(proven=False)
    for doc in (spec.config, spec.result):
        doc.update({"skill_mode": "self-gen", "skill_source": "self_generated"})
    spec.sync().write(tmp_path)
    r = one(tmp_path)
    assert (
        r.identity.skill_mode == "self-generated" and r.to_json()["skill_mode"] == "self-generated"
    )
    assert r.identity.slot()[3] == "self-generated"


def test_a_generate_skills_first_prompt_makes_a_no_skill_run_self_generated(tmp_path: Path) -> None:
    spec = healthy_spec(proven=False)
    for doc in (spec.config, spec.result):
        doc.update({"skill_mode": "no-skill", "skill_source": "none", "include_task_skills": False})
    spec.prompts = ["Create hello.txt\n\n## Important: Generate Skills First\nWrite skills."]
    spec.sync().write(tmp_path)
    ident = one(tmp_path).identity
    assert ident.skill_mode == "self-generated"
    assert ident.sources["skill_mode"] == "prompts.json: 'Generate Skills First'"


def _skill_writer(tmp_path: Path, mode: str, skill: str) -> TrialReview:
    """A run that writes ``~/.codex/skills/<skill>/SKILL.md`` and reads it back."""
    spec = healthy_spec(proven=False)
    for doc in (spec.config, spec.result):
        doc.update({"skill_mode": mode, "include_task_skills": False})
    path = f"/home/agent/.codex/skills/{skill}/SKILL.md"
    assert spec.acp is not None
    spec.acp[2].update({"title": f"cat {path}"})
    spec.sync().write(tmp_path / "runs")
    tasks = tmp_path / "tasks" / "demo-task" / "environment" / "skills" / "demo-skill"
    tasks.mkdir(parents=True)
    (tasks / "SKILL.md").write_text("---\nname: demo-skill\n---\nbody\n")
    opts = ReviewOptions(tasks_dir=str(tmp_path / "tasks"))
    (ref,) = discover([tmp_path / "runs"]).trials
    return review_uncached(ref, opts)


def test_a_self_generated_run_reading_its_own_skill_is_no_leak(tmp_path: Path) -> None:
    r = _skill_writer(tmp_path, "self-gen", "my-own-notes")
    assert r.identity.skill_mode == "self-generated"
    assert "NOSKILL_LEAK" not in {f.check for f in r.findings}


def test_a_self_generated_run_reading_the_task_s_skill_is_a_leak(tmp_path: Path) -> None:
    r = _skill_writer(tmp_path, "self-gen", "demo-skill")
    leaks = [f for f in r.findings if f.check == "NOSKILL_LEAK"]
    assert leaks and leaks[0].message.startswith("self-generated trial:")
    assert "task skill name 'demo-skill'" in leaks[0].message


def test_a_no_skill_run_reading_any_skill_is_still_a_leak(tmp_path: Path) -> None:
    r = _skill_writer(tmp_path, "no-skill", "my-own-notes")
    assert "NOSKILL_LEAK" in {f.check for f in r.findings}


# --------------------------------------------------------------------------- real fixtures


@pytest.fixture(scope="module")
def real(fixtures_dir: Path) -> dict[str, TrialReview]:
    out: dict[str, TrialReview] = {}
    for sub in (HARBOR, "benchflow-writer/jobs"):
        out.update(reviewed(fixtures_dir / sub))
    return out


@pytest.mark.parametrize(
    ("rollout", "execution", "etype", "message", "reward", "scored"),
    [
        (
            "earthquake-phase-association__HhYd2Tr",
            "agent_timeout",
            "AgentTimeoutError",
            "Agent execution timed out after 2400.0 seconds",
            1.0,
            "pass",
        ),  # fmt: skip
        (
            "adaptive-cruise-control__AdGo4J8",
            "agent_timeout",
            "AgentTimeoutError",
            "Agent execution timed out after 3600.0 seconds",
            0.0,
            "fail",
        ),  # fmt: skip
        (
            "claude-code-claude-opus-4-5-skills-seismic-phase-picking-478ba4",
            "agent_timeout",
            "AgentTimeoutError",
            "Agent execution timed out after 600.0 seconds",
            0.0,
            "fail",
        ),  # fmt: skip
        (
            "dapt-intrusion-detection__V9bPmpB",
            "not_started",
            "RuntimeError",
            "Agent setup failed with exit code 137. See logs in jobs/2026-01-29__10-03-50/dapt-intrusion-detection__V9bPmpB/agent/setup",
            None,
            None,
        ),  # fmt: skip
        (
            "taxonomy-tree-merge__D2vgYbt",
            "not_started",
            "EnvironmentStartTimeoutError",
            "Environment start timed out after 400.0 seconds",
            None,
            None,
        ),  # fmt: skip
        (
            "pg-essay-to-audiobook__psYV7zM",
            "exception",
            "ValueError",
            "Environment variable 'OPENAI_API_KEY' not found in host environment",
            None,
            None,
        ),  # fmt: skip
        (
            "manufacturing-equipment-maintena__JkcRFYa",
            "exception",
            "RewardFileNotFoundError",
            None,
            None,
            None,
        ),  # fmt: skip
        ("scheduling-email-assistant__4exzDzN", "exception", None, None, None, None),
        ("court-form-filling__mLNkrVY", "finished", None, None, 0.0, "fail"),
        ("demo-task__aaaa1111", "finished", None, None, 1.0, "pass"),
        (
            "demo-task__bbbb2222",
            "exception",
            "verifier_failure",
            "verifier crashed: boom",
            None,
            None,
        ),  # fmt: skip
        (
            "demo-task__cccc3333",
            "agent_timeout",
            "timeout",
            "Agent prompt exceeded wall-clock budget 900s",
            0.0,
            "fail",
        ),  # fmt: skip
    ],
)
def test_real_trials_tell_how_they_ended(
    real: dict[str, TrialReview],
    rollout: str,
    execution: str,
    etype: str | None,
    message: str | None,
    reward: float | None,
    scored: str | None,
) -> None:
    r = real[rollout]
    st = r.story
    assert (st.execution, st.exception_type, r.reward, st.verifier_outcome) == (
        execution,
        etype,
        reward,
        scored,
    )
    if message is not None:
        assert st.exception_message == message
    elif execution == "exception":  # the message is shown, cleaned of host paths
        assert st.exception_message and "/home/" not in st.exception_message


def test_every_recorded_real_exception_is_visible(real: dict[str, TrialReview]) -> None:
    """Every Harbor ``exception_info`` of the real set is in its trial's story."""
    for r in real.values():
        try:
            raw = json.loads((Path(r.ref.path) / "result.json").read_text())
        except (OSError, ValueError):
            continue
        exc = raw.get("exception_info") if isinstance(raw, dict) else None
        if exc:
            assert r.story.exception_type == exc["exception_type"], r.ref.rollout
            assert r.story.execution != "finished", r.ref.rollout


def test_real_usage_and_tests(real: dict[str, TrialReview]) -> None:
    court = real["court-form-filling__mLNkrVY"].story
    assert (court.tests_total, court.tests_passed, court.tests_failed, court.tests_skipped) == (5, 2, 1, 2)  # fmt: skip
    assert court.failing_tests == ("test_outputs.py::TestEmptyFields::test_field_empty",)
    assert (court.tokens_in, court.tokens_out, court.tokens_cache) == (5240024, 0, 5178570)
    cite = real["citation-check__oXwDHn5"].story
    assert (cite.tokens_in, cite.tokens_out, cite.tokens_cache, cite.tool_calls) == (290428, 11809, 195455, 18)  # fmt: skip
    assert real["demo-task__aaaa1111"].story.cost_usd == 0.0012


def test_real_self_generated_runs_carry_their_mode(real: dict[str, TrialReview]) -> None:
    self_gen = {k for k, r in real.items() if r.identity.skill_mode == "self-generated"}
    assert self_gen == {
        "3d-scan-calc__UvQYGNk",
        "dapt-intrusion-detection__Y6Xtg2z",
        "invoice-fraud-detection__gxByehj",
        "civ6-adjacency-optimizer__8VoVn9p",
        "civ6-adjacency-optimizer__AFy9FrL",
    }
    for k in self_gen:
        assert "NOSKILL_LEAK" not in {f.check for f in real[k].findings}, k


def test_real_repeats_without_a_plan_are_not_duplicates(fixtures_dir: Path) -> None:
    """minimax's two with-skill adaptive-cruise-control runs (and the two copies of
    lab-unit-harmonization) are attempts of one cell: trials, not COVERAGE_DUPLICATE."""
    report = review_roots([fixtures_dir / HARBOR], ReviewOptions(workers=1), slim=True)
    try:
        trials = [orjson.loads(b) for b in report.trial_json()]
    finally:
        report.close()
    assert not [t["rollout"] for t in trials for f in t["findings"] if f["check"] == "COVERAGE_DUPLICATE"]  # fmt: skip
    acc = [t for t in trials if t["rollout"] in ("adaptive-cruise-control__RDMj95m", "adaptive-cruise-control__GsEeKKp")]  # fmt: skip
    assert len(acc) == 2 and len({(t["task_id"], t["harness"], t["model"], t["skill_mode"], t["sandbox"]) for t in acc}) == 1  # fmt: skip
