"""The release verdict of checks.md §3 from effective verdicts, coverage and the export."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bf_assets.dataset.common import trial_key
from bf_assets.dataset.coverage import compute_coverage
from bf_assets.dataset.decide import decide_exports
from bf_assets.dataset.plan import parse_plan
from bf_assets.dataset.quarantine import QuarantineEntry, apply_quarantine, effective_verdicts
from bf_assets.dataset.release import assess_release
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import make_review


def _plan(trials: int = 1, required: bool = True, floor: float | None = None) -> Any:
    data: dict[str, Any] = {
        "name": "p",
        "matrix": [
            {
                "tasks": ["t1", "t2"],
                "harnesses": ["codex-acp"],
                "models": ["openai/gpt-5"],
                "skill_modes": ["with-skill"],
                "sandboxes": ["docker"],
                "trials": trials,
                "required": required,
            }
        ],
    }
    if floor is not None:
        data["min_coverage"] = floor
    return parse_plan(data)


def _run(reviews: list[TrialReview], plan: Any, entries: Sequence[QuarantineEntry] = ()) -> Any:
    cov = compute_coverage(reviews, plan)
    applied = apply_quarantine(reviews, entries)
    verdicts = effective_verdicts(reviews, applied, cov.trial_findings)
    pairs = [(r, verdicts[trial_key(r)]) for r in reviews]
    decision = decide_exports([r.replace(verdict=v) for r, v in pairs], cov)
    return assess_release(decision, cov), pairs, cov, decision.exported_keys()


def test_clean_release_is_publishable() -> None:
    rs = [make_review("t1"), make_review("t2")]
    a, pairs, cov, export = _run(rs, _plan())
    assert a.verdict == "publishable" and a.reasons == []
    assert len(export) == 2


def test_required_slot_missing_is_not_publishable() -> None:
    a, *_ = _run([make_review("t1")], _plan())
    assert a.verdict == "not_publishable"
    assert [r.kind for r in a.decisive()] == ["required_slot_missing"]


def test_required_slot_unhealthy_is_not_publishable() -> None:
    rs = [make_review("t1"), make_review("t2", outcome="unhealthy", checks=["GATE_LLM_MISSING"])]
    a, *_ = _run(rs, _plan())
    assert a.verdict == "not_publishable"
    assert "required_slot_unhealthy" in a.counts()


def test_optional_gap_gives_with_quarantines() -> None:
    a, *_ = _run([make_review("t1")], _plan(required=False))
    assert a.verdict == "publishable_with_quarantines"
    assert a.counts() == {"optional_slot_missing": 1}


def test_below_floor_is_not_publishable() -> None:
    a, *_ = _run([make_review("t1")], _plan(required=False, floor=0.9))
    assert a.verdict == "not_publishable"
    assert "below_floor" in a.counts()


def test_nothing_to_export_is_not_publishable() -> None:
    rs = [make_review("t1", training_ready=False), make_review("t2", training_ready=False)]
    a, _, _, export = _run(rs, _plan())
    assert export == []
    assert a.verdict == "not_publishable" and "nothing_to_export" in a.counts()
    [reason] = [r for r in a.reasons if r.kind == "nothing_to_export"]
    assert reason.subject == "0 export rows"  # trials there were: no hint of a wrong folder


def test_no_trials_at_all_names_the_run_roots() -> None:
    a, _, _, export = _run([], _plan(required=False))
    [reason] = [r for r in a.reasons if r.kind == "nothing_to_export"]
    assert a.verdict == "not_publishable" and export == []
    assert reason.subject.startswith("0 export rows: no trials were found under the run roots")


def test_superseded_quarantined_rejected_incomplete_give_with_quarantines() -> None:
    t1_new = make_review("t1", started_at="2026-06-02T00:00:00")
    t1_old = make_review("t1", started_at="2026-06-01T00:00:00")
    a, *_ = _run([t1_new, t1_old, make_review("t2")], _plan())
    assert a.verdict == "publishable_with_quarantines"
    assert a.counts() == {"superseded": 1}

    t2 = make_review("t2")
    t2_held = make_review("t2", started_at="2026-06-03T00:00:00", rollout="t2__held")
    entry = QuarantineEntry(f"{t2_held.ref.job}/t2__held", "quarantine", "look", "me", "2026-06-04")
    a, _, _, export = _run([make_review("t1"), t2_held, t2], _plan(), [entry])
    assert a.verdict == "publishable_with_quarantines"
    assert a.counts() == {"quarantined": 1, "superseded": 1}
    assert trial_key(t2_held) not in export  # it fills the slot but is held

    rejected = make_review("t2", rollout="t2__bad", checks=["HACK_SCORE_WRITE"])
    incomplete = make_review("t2", rollout="t2__inc", outcome="incomplete", started_at=None)
    a, *_ = _run([make_review("t1"), make_review("t2"), rejected, incomplete], _plan())
    assert a.verdict == "publishable_with_quarantines"
    assert a.counts()["rejected"] == 2  # incomplete trials are rejected by the gate too


def test_probe_lanes_never_count_as_excluded() -> None:
    rs = [
        make_review("t1"),
        make_review("t2"),
        make_review("t1", harness="oracle", model=None, outcome="oracle", training_ready=False),
    ]
    a, *_ = _run(rs, _plan())
    assert a.verdict == "publishable"


def test_trial_reasons_are_made_from_the_decision_in_order() -> None:
    """The reasons about excluded trials are not kept but made from the decision when read:
    the same reasons, in the same order (the fixed ones first, optional slots last), also
    after a pickle round trip of the decision they are made from."""
    import pickle

    from bf_assets.dataset.release import CLEAN, NOT, WITH_Q, ReleaseReason

    t1_new = make_review("t1", started_at="2026-06-02T00:00:00")
    t1_old = make_review("t1", started_at="2026-06-01T00:00:00", rollout="t1__old")
    bad = make_review("t1", rollout="t1__bad", checks=["HACK_SCORE_WRITE"])
    a, *_ = _run([t1_new, t1_old, bad], _plan(required=False))
    reasons = list(a.reasons)
    kinds = [r.kind for r in reasons]
    assert kinds == ["superseded", "rejected", "optional_slot_missing"]
    assert reasons[0] == ReleaseReason(WITH_Q, "superseded", f"{t1_old.ref.job_key}/t1__old")
    assert a.reasons == reasons and len(a.reasons) == 3 and a.reasons[1] == reasons[1]
    assert a.verdict == WITH_Q and a.decisive() == reasons
    assert a.counts() == {"optional_slot_missing": 1, "rejected": 1, "superseded": 1}
    back = pickle.loads(pickle.dumps(a))
    assert back.reasons == reasons and back.verdict == a.verdict
    # nothing excluded, nothing missing: no reasons at all
    clean, *_ = _run([make_review("t1"), make_review("t2")], _plan())
    assert clean.verdict == CLEAN and clean.reasons == [] and not clean.reasons
    # a blocking reason still decides over the trials' ones
    worse, *_ = _run([t1_new, t1_old], _plan())
    assert worse.verdict == NOT and [r.kind for r in worse.decisive()] == ["required_slot_missing"]


def test_a_slot_s_superseded_reason_is_made_once_for_all_its_attempts(monkeypatch: Any) -> None:
    """A large corpus supersedes nearly every trial: the decision makes each slot's text
    once (not one string a trial, some 30 MB at 100,000 trials) and gives it to each."""
    from bf_assets.dataset import decide as decide_mod

    attempts = [make_review("t1", started_at=f"2026-06-01T00:00:{i:02d}") for i in range(30)]
    attempts += [make_review("t2", started_at=f"2026-06-01T00:01:{i:02d}") for i in range(20)]
    cov = compute_coverage(attempts, _plan())
    made: list[str] = []

    def counted(row: Any) -> str:
        made.append(row.label())
        return real(row)

    real = decide_mod.superseded_reason
    monkeypatch.setattr(decide_mod, "superseded_reason", counted)
    decision = decide_exports(attempts, cov)
    assert sorted(made) == sorted({row.label() for row in cov.rows if row.superseded})
    superseded = [d for d in decision.decisions if d.reason == "superseded"]
    assert len(superseded) == 48 and len({d.detail for d in superseded}) == 2
    for d in superseded:
        row = next(r for r in cov.rows if d.key in r.superseded)
        assert d.detail == real(row)
