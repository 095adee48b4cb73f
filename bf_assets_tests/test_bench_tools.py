"""``bench/realistic_corpus.py`` and ``bench/guardrails.py`` run end to end at tiny sizes and
write the figures they promise (no timing figure is asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchkit import REPO, script_module

REALISTIC = REPO / "bench" / "realistic_corpus.py"
GUARDRAILS = REPO / "bench" / "guardrails.py"
STAT_FIELDS = {"wall_median_s", "cpu_median_s", "rss_median_mb", "ok", "runs"}
THROUGHPUT_FIELDS = {"mb_per_s", "trials_per_s", "wall_over_floor", "cpu_over_floor"}


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=REPO,
    )


def test_trial_sizes_are_seeded_and_inside_their_bounds() -> None:
    rc = script_module("realistic_corpus", REALISTIC)
    sizes = rc.trial_sizes(200, 3, 1.0, 50.0)
    assert sizes == rc.trial_sizes(200, 3, 1.0, 50.0)
    assert all(1_000_000 <= s <= 50_000_000 for s in sizes)
    # log-uniform: as many below the geometric middle (~7 MB) as above it, roughly
    below = sum(1 for s in sizes if s < 7_071_068)
    assert 60 < below < 140


def test_the_realistic_corpus_is_measured_against_the_read_floor(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = _run(
        REALISTIC,
        "--trials",
        "3",
        "--min-mb",
        "0.3",
        "--max-mb",
        "0.6",
        "--work",
        str(tmp_path / "work"),
        "--results",
        str(results),
        "--no-warm-up",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((results / "realistic.json").read_text())
    corpus = doc["corpus"]
    assert corpus["trials"] == 3
    assert 0.3 <= corpus["trial_mb_min"] <= corpus["trial_mb_max"] <= 0.6
    assert corpus["trajectory_share"] > 0.8  # the bytes are in the trajectories
    rows = {row["key"]: row for row in doc["stats"]}
    assert set(rows) == {"floor", "review", "release"}
    for row in rows.values():
        assert set(row) >= STAT_FIELDS | THROUGHPUT_FIELDS
        assert row["ok"] == row["runs"] == 1
    assert rows["floor"]["wall_over_floor"] == 1.0
    assert rows["review"]["exported"] == rows["release"]["exported"]
    # the floor read every byte of the corpus
    assert doc["runs"]["floor"][0]["summary"]["bytes"] == corpus["bytes"]


def test_guardrails_compare_two_checkouts_in_one_run(tmp_path: Path) -> None:
    """The repository as both the code before and the code after, on tiny corpora it builds;
    the big point is 14 trials against the review's 12."""
    results = tmp_path / "results"
    done = _run(
        GUARDRAILS,
        "--before",
        str(REPO),
        "--after",
        str(REPO),
        "--work",
        str(tmp_path / "work"),
        "--results",
        str(results),
        "--review-trials",
        "12",
        "--release-trials",
        "12",
        "--runs",
        "1",
        "--release-runs",
        "1",
        "--with-100k",
        "--big-trials",
        "14",
        "--no-warm-up",
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a ratio over its limit
    doc = json.loads((results / "guardrails.json").read_text())
    assert doc["before"]["path"] == doc["after"]["path"] == str(REPO)
    guards = {g["text"]: g for g in doc["guardrails"]}
    assert set(guards) == {
        "review 12: wall",
        "review 12: peak RSS",
        "release 12 exportable: wall",
        "release 12 exportable: peak RSS",
        "after: release 14 / 12: peak RSS",
    }
    for g in guards.values():
        assert g["verdict"] in ("PASS", "FAIL") and g["problem"] is None
        assert g["before"] > 0 and g["after"] > 0 and g["value"] > 0
    assert doc["passed"] == all(g["verdict"] == "PASS" for g in guards.values())
    for point in ("review", "release"):
        stats = doc["points"][point]["stats"]
        assert [s["key"] for s in stats] == ["before", "after"]
        assert all(set(s) >= STAT_FIELDS for s in stats)
        assert len(doc["points"][point]["pair_ratios"]) == 1
    exported = doc["points"]["release"]["exported"]
    assert exported["before"] == exported["after"] and exported["after"][0] > 0
    assert "PASS" in done.stdout or "FAIL" in done.stdout


def test_a_guardrail_passes_at_its_limit_and_fails_over_it() -> None:
    gr = script_module("guardrails", GUARDRAILS)
    assert gr.Guardrail("x", 1.0, 1.2, 1.2, 1.2, "s").verdict == "PASS"
    assert gr.Guardrail("x", 1.0, 1.3, 1.3, 1.2, "s").verdict == "FAIL"
    assert gr.Guardrail("x", None, None, None, 1.2, "s").verdict == "n/a"
    assert gr.Guardrail("x", 1.0, None, None, 1.5, "MB", "did not complete").verdict == "FAIL"
