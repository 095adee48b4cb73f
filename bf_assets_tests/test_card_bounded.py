"""The card's excluded-trials section stays bounded on any corpus: the exact counts, a
sample of each reason, and where every excluded trial is listed."""

from __future__ import annotations

import re

from bf_assets.dataset.decide import Decision
from bf_assets.publish.card import CARD_EXCLUDED_PER_REASON, CardFacts, render_card
from bf_assets.redact.clean import CleanStats

SLOT = ("task", "harness", "model", "with-skill", "docker")


def _excluded(n: int, reason: str, detail: str = "") -> list[Decision]:
    return [
        Decision(
            job="jobs/j",
            rollout=f"{reason.replace(' ', '-')}__{i:06d}",
            rel_path=f"jobs/j/{reason}__{i:06d}",
            slot=SLOT,
            outcome="fail",
            verdict="rejected",
            reason=reason,
            detail=detail,
        )
        for i in range(n)
    ]


def _card(excluded: list[Decision]) -> str:
    facts = CardFacts(
        pretty_name="t",
        license="other",
        verdict="publishable",
        configs={"rollouts": 1},
        rows=[
            {"task_id": "task", "harness": "h", "model": "m", "skill_mode": "x", "outcome": "pass"}
        ],
        excluded=excluded,
        stats=CleanStats(),
        jobs=["jobs/j"],
        source_refs=[],
    )
    return render_card(facts)


def test_many_exclusions_give_exact_counts_and_a_bounded_table() -> None:
    big = _excluded(3 * CARD_EXCLUDED_PER_REASON, "superseded") + _excluded(7, "rejected")
    card = _card(big)
    m = re.search(r"## Excluded trials \((\d+)\)", card)
    assert m is not None and int(m.group(1)) == len(big)
    assert "| superseded | 150 |" in card and "| rejected | 7 |" in card
    listed = re.findall(r"\| `?(superseded|rejected)__\d{6}`? \|", card)
    assert listed.count("superseded") == CARD_EXCLUDED_PER_REASON
    assert listed.count("rejected") == 7
    assert f"{CARD_EXCLUDED_PER_REASON + 7} of {len(big)} excluded trials are listed" in card
    assert "meta/manifest.json" in card
    assert f"{len(big) + 1} trial(s) reviewed: 1 exported, {len(big)} excluded" in card


def test_few_exclusions_are_all_listed_without_a_note() -> None:
    card = _card(_excluded(3, "rejected"))
    assert len(re.findall(r"rejected__\d{6}", card)) == 3
    assert "excluded trials are listed here" not in card


def test_a_listed_exclusion_is_cleaned() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    card = _card(_excluded(2, "rejected", detail=f"token {secret} in /home/alice/run"))
    assert secret not in card and "/home/alice" not in card
