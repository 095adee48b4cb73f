"""Coverage: slot filling, COVERAGE_* and TASK_* findings, with and without a plan."""

from __future__ import annotations

from typing import Any

from bf_assets.dataset.common import trial_key
from bf_assets.dataset.coverage import Coverage, compute_coverage
from bf_assets.dataset.plan import Plan, parse_plan
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import make_review

SHA = "0123abcd" + "e" * 32
SRC = f"benchflow-ai/skillsbench@{SHA}"


def plan_of(
    tasks: list[str] | None = None,
    *,
    trials: int = 1,
    required: bool = True,
    source: dict[str, Any] | None = None,
    floor: float | None = None,
    **dims: list[str],
) -> Plan:
    entry = {
        "tasks": tasks or ["t1"],
        "harnesses": dims.get("harnesses", ["codex"]),
        "models": dims.get("models", ["openai/gpt-5"]),
        "skill_modes": dims.get("skill_modes", ["with_skills"]),
        "sandboxes": dims.get("sandboxes", ["docker"]),
        "trials": trials,
        "required": required,
    }
    data: dict[str, Any] = {"name": "demo", "matrix": [entry]}
    if source is not None:
        data["source"] = source
    if floor is not None:
        data["min_coverage"] = floor
    return parse_plan(data)


def R(task: str = "t1", **kw: Any) -> TrialReview:  # noqa: N802 - short builder name
    kw.setdefault("source_ref", SRC)
    return make_review(task, **kw)


def ids(cov: Coverage, review: TrialReview) -> set[str]:
    return {f.check for f in cov.trial_findings.get(trial_key(review), [])}


def dataset_ids(cov: Coverage) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in cov.findings:
        out.setdefault(f.check, set()).add(f.severity)
    return out


def test_complete_plan_is_quiet() -> None:
    a = R(started_at="2026-06-01T10:00:00")
    b = R(started_at="2026-06-01T11:00:00")
    cov = compute_coverage([a, b], plan_of(trials=2, source={"resolved_sha": SHA}, floor=1.0))
    assert [r.state for r in cov.rows] == ["healthy", "healthy"]
    assert cov.findings == [] and cov.trial_findings == {}
    assert cov.summary["expected"] == 2 and cov.summary["healthy"] == 2
    assert cov.coverage_ratio == 1.0 and not cov.below_floor
    assert set(cov.filled) == {trial_key(a), trial_key(b)}


def test_newest_healthy_attempts_fill_slots_newest_first() -> None:
    old = R(started_at="2026-06-01T08:00:00", rollout="t1__old")
    mid = R(started_at="2026-06-01T09:00:00Z", rollout="t1__mid")  # aware vs naive: both UTC
    new = R(started_at="2026-06-01 10:00:00", rollout="t1__new")
    broken = R(started_at="2026-06-02T10:00:00", rollout="t1__broken", outcome="unhealthy")
    cov = compute_coverage([old, broken, mid, new], plan_of(trials=2))
    assert [(r.trial_index, r.state, r.trial) for r in cov.rows] == [
        (1, "healthy", trial_key(new)),
        (2, "healthy", trial_key(mid)),
    ]
    assert set(cov.superseded) == {trial_key(old), trial_key(broken)}
    assert "COVERAGE_DUPLICATE" in ids(cov, old)
    assert "COVERAGE_DUPLICATE" in ids(cov, broken)
    assert ids(cov, new) == set() and ids(cov, mid) == set()
    assert all(f.severity == "info" for f in cov.trial_findings[trial_key(old)])
    assert cov.rows[0].duplicate and cov.rows[1].duplicate
    assert cov.summary["duplicate"] == 2 and cov.summary["superseded"] == 2


def test_tie_on_start_time_breaks_by_rollout() -> None:
    a = R(started_at="2026-06-01T10:00:00", rollout="t1__aaaa")
    b = R(started_at="2026-06-01T10:00:00", rollout="t1__bbbb")
    cov = compute_coverage([a, b], plan_of())
    assert cov.rows[0].trial == trial_key(b)
    assert cov.superseded == [trial_key(a)]


def test_missing_slot_blocker_when_required_else_warning() -> None:
    one = R()
    cov = compute_coverage([one], plan_of(trials=2))
    assert [r.state for r in cov.rows] == ["healthy", "missing"]
    assert dataset_ids(cov) == {"COVERAGE_MISSING": {"blocker"}}
    assert cov.blocking_rows() == [cov.rows[1]]
    opt = compute_coverage([one], plan_of(trials=2, required=False))
    assert dataset_ids(opt) == {"COVERAGE_MISSING": {"warning"}}
    assert opt.blocking_rows() == []


def test_unhealthy_slot_blocker_when_required_else_warning() -> None:
    bad = R(outcome="unhealthy", checks=["GATE_LLM_MISSING"])
    cov = compute_coverage([bad], plan_of())
    assert cov.rows[0].state == "unhealthy" and cov.rows[0].trial == trial_key(bad)
    assert dataset_ids(cov) == {"COVERAGE_UNHEALTHY": {"blocker"}}
    opt = compute_coverage([bad], plan_of(required=False))
    assert dataset_ids(opt) == {"COVERAGE_UNHEALTHY": {"warning"}}
    # two slots, one healthy and one unhealthy attempt: slot 2 is unhealthy, not missing
    good = R(started_at="2026-06-01T09:00:00")
    two = compute_coverage([bad, good], plan_of(trials=2))
    assert [r.state for r in two.rows] == ["healthy", "unhealthy"]
    assert "COVERAGE_MISSING" not in dataset_ids(two)


def test_stale_against_plan_sha_and_repo() -> None:
    fresh = R(
        rollout="t1__fresh", source_ref="https://github.com/benchflow-ai/skillsbench.git@0123abcd"
    )
    other_sha = R("t2", source_ref="benchflow-ai/skillsbench@ffff0000ffff")
    other_repo = R("t3", source_ref=f"someone/fork@{SHA}")
    plan = plan_of(
        ["t1", "t2", "t3"], source={"repo": "benchflow-ai/skillsbench", "resolved_sha": SHA}
    )
    cov = compute_coverage([fresh, other_sha, other_repo], plan)
    assert ids(cov, fresh) == set()  # same repo spelled as a URL; short sha prefix matches
    assert ids(cov, other_sha) == {"COVERAGE_STALE"}
    assert ids(cov, other_repo) == {"COVERAGE_STALE"}
    assert all(f.severity == "warning" for f in cov.trial_findings[trial_key(other_sha)])
    states = {r.cell.task: r.state for r in cov.rows}
    assert states == {"t1": "healthy", "t2": "stale", "t3": "stale"}
    assert cov.summary["stale"] == 2 and cov.summary["healthy"] == 1
    assert set(cov.filled) == {trial_key(fresh), trial_key(other_sha), trial_key(other_repo)}
    assert cov.coverage_ratio == 1 / 3


def test_stale_without_plan_source_compares_with_newest_attempt() -> None:
    new = R(started_at="2026-06-02T00:00:00", source_ref="repo@bbbbbbbb", task_digest="d2")
    old = R(started_at="2026-06-01T00:00:00", source_ref="repo@aaaaaaaa", task_digest="d2")
    older = R(started_at="2026-05-01T00:00:00", source_ref=None, task_digest="d1")
    same = R(started_at="2026-05-02T00:00:00", source_ref=None, task_digest=None)
    cov = compute_coverage([new, old, older, same], plan_of(trials=4))
    assert ids(cov, new) == set()
    assert "COVERAGE_STALE" in ids(cov, old)
    assert "COVERAGE_STALE" in ids(cov, older)  # task digest changed
    assert "COVERAGE_STALE" not in ids(cov, same)  # nothing recorded: cannot be judged
    no_plan = compute_coverage([new, old])
    assert "COVERAGE_STALE" in ids(no_plan, old)


def test_unplanned_trials_are_reported_not_filled() -> None:
    planned = R()
    stray = R(harness="gemini-cli", rollout="t1__stray")
    cov = compute_coverage([planned, stray], plan_of())
    un = [r for r in cov.rows if r.state == "unplanned"]
    assert [r.trial for r in un] == [trial_key(stray)]
    assert cov.unplanned == [trial_key(stray)]
    assert trial_key(stray) not in cov.filled
    assert cov.summary["expected"] == 1 and cov.summary["unplanned"] == 1
    assert cov.findings == []


def test_plan_aliases_match_trial_spellings() -> None:
    r = R(harness="codex-acp", skill_mode="with-skill", sandbox="docker")
    cov = compute_coverage(
        [r], plan_of(harnesses=["codex"], skill_modes=["with_skills"], sandboxes=["Docker"])
    )
    assert cov.rows[0].state == "healthy" and cov.unplanned == []


def test_without_plan_every_attempt_is_a_trial_none_required() -> None:
    """Without a plan the cells are the observed ones and their repeats are trials
    (``trial_index`` 1..k), never COVERAGE_DUPLICATE."""
    a = R("t1", started_at="2026-06-02T00:00:00")
    a_old = R("t1", started_at="2026-06-01T00:00:00")
    b = R("t2", outcome="unhealthy")
    oracle = R("t1", harness="oracle", outcome="oracle", model=None)
    cov = compute_coverage([a, a_old, b, oracle])
    assert cov.plan is None and cov.min_coverage is None and not cov.below_floor
    assert [(r.cell.task, r.trial_index, r.state, r.required) for r in cov.rows] == [
        ("t1", 1, "healthy", False),
        ("t1", 2, "healthy", False),
        ("t2", 1, "unhealthy", False),
    ]
    assert [r.trial for r in cov.rows[:2]] == [trial_key(a), trial_key(a_old)]
    assert dataset_ids(cov) == {"COVERAGE_UNHEALTHY": {"warning"}}
    assert cov.superseded == [] and not cov.trial_findings
    assert cov.summary["model_trials"] == 3 and cov.summary["probe_trials"] == 1
    assert cov.coverage_ratio == 2 / 3


def test_without_plan_only_an_infra_failure_a_healthy_retry_followed_is_superseded() -> None:
    broken = R("t1", started_at="2026-06-01T00:00:00", outcome="unhealthy", checks=["GATE_INFRA_ERROR"])  # fmt: skip
    killed = R("t1", started_at="2026-06-01T01:00:00", outcome="incomplete")
    retry = R("t1", started_at="2026-06-01T02:00:00")
    hacked = R("t1", started_at="2026-06-01T00:30:00", outcome="unhealthy", checks=["HACK_SCORE_WRITE"])  # fmt: skip
    cov = compute_coverage([broken, killed, retry, hacked])
    assert sorted(cov.superseded) == sorted([trial_key(broken), trial_key(killed)])
    assert [(r.state, r.trial) for r in cov.rows] == [
        ("healthy", trial_key(retry)),
        ("unhealthy", trial_key(hacked)),  # agent behaviour, not infrastructure: a trial
    ]
    assert ids(cov, broken) == {"COVERAGE_DUPLICATE"} and ids(cov, hacked) == set()


def test_floor_check() -> None:
    cov = compute_coverage([R()], plan_of(trials=2, required=False, floor=0.9))
    assert cov.coverage_ratio == 0.5 and cov.below_floor
    ok = compute_coverage([R()], plan_of(trials=2, required=False, floor=0.5))
    assert not ok.below_floor


def test_task_oracle_failed_fires_on_every_trial_of_the_task() -> None:
    t1a, t1b, t2 = R("t1"), R("t1", harness="claude"), R("t2")
    cov = compute_coverage([t1a, t1b, t2], oracle_rewards={"t1": [1.0, 0.0], "t2": [1.0]})
    assert ids(cov, t1a) == {"TASK_ORACLE_FAILED"} and ids(cov, t1b) == {"TASK_ORACLE_FAILED"}
    assert ids(cov, t2) == set()
    assert dataset_ids(cov) == {"TASK_ORACLE_FAILED": {"blocker"}}
    assert cov.oracle_tasks == {"t1", "t2"}
    missing_reward = compute_coverage([t2], oracle_rewards={"t2": [None]})
    assert ids(missing_reward, t2) == {"TASK_ORACLE_FAILED"}
    quiet = compute_coverage([t1a], oracle_rewards={"t1": [1.0]})
    assert quiet.findings == [] and quiet.trial_findings == {}


def test_task_noop_passed_from_lane_trials_and_rewards() -> None:
    model = R("t1")
    other = R("t2")
    nop_pass = R("t1", harness="nop", model=None, outcome="pass")
    nop_fail = R("t2", harness="null", model=None, outcome="fail")
    cov = compute_coverage([model, other, nop_pass, nop_fail])
    assert ids(cov, model) == {"TASK_NOOP_PASSED"}
    assert ids(cov, other) == set()
    assert trial_key(nop_pass) not in cov.trial_findings  # probes are not model data
    assert dataset_ids(cov) == {"TASK_NOOP_PASSED": {"blocker"}}
    assert cov.noop_tasks == {"t1", "t2"}
    assert {r.cell.task for r in cov.rows} == {"t1", "t2"}
    assert all(r.cell.harness == "codex-acp" for r in cov.rows)
    by_map = compute_coverage([other], noop_rewards={"t2": [0.0, 1.0]})
    assert ids(by_map, other) == {"TASK_NOOP_PASSED"}
    assert compute_coverage([other], noop_rewards={"t2": [0.0, None]}).findings == []
    errored = R("t2", harness="noop", model=None, outcome="unhealthy")
    probe_failed = compute_coverage([other, errored])
    assert probe_failed.findings == [] and probe_failed.noop_tasks == set()
    assert compute_coverage([other], oracle_rewards={"t2": []}).oracle_tasks == set()


def test_rows_serialise() -> None:
    cov = compute_coverage([R()], plan_of())
    d = cov.rows[0].to_dict()
    assert d["state"] == "healthy" and d["trial_index"] == 1 and d["required"] is True


def test_superseded_says_what_really_holds_the_slot() -> None:
    """COVERAGE_DUPLICATE never claims a healthy attempt where none is."""
    broken_old = make_review(
        "t1", rollout="t1__a", started_at="2026-06-01T10:00:00", outcome="unhealthy"
    )
    broken_new = make_review(
        "t1", rollout="t1__b", started_at="2026-06-02T10:00:00", outcome="unhealthy"
    )
    one_trial = plan_of(["t1", "t2"], required=False)  # a plan asking for one trial a cell
    cov = compute_coverage([broken_old, broken_new], one_trial)
    [dup] = cov.trial_findings[trial_key(broken_old)]
    assert dup.check == "COVERAGE_DUPLICATE"
    assert "no healthy attempt" in dup.message and "t1__b" in dup.message
    assert "healthy attempt t1" not in dup.message.replace("no healthy attempt", "")
    good_old = make_review("t2", rollout="t2__a", started_at="2026-06-01T10:00:00")
    broken_newer = make_review(
        "t2", rollout="t2__b", started_at="2026-06-03T10:00:00", outcome="unhealthy"
    )
    cov = compute_coverage([good_old, broken_newer], one_trial)
    [dup] = cov.trial_findings[trial_key(broken_newer)]
    assert "filled by the healthy attempt" in dup.message and "t2__a" in dup.message
