"""The one export decision (``bf_assets.dataset.decide``): each trial exported, or excluded
with its reason, plan-aware, and the same decision whatever later views it."""

from __future__ import annotations

from typing import Any

import pytest

from bf_assets.curate.candidate import Candidate, rollout_digest
from bf_assets.dataset.assemble import assemble
from bf_assets.dataset.decide import (
    CURATION_ERROR,
    EXPORTED,
    NOT_READY,
    ORACLE,
    QUARANTINED,
    REJECTED,
    SUPERSEDED,
    UNPLANNED,
)
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import make_review


def _plan_file(tmp_path: Any, tasks: list[str], trials: int = 1, required: bool = False) -> str:
    p = tmp_path / "plan.yaml"
    p.write_text(
        "name: p\nmatrix:\n"
        f"  - tasks: [{', '.join(tasks)}]\n"
        "    harnesses: [codex-acp]\n    models: [openai/gpt-5]\n"
        "    skill_modes: [with-skill]\n    sandboxes: [docker]\n"
        f"    trials: {trials}\n    required: {'true' if required else 'false'}\n",
        encoding="utf-8",
    )
    return str(p)


def _reasons(reviews: list[TrialReview], **kw: Any) -> dict[str, str]:
    ds = assemble(reviews, **kw)
    return {d.rollout: d.reason for d in ds.decision.decisions}


def test_newest_healthy_attempt_is_exported_and_older_ones_superseded(tmp_path: Any) -> None:
    """A plan asking for one trial a cell keeps the newest healthy attempt."""
    old = make_review("t1", rollout="t1__a", started_at="2026-06-01T10:00:00")
    new = make_review("t1", rollout="t1__b", started_at="2026-06-02T09:00:00Z")
    got = _reasons([old, new], plan_path=_plan_file(tmp_path, ["t1"], trials=1))
    assert got == {"t1__a": SUPERSEDED, "t1__b": EXPORTED}


def test_without_a_plan_repeats_are_trials_all_exported() -> None:
    """Benchmarks run k attempts of a cell on purpose (pass@k): a 1.0 is never superseded by
    a newer 0.0."""
    rs = [
        make_review("t1", rollout="t1__a", started_at="2026-06-01T10:00:00"),
        make_review("t1", rollout="t1__b", started_at="2026-06-02T10:00:00", outcome="fail"),
        make_review("t1", rollout="t1__c", started_at="2026-06-03T10:00:00"),
    ]
    assert _reasons(rs) == {"t1__a": EXPORTED, "t1__b": EXPORTED, "t1__c": EXPORTED}


def test_an_infra_failed_attempt_followed_by_a_healthy_retry_is_superseded() -> None:
    broken = make_review(
        "t1", rollout="t1__a", started_at="2026-06-01T10:00:00", checks=["GATE_INFRA_ERROR"]
    )
    retry = make_review("t1", rollout="t1__b", started_at="2026-06-01T11:00:00")
    later = make_review(  # no healthy attempt after it: it stays a trial of its own
        "t1", rollout="t1__c", started_at="2026-06-02T10:00:00", checks=["GATE_INFRA_ERROR"]
    )
    got = _reasons([broken, retry, later])
    assert got == {"t1__a": REJECTED, "t1__b": EXPORTED, "t1__c": REJECTED}
    cov = assemble([broken, retry, later]).coverage
    assert cov.superseded == [(broken.ref.job_key, "t1__a")]
    assert [r.state for r in cov.rows] == ["healthy", "unhealthy"]


def test_a_newer_broken_attempt_never_hides_the_older_healthy_one() -> None:
    good = make_review("t1", rollout="t1__a", started_at="2026-06-01T10:00:00")
    broken = make_review(
        "t1", rollout="t1__b", started_at="2026-06-03T10:00:00", checks=["GATE_VERIFIER_ERROR"]
    )
    assert _reasons([good, broken]) == {"t1__a": EXPORTED, "t1__b": REJECTED}


def test_a_quarantined_latest_healthy_attempt_holds_its_slot(tmp_path: Any) -> None:
    """checks.md §1: where a plan asks for one trial, only the latest healthy attempt is
    exported; when that one is held for review, the older attempt is not exported in its
    place.  Without a plan both are trials of their own."""
    old = make_review("t1", rollout="t1__a", started_at="2026-06-01T10:00:00")
    held = make_review(
        "t1", rollout="t1__b", started_at="2026-06-02T10:00:00", checks=["HACK_SUSPECTED"]
    )
    got = _reasons([old, held], plan_path=_plan_file(tmp_path, ["t1"], trials=1))
    assert got["t1__b"] == QUARANTINED and got["t1__a"] == SUPERSEDED
    assert _reasons([old, held]) == {"t1__a": EXPORTED, "t1__b": QUARANTINED}


def test_unplanned_trials_are_never_exported(tmp_path: Any) -> None:
    planned = make_review("t1", rollout="t1__a")
    extra = make_review("t9", rollout="t9__a")
    ds = assemble([planned, extra], plan_path=_plan_file(tmp_path, ["t1"]))
    got = {d.rollout: d.reason for d in ds.decision.decisions}
    assert got == {"t1__a": EXPORTED, "t9__a": UNPLANNED}
    assert ds.summary()["exported"] == 1
    assert ds.exports == [(planned.ref.job_key, "t1__a")]
    assert ds.release_verdict == "publishable_with_quarantines"


def test_a_cell_with_two_trials_exports_its_two_newest_healthy_attempts(tmp_path: Any) -> None:
    rs = [
        make_review("t1", rollout=f"t1__{c}", started_at=f"2026-06-0{i + 1}T10:00:00")
        for i, c in enumerate("abc")
    ]
    got = _reasons(rs, plan_path=_plan_file(tmp_path, ["t1"], trials=2))
    assert got == {"t1__a": SUPERSEDED, "t1__b": EXPORTED, "t1__c": EXPORTED}


def test_not_training_ready_oracle_and_rejected_each_say_why() -> None:
    rs = [
        make_review("t1", rollout="t1__a", training_ready=False),
        make_review("t2", rollout="t2__o", harness="oracle", outcome="oracle"),
        make_review("t3", rollout="t3__x", checks=["GATE_ROWS_MISSING"]),
    ]
    ds = assemble(rs)
    by = {d.rollout: d for d in ds.decision.decisions}
    assert by["t1__a"].reason == NOT_READY
    assert by["t2__o"].reason == ORACLE
    assert by["t3__x"].reason == REJECTED and by["t3__x"].detail == "GATE_ROWS_MISSING"
    # probe lanes never count as held-out model data
    kinds = {r.kind for r in ds.assessment.reasons}
    assert "oracle" not in kinds and {"not_training_ready", "rejected"} <= kinds


def test_curation_outcomes_flow_back_into_the_decision_and_the_verdict() -> None:
    ds = assemble([make_review("t1", rollout="t1__a")])
    assert ds.release_verdict == "publishable"
    key = ds.exports[0]
    after = ds.with_curation({key: (CURATION_ERROR, "row 1: nested too deep")})
    assert after.exports == [] and after.decision[key].reason == CURATION_ERROR
    assert after.release_verdict == "not_publishable"  # nothing left to export
    assert ds.exports == [key]  # the original review is unchanged
    with pytest.raises(ValueError):
        ds.with_curation({key: (SUPERSEDED, "not a curation outcome")})


def test_rollout_id_is_a_digest_of_the_artifact_hashes() -> None:
    t = make_review("t1", rollout="t1__a")
    a = Candidate.from_review(t, files=[("results.jsonl", "aa"), ("result.json", "bb")])
    b = Candidate.from_review(t, files=[("result.json", "bb"), ("results.jsonl", "aa")])
    c = Candidate.from_review(t, files=[("result.json", "bb"), ("results.jsonl", "ab")])
    assert a.rollout_id == b.rollout_id != c.rollout_id
    assert a.rollout_id.startswith("sha256:")
    # a file that is not read by curation still counts in the digest
    d = Candidate.from_review(
        t, files=[("results.jsonl", "aa"), ("result.json", "bb"), ("agent/log.txt", "cc")]
    )
    assert d.rollout_id != a.rollout_id


def test_a_candidate_keeps_only_the_hashes_curation_reads() -> None:
    """A release holds a candidate per exported trial: the digest of the whole inventory
    and the hashes of the four files curation checks or records, not the inventory."""
    t = make_review("t1", rollout="t1__a")
    files = [
        ("results.jsonl", "r1"),
        ("trajectory/llm_trajectory.jsonl", "l1"),
        ("trajectory/acp_trajectory.jsonl", None),
        ("result.json", "bb"),
        ("agent/log.txt", "cc"),
    ]
    c = Candidate.from_review(t, files=files)
    assert c.file_sha("results.jsonl") == "r1"
    assert c.file_sha("trajectory/llm_trajectory.jsonl") == "l1"
    assert c.file_sha("trajectory/acp_trajectory.jsonl") is None
    assert c.file_sha("result.json") == "bb" and c.file_sha("agent/log.txt") is None
    assert set(c.file_shas) == {
        "results.jsonl",
        "result.json",
        "trajectory/llm_trajectory.jsonl",
        "trajectory/acp_trajectory.jsonl",
    }
    assert c.rollout_id == rollout_digest(files) == rollout_digest(files[::-1])
    assert c.rollout_id != rollout_digest(files[:-1])


def test_a_decision_is_found_by_its_trial_key() -> None:
    """``get`` / ``[]`` find every trial's decision, the last one when two trials share a
    key (as a dictionary of them would), nothing for an unknown key; also after a pickle
    round trip (the index is rebuilt in the loading process)."""
    import pickle

    from bf_assets.dataset.decide import Decision, ExportDecision

    def one(job: str, rollout: str, reason: str) -> Decision:
        return Decision(job, rollout, f"{job}/{rollout}", (None,) * 6, "pass", "v", reason)

    ds = [one(f"j{i % 7}", f"r{i}", "exported") for i in range(300)]
    ds.append(one("j0", "r0", "superseded"))  # the same key again, later
    dec = ExportDecision(ds)
    for back in (dec, pickle.loads(pickle.dumps(dec))):
        assert all(back[d.key] == d for d in ds[1:300])
        assert back.get(("j0", "r0")) == ds[-1] and back[("j0", "r0")].reason == "superseded"
        assert back.get(("j0", "nope")) is None and back.get(("", "")) is None
        with pytest.raises(KeyError):
            back[("j9", "r1")]
    assert ExportDecision().get(("a", "b")) is None


def test_could_export_is_what_the_decision_asks_of_a_trial_alone(tmp_path: Any) -> None:
    """The partitions build rows for the trials some dataset review could export: every
    exported trial is one of them, whatever the plan, coverage or quarantine decide."""
    from bf_assets.dataset.decide import could_export

    rs = [
        make_review("t1", rollout="t1__a", started_at="2026-06-01T10:00:00"),
        make_review("t1", rollout="t1__b", started_at="2026-06-02T10:00:00"),
        make_review("t2", rollout="t2__h", checks=["HACK_SUSPECTED"]),
        make_review("t3", rollout="t3__n", training_ready=False),
        make_review("t4", rollout="t4__o", harness="oracle", outcome="oracle"),
        make_review("t5", rollout="t5__x", checks=["GATE_ROWS_MISSING"]),
        make_review("t6", rollout="t6__f", outcome="infra_error"),
    ]
    got = {r.ref.rollout: could_export(r) for r in rs}
    assert got == {
        "t1__a": True,  # superseded under a plan, exported without one
        "t1__b": True,
        "t2__h": True,  # quarantined: a manual release can export it
        "t3__n": False,
        "t4__o": False,
        "t5__x": False,
        "t6__f": False,
    }
    quarantine = tmp_path / "quarantine.yaml"
    quarantine.write_text(
        f"- trial: jobs/{rs[2].ref.rel_path}\n  action: release\n  reason: looked at it\n"
        "  by: someone\n  at: 2026-06-03\n",
        encoding="utf-8",
    )
    for kw in ({}, {"plan_path": _plan_file(tmp_path, ["t1", "t2"])}):
        ds = assemble(rs, **kw)
        exported = {d.rollout for d in ds.decision.exported}
        assert exported and all(got[r] for r in exported)
    released = assemble(rs, quarantine_path=str(quarantine))
    assert "t2__h" in {d.rollout for d in released.decision.exported}
