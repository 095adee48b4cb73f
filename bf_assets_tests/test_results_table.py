"""The clean results table: pass@k, pass rates and the skill lift with its bootstrap
interval, over every scored trial and over the accepted ones, from the review's decision."""

from __future__ import annotations

import base64
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest
from leakproof_corpus import Gen

from bf_assets.contract import Outcome
from bf_assets.dataset.assemble import assemble, report_markdown
from bf_assets.dataset.lift_svg import lift_svg
from bf_assets.dataset.reportmarkup import MarkdownValues, md_cell, md_text
from bf_assets.dataset.results import (
    ACCEPTED,
    SCORED,
    ResultTrial,
    bootstrap_lift,
    called_out,
    pass_at_k,
    results_markdown,
    results_table,
)
from bf_assets.publish.card import CardFacts, render_card
from bf_assets.redact.clean import Cleaner, CleanStats
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import make_review


def trial(
    mode: str,
    reward: float | None,
    *,
    task: str = "t1",
    harness: str = "codex-acp",
    model: str = "openai/gpt-5",
    exported: bool = True,
    healthy: bool = True,
) -> ResultTrial:
    return ResultTrial(task, harness, model, mode, reward, healthy, exported)


def arm(mode: str, passes: int, fails: int, **kw: object) -> list[ResultTrial]:
    return [trial(mode, 1.0, **kw) for _ in range(passes)] + [  # type: ignore[arg-type]
        trial(mode, 0.0, **kw)  # type: ignore[arg-type]
        for _ in range(fails)
    ]


# --------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),  # pass@1 is the pass rate
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (4, 0, 2, 0.0),
        (4, 3, 2, 1.0),  # fewer fails than k: every draw of k holds a pass
        (3, 1, 3, 1.0),  # k = n: any pass
    ],
)
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_rejects_k_beyond_the_trials() -> None:
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_a_cell_gives_pass_at_k_where_it_has_k_trials_and_at_its_attempt_count() -> None:
    rows = arm("with-skill", 2, 2) + [trial("with-skill", 0.5)]
    [cell] = results_table(rows).cells
    a = cell.arms[SCORED]
    assert (a.n, a.passes, a.pass_rate) == (5, 2, 0.4)
    assert a.mean_reward == pytest.approx(2.5 / 5)
    assert set(a.pass_at) == {1, 3, 5}
    assert a.pass_at[3] == pytest.approx(0.9) and a.pass_at[5] == 1.0


# --------------------------------------------------------------------------- the lift


def test_the_lift_and_its_interval_hold_the_true_difference() -> None:
    rows = arm("with-skill", 42, 18) + arm("no-skill", 18, 42)  # 0.7 vs 0.3
    table = results_table(rows)
    [lf] = [x for x in table.lifts if x.population == SCORED and x.task == "t1"]
    assert lf.lift == pytest.approx(0.4)
    assert lf.low < 0.4 < lf.high and lf.low > 0  # the interval excludes "no effect"
    assert 0.2 < lf.high - lf.low < 0.45  # about ±1.96·sqrt(0.21/60·2)
    assert (lf.treated, lf.control) == (60, 60)


def test_the_interval_covers_the_true_difference_at_about_its_level() -> None:
    rng = np.random.default_rng(11)
    p_with, p_without, n = 0.6, 0.4, 40
    hits = 0
    reps = 200
    for rep in range(reps):
        w = Counter({1.0: int(rng.binomial(n, p_with))})
        w[0.0] = n - w[1.0]
        c = Counter({1.0: int(rng.binomial(n, p_without))})
        c[0.0] = n - c[1.0]
        _, lo, hi = bootstrap_lift([(w, c)], label=f"rep {rep}", resamples=1000)
        hits += lo <= p_with - p_without <= hi
    assert hits / reps >= 0.88


def test_the_overall_lift_is_the_mean_of_the_task_lifts() -> None:
    rows = (
        arm("with-skill", 3, 1, task="a")
        + arm("no-skill", 1, 3, task="a")  # +0.5
        + arm("with-skill", 1, 1, task="b")
        + arm("no-skill", 1, 1, task="b")  # 0
        + arm("with-skill", 1, 0, task="c")  # no no-skill arm: no lift
    )
    table = results_table(rows)
    [overall] = [x for x in table.lifts if x.task is None and x.population == SCORED]
    assert overall.lift == pytest.approx(0.25) and overall.tasks == 2
    assert overall.low <= 0.25 <= overall.high
    assert {x.task for x in table.lifts if x.population == SCORED} == {"a", "b", None}


def test_self_generated_skills_have_a_lift_of_their_own() -> None:
    rows = arm("self-generated", 1, 3) + arm("no-skill", 2, 2) + arm("with-skill", 4, 0)
    lifts = {(x.treatment, x.task): x.lift for x in results_table(rows).lifts}
    assert lifts[("self-generated", "t1")] == pytest.approx(-0.25)
    assert lifts[("with-skill", "t1")] == pytest.approx(0.5)


def test_same_seed_same_table_and_trial_order_does_not_matter() -> None:
    rows = arm("with-skill", 5, 3) + arm("no-skill", 2, 6) + arm("with-skill", 1, 2, task="t2")
    rows += arm("no-skill", 2, 1, task="t2")
    first = results_table(rows, seed=7).to_dict()
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert results_table(shuffled, seed=7).to_dict() == first
    assert results_table(rows, seed=8).to_dict() != first  # the seed moves the intervals


# --------------------------------------------------------------------------- two populations


def test_scored_and_accepted_side_by_side_and_the_change_is_called_out() -> None:
    # no-skill: two broken passes (scored, not accepted) and two accepted fails
    rows = arm("no-skill", 2, 0, exported=False, healthy=False) + arm("no-skill", 0, 2)
    rows += arm("with-skill", 1, 1)
    rows.append(trial("with-skill", None, exported=False, healthy=False))  # never scored
    table = results_table(rows)
    cells = {c.skill_mode: c for c in table.cells}
    ns = cells["no-skill"]
    assert (ns.trials, ns.healthy) == (4, 2)
    assert ns.arms[SCORED].pass_rate == 0.5 and ns.arms[ACCEPTED].pass_rate == 0.0
    assert ns.difference() == pytest.approx(-0.5)
    assert cells["with-skill"].trials == 3 and cells["with-skill"].arms[SCORED].n == 2
    [(s, a)] = [p for p in table.lift_pairs() if p[0] is not None and p[0].task == "t1"]
    assert s is not None and a is not None
    assert s.lift == pytest.approx(0.0) and a.lift == pytest.approx(0.5)
    notes = called_out(table)
    assert any("+0.00 over every scored trial but +0.50" in n for n in notes), notes
    md = results_markdown(table, md_cell, md_text)
    assert "Where the review changes the answer" in md and "+0.50" in md


# --------------------------------------------------------------------------- the dataset review


def _review(mode: str, reward: float | None, **kw: object) -> TrialReview:
    outcome = Outcome.PASS.value if reward == 1.0 else Outcome.FAIL.value
    if reward is None:
        outcome = Outcome.UNHEALTHY.value
    r = make_review(skill_mode=mode, outcome=outcome, **kw)  # type: ignore[arg-type]
    return r.replace(reward=reward)


def _hostile() -> tuple[str, str]:
    token = "sk_live_" + Gen(5).s(24)
    return "<img src=x onerror=alert(1)>task", f"evil/{token}"


def _dataset_reviews(task: str = "t1", model: str = "openai/gpt-5") -> list[TrialReview]:
    out = [_review("with-skill", 1.0, task=task, model=model, trial_index=i) for i in range(3)]
    out += [_review("no-skill", 0.0, task=task, model=model, trial_index=i) for i in range(2)]
    out.append(_review("no-skill", 1.0, task=task, model=model, checks=["GATE_ROWS_COUNT"]))
    out.append(_review("no-skill", 1.0, harness="oracle", task=task, model=model))  # a lane
    return out


def test_the_dataset_review_carries_the_table_in_its_summary_and_report() -> None:
    ds = assemble(_dataset_reviews())
    res = ds.summary()["results"]
    assert res["scored_trials"] == 6 and res["accepted_trials"] == 5  # no oracle, no reject
    lifts = {(x["population"], x["task"]): x for x in res["lifts"]}
    assert lifts[(SCORED, "t1")]["lift"] == pytest.approx(1 - 1 / 3)
    assert lifts[(ACCEPTED, "t1")]["lift"] == pytest.approx(1.0)
    md = report_markdown(ds, ["/runs/jobs"])
    order = [md.index(h) for h in ("## Coverage", "## Results", "## Evidence", "## Verdict")]
    assert order == sorted(order)
    assert "### Skill lift" in md and "### By cell" in md and "Skill lift" in _svgs(md)[-1]


RAW_TAG = re.compile(r"(?<!\\)<img")  # a tag no backslash escapes


def _svgs(md: str) -> list[str]:
    return [
        base64.b64decode(m).decode()
        for m in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", md)
    ]


def test_hostile_labels_are_cleaned_and_escaped_in_the_table_and_the_picture() -> None:
    task, model = _hostile()
    token = model.split("/", 1)[1]
    ds = assemble(_dataset_reviews(task=task, model=model))
    cleaner = Cleaner()
    table = ds.results()
    md = results_markdown(table, MarkdownValues(cleaner.text).cell, MarkdownValues().text)
    assert token not in md and "\\<img" in md and not RAW_TAG.search(md)
    svg = lift_svg(table, clean=cleaner.text)
    assert token not in svg and "<img" not in svg and "&lt;img" in svg
    # the published report: the section and its picture are cleaned too
    published = report_markdown(ds, ["/runs/jobs"], clean=cleaner.text)
    assert token not in published and not RAW_TAG.search(published)
    assert all(token not in s and "<img" not in s for s in _svgs(published))
    # the local report escapes (the picture too) but keeps the value
    local = report_markdown(ds, ["/runs/jobs"])
    assert not RAW_TAG.search(local) and all("<img" not in s for s in _svgs(local))


def test_the_card_shows_the_exported_trials_results_cleaned() -> None:
    task, model = _hostile()
    token = model.split("/", 1)[1]
    ds = assemble(_dataset_reviews(task=task, model=model))
    facts = CardFacts(
        pretty_name="x",
        license="other",
        verdict=ds.release_verdict,
        configs={"rollouts": 5},
        rows=[],
        excluded=ds.decision.excluded,
        stats=CleanStats(),
        jobs=[],
        source_refs=[],
        results=ds.results(),
    )
    card = render_card(facts)
    assert "## Results of the exported trials" in card
    section = card.split("## Results of the exported trials", 1)[1].split("\n## ", 1)[0]
    assert "+1.00" in section  # the accepted lift, not the scored one (+0.67)
    assert "+0.67" not in section
    assert token not in card and not RAW_TAG.search(card) and "\\<img" in section


def test_the_release_carries_the_results_table(tmp_path: Path) -> None:
    """The card, the report and its JSON of a built release hold the results table of the
    exported trials, and the bundle still verifies."""
    from trialkit import JOB, healthy_spec

    from bf_assets.publish.bundle import bundle_reviews
    from bf_assets.publish.verify import verify_bundle

    t = healthy_spec().write(tmp_path / "jobs", JOB)
    b = bundle_reviews([t.full_review()], tmp_path / "staging")
    assert verify_bundle(b.path).ok
    card = (b.path / "README.md").read_text()
    section = card.split("## Results of the exported trials", 1)[1].split("\n## ", 1)[0]
    assert "| demo-task | codex-acp | openai/gpt-x | with-skill | 1 | 100% |" in section
    assert "## Results" in (b.path / "report" / "review.md").read_text()
    summary = orjson.loads((b.path / "report" / "review.json").read_bytes())["summary"]
    assert summary["results"]["accepted_trials"] == 1 == summary["exported"]
