"""Which trials are exported: newest exportable attempt per slot, every other one with a reason."""

from __future__ import annotations

from typing import Any

from bf_assets.curate.select import (
    NOT_READY,
    ORACLE,
    QUARANTINED,
    REJECTED,
    SUPERSEDED,
    UNHEALTHY,
    Candidate,
    parse_started,
    select_exports,
)

SLOT = ("demo-task", "codex-acp", "openai/gpt-x", "with-skill", "daytona", None)


def cand(rollout: str, started: str | None = "2026-06-01 10:00:00", **kw: Any) -> Candidate:
    base: dict[str, Any] = {
        "job": "jobs/j1",
        "rollout": rollout,
        "rel_path": f"j1/{rollout}",
        "trial_dir": f"/nowhere/j1/{rollout}",
        "root": "/nowhere",
        "slot": SLOT,
        "started_at": started,
        "finished_at": None,
        "source_ref": None,
        "task_digest": None,
        "outcome": "pass",
        "healthy": True,
        "training_ready": True,
        "verdict": "publishable",
        "attribution": "n/a",
        "files": [("results.jsonl", rollout)],
    }
    base.update(kw)
    return Candidate(**base)


def reasons(excluded: list[Any]) -> dict[str, tuple[str, str]]:
    return {e.rollout: (e.reason, e.detail) for e in excluded}


def test_newest_healthy_attempt_wins_and_older_ones_are_superseded() -> None:
    old = cand("t__a", "2026-06-01 10:00:00")
    new = cand("t__b", "2026-06-02T09:00:00Z")
    selected, excluded = select_exports([new, old])
    assert [c.rollout for c in selected] == ["t__b"]
    assert reasons(excluded)["t__a"][0] == SUPERSEDED
    assert "jobs/j1/t__b" in reasons(excluded)["t__a"][1]


def test_health_is_filtered_before_ranking() -> None:
    """A newer broken attempt never hides the older healthy one."""
    good = cand("t__a", "2026-06-01 10:00:00")
    broken = cand(
        "t__b",
        "2026-06-03 10:00:00",
        outcome="unhealthy",
        healthy=False,
        verdict="rejected",
        findings=[{"check": "GATE_INFRA_ERROR", "severity": "blocker"}],
    )
    selected, excluded = select_exports([good, broken])
    assert [c.rollout for c in selected] == ["t__a"]
    assert reasons(excluded)["t__b"] == (REJECTED, "GATE_INFRA_ERROR")


def test_ties_break_on_rollout_name_and_unparsable_times_sort_oldest() -> None:
    a, b = cand("t__a", "2026-06-01 10:00:00"), cand("t__b", "2026-06-01 10:00:00")
    assert [c.rollout for c in select_exports([a, b])[0]] == ["t__b"]
    dated, undated = cand("t__z", None), cand("t__c", "2026-01-01 00:00:00")
    assert [c.rollout for c in select_exports([dated, undated])[0]] == ["t__c"]
    assert parse_started("not a date") < parse_started("1999-01-01 00:00:00")
    assert parse_started("2026-06-01T10:00:00+02:00") < parse_started("2026-06-01 09:00:00")


def test_every_excluded_trial_has_a_reason() -> None:
    other = ("other-task", *SLOT[1:])
    trials = [
        cand("o__1", outcome="oracle", slot=other),
        cand(
            "q__1",
            verdict="quarantined",
            slot=other,
            findings=[{"check": "ATTR_UNKNOWN", "severity": "quarantine"}],
        ),
        cand("q__2", verdict="quarantined", slot=other),
        cand("n__1", outcome="normal_timeout", training_ready=False, slot=other),
        cand("u__1", outcome="unhealthy", healthy=False, slot=other),
        cand("i__1", outcome="incomplete", healthy=False, verdict="rejected", slot=other),
    ]
    selected, excluded = select_exports(trials)
    assert selected == []
    got = reasons(excluded)
    assert got["o__1"][0] == ORACLE
    assert got["q__1"] == (QUARANTINED, "ATTR_UNKNOWN")
    assert got["q__2"] == (QUARANTINED, "manual quarantine")
    assert got["n__1"][0] == NOT_READY
    assert got["u__1"][0] == UNHEALTHY
    assert got["i__1"][0] == REJECTED
    assert len(excluded) == len(trials)


def test_slots_differ_by_every_slot_field() -> None:
    trials = [
        cand("a", slot=SLOT),
        cand("b", slot=(*SLOT[:3], "no-skill", *SLOT[4:])),
        cand("c", slot=(*SLOT[:4], "docker", None)),
        cand("d", slot=(*SLOT[:5], 1)),
    ]
    selected, excluded = select_exports(trials)
    assert sorted(c.rollout for c in selected) == ["a", "b", "c", "d"]
    assert excluded == []


def test_rollout_id_is_a_digest_of_the_artifact_hashes() -> None:
    a = cand("t__a", files=[("results.jsonl", "1" * 64), ("result.json", "2" * 64)])
    b = cand("t__b", files=[("result.json", "2" * 64), ("results.jsonl", "1" * 64)])
    c = cand("t__c", files=[("results.jsonl", "3" * 64), ("result.json", "2" * 64)])
    assert a.rollout_id == b.rollout_id != c.rollout_id
    assert a.rollout_id.startswith("sha256:") and len(a.rollout_id) == 71


def test_from_review_and_from_tables_agree(trial: Any) -> None:
    from bf_assets.review.tables import raw_frame, validated_frames

    review = trial.review()
    from_review = Candidate.from_review(review)
    validated, _ = validated_frames([review])
    raw = raw_frame([review.ref])
    row = validated.astype(object).where(validated.notna(), None).to_dict(orient="records")[0]
    raw_row = raw.astype(object).where(raw.notna(), None).to_dict(orient="records")[0]
    from_tables = Candidate.from_tables(row, raw_row, review.ref.path, review.ref.root)
    assert from_tables.slot == from_review.slot
    assert from_tables.rollout_id == from_review.rollout_id
    assert from_tables.exportable and from_review.exportable
