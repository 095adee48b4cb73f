"""The coverage picture (well-formed SVG) and the Markdown report, on built and real data."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bf_assets.corpus.run import review_roots
from bf_assets.dataset.common import trial_key
from bf_assets.dataset.coverage import Coverage, compute_coverage
from bf_assets.dataset.coverage_svg import COLORS, DUPLICATE_COLOR, coverage_svg, svg_data_uri
from bf_assets.dataset.decide import decide_exports
from bf_assets.dataset.parity import sandbox_parity
from bf_assets.dataset.plan import parse_plan
from bf_assets.dataset.quarantine import QuarantineEntry, apply_quarantine, effective_verdicts
from bf_assets.dataset.release import assess_release
from bf_assets.dataset.report import render_report
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import make_review

SVG = "{http://www.w3.org/2000/svg}"
# the headings a reader meets, each saying what its section answers
SECTIONS = [
    "## Blockers: what stops the release\n",
    "## Coverage: the planned runs found\n",
    "## Evidence: what was reviewed, and how to reproduce it\n",
    "## Residual risk: what this review cannot rule out\n",
    "## Verdict: may this dataset be published?\n",
]


def _mixed() -> tuple[list[TrialReview], Coverage]:
    plan = parse_plan(
        {
            "name": "demo <&> release",
            "source": {"resolved_sha": "aaaaaaaa"},
            "min_coverage": 0.5,
            "matrix": [
                {
                    "tasks": ["t1", "t2"],
                    "harnesses": ["codex"],
                    "models": ["openai/gpt-5", "anthropic/claude-sonnet-4-5-" + "x" * 60],
                    "skill_modes": ["with-skill", "no-skill"],
                    "sandboxes": ["docker"],
                    "trials": 2,
                    "required": True,
                }
            ],
        }
    )
    src = "r@aaaaaaaa"
    reviews = [
        make_review("t1", source_ref=src, started_at="2026-06-01T01:00:00"),
        make_review("t1", source_ref=src, started_at="2026-06-01T02:00:00"),
        make_review("t1", source_ref=src, started_at="2026-06-01T03:00:00"),
        make_review("t1", skill_mode="no-skill", source_ref="r@bbbbbbbb"),
        make_review("t2", outcome="unhealthy", checks=["GATE_LLM_MISSING"], source_ref=src),
        make_review("t2", harness="gemini-cli", source_ref=src),
        make_review("t2", harness="nop", model=None, outcome="pass"),
    ]
    return reviews, compute_coverage(reviews, plan, oracle_rewards={"t1": [1.0]})


def test_svg_is_well_formed_and_shows_every_state() -> None:
    _, cov = _mixed()
    svg = coverage_svg(cov)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert int(root.get("width", "0")) > 200 and int(root.get("height", "0")) > 100
    fills = {el.get("fill") for el in root.iter(f"{SVG}rect")}
    for state in ("healthy", "stale", "unhealthy", "missing"):
        assert COLORS[state] in fills, state
    assert any(el.get("fill") == DUPLICATE_COLOR for el in root.iter(f"{SVG}circle"))
    assert any("stroke-dasharray" in el.attrib for el in root.iter(f"{SVG}rect"))  # unplanned
    texts = " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))
    assert "t1  ·  with-skill" in texts and "demo <&> release" in texts
    assert "…" in texts  # a long model name is shortened, in the middle
    assert any("rotate(" in (el.get("transform") or "") for el in root.iter(f"{SVG}text"))
    for word in ("healthy", "stale", "unhealthy", "missing", "superseded", "unplanned"):
        assert word in texts


def test_svg_of_nothing_is_still_well_formed() -> None:
    cov = compute_coverage([])
    root = ET.fromstring(coverage_svg(cov))
    assert root.tag == f"{SVG}svg"


def test_data_uri_round_trips() -> None:
    _, cov = _mixed()
    svg = coverage_svg(cov)
    uri = svg_data_uri(svg)
    assert uri.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]).decode() == svg


def _report(
    reviews: list[TrialReview], cov: Coverage, entries: Sequence[QuarantineEntry] = ()
) -> Any:
    applied = apply_quarantine(reviews, entries)
    verdicts = effective_verdicts(reviews, applied, cov.trial_findings)
    pairs = [(r, verdicts[trial_key(r)]) for r in reviews]
    a = assess_release(decide_exports([r.replace(verdict=v) for r, v in pairs], cov), cov)
    md = render_report(
        reviews,
        cov,
        sandbox_parity(reviews),
        applied,
        a.verdict,
        ["/runs/jobs"],
        "bf-assets review /runs/jobs --plan plan.yaml",
        assessment=a,
        entries=list(entries),
    )
    return md, a


def test_report_sections_in_order_with_picture() -> None:
    reviews, cov = _mixed()
    entry = QuarantineEntry(
        "2026-06-01__00-00-00/nothing__here", "release", "typo", "me", "2026-06-02"
    )
    md, a = _report(reviews, cov, [entry])
    positions = [md.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert md.count("\n## ") == len(SECTIONS)  # nothing after the verdict section
    assert "data:image/svg+xml;base64," in md
    assert "COVERAGE_UNHEALTHY" in md and "TASK_NOOP_PASSED" in md
    assert "GATE_LLM_MISSING" in md
    assert "bf-assets review /runs/jobs --plan plan.yaml" in md
    assert "Sandbox network policy" in md and "Verifier process isolation" in md
    assert "No oracle lane for 1 task(s) (t2)" in md
    assert "nothing__here" in md  # an unmatched quarantine entry is listed
    verdict_part = md[md.index("## Verdict") :]
    assert f"**{a.verdict}**" in verdict_part
    assert a.verdict == "not_publishable"


def test_report_without_blockers() -> None:
    reviews = [make_review("t1"), make_review("t2")]
    cov = compute_coverage(reviews)
    md, a = _report(reviews, cov)
    assert "No blockers." in md and a.verdict == "publishable"
    assert "No experiment plan" in md


def test_real_harbor_adaptive_cruise_control_matrix(shared_dir: Path, tmp_path: Path) -> None:
    reviews = review_roots([shared_dir / "fixtures" / "harbor-real"]).trials
    acc = [r for r in reviews if r.identity.task_id == "adaptive-cruise-control"]
    assert len(acc) == 10
    assert len({(r.identity.harness, r.identity.model) for r in acc}) >= 4
    assert {r.identity.skill_mode for r in acc} == {"with-skill", "no-skill"}
    cov = compute_coverage(acc)
    assert cov.summary["model_trials"] == 10
    assert cov.summary["expected"] + cov.summary["superseded"] == 10
    svg = coverage_svg(cov)
    root = ET.fromstring(svg)
    labels = " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))
    assert "adaptive-cruise-control  ·  no-skill" in labels
    assert "adaptive-cruise-control  ·  with-skill" in labels
    (tmp_path / "acc.svg").write_text(svg)
    md, a = _report(reviews, compute_coverage(reviews))
    assert [md.index(s) for s in SECTIONS] == sorted(md.index(s) for s in SECTIONS)
    assert a.verdict == "not_publishable"  # Harbor trials never carry trajectories


def test_a_slot_names_its_first_superseded_attempts_and_counts_the_rest() -> None:
    from bf_assets.dataset.common import Cell
    from bf_assets.dataset.coverage import SUPERSEDED_SHOWN, SlotRow, superseded_text
    from bf_assets.dataset.coverage_svg import _tooltip

    keys = tuple((f"jobs/j{i:03d}", f"t__{i:03d}") for i in range(50))
    cell = Cell("t1", "codex-acp", "gpt-5", "no-skill", "docker")
    row = SlotRow(cell, 1, "healthy", keys[0], 51, False, True, superseded=keys)
    text = superseded_text(row)
    assert text.count("jobs/j") == SUPERSEDED_SHOWN and text.endswith(", … 40 more")
    assert "jobs/j009/t__009" in text and "jobs/j010" not in text
    assert "superseded: " + text in _tooltip(row)
    few = SlotRow(cell, 1, "healthy", keys[0], 3, False, True, superseded=keys[:2])
    assert superseded_text(few) == "jobs/j000/t__000, jobs/j001/t__001"


def test_a_plan_with_hundreds_of_trials_a_cell_folds_its_columns() -> None:
    """Past MAX_COLUMNS trial columns, a column is a (harness, model, sandbox): its square
    shows the share of each state, and the picture stays small (one column per trial slot
    made an 11.8 MB picture for a bench plan of several hundred trials a cell)."""
    from bf_assets.dataset.coverage_svg import MAX_COLUMNS

    n = MAX_COLUMNS + 80
    plan = parse_plan(
        {
            "name": "wide",
            "matrix": [
                {
                    "tasks": ["t1", "t2"],
                    "harnesses": ["codex"],
                    "models": ["openai/gpt-5"],
                    "skill_modes": ["with-skill"],
                    "sandboxes": ["docker", "daytona"],
                    "trials": n,
                    "required": True,
                }
            ],
        }
    )
    reviews = [
        make_review("t1", started_at=f"2026-06-01T{i // 60:02d}:{i % 60:02d}:00")
        for i in range(150)
    ] + [make_review("t2", sandbox="daytona", outcome="unhealthy", checks=["GATE_LLM_MISSING"])]
    cov = compute_coverage(reviews, plan)
    svg = coverage_svg(cov)
    root = ET.fromstring(svg)
    assert len(svg) < 40_000  # unfolded: 2 rows x 2n columns of squares
    texts = " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))
    assert "all trials" in texts and "#1" not in texts
    tips = [
        "".join(g.find(f"{SVG}title").itertext())
        for g in root.iter(f"{SVG}g")
        if g.find(f"{SVG}title") is not None
    ]
    assert len(tips) == 4  # a square per (task, sandbox): every slot is in one
    slots = 0
    for tip in tips:
        head = tip.splitlines()[1]
        total = int(head.split(" trial slots")[0])
        parts = dict(p.rsplit(" ", 1) for p in head.split(": ", 1)[1].split(", "))
        assert sum(int(v) for v in parts.values()) == total == n
        slots += total
    assert slots == cov.summary["expected"] == 4 * n
    t1_docker = next(
        t for t in tips if t.startswith("t1 · with-skill · codex-acp · openai/gpt-5 · docker")
    )
    assert f"healthy 150, missing {n - 150}" in t1_docker and "required: " in t1_docker
    assert any("unhealthy 1" in t for t in tips)
    fills = {el.get("fill") for el in root.iter(f"{SVG}rect")}
    assert {COLORS["healthy"], COLORS["missing"], COLORS["unhealthy"]} <= fills
