"""``bench/run_bench.py``: the quick smoke run works end to end, and issue 16's "Done when"
lines are judged on the figures a run measured (no timing figure is asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from benchkit import BENCH, REPO, run_bench


def _stats(rb: ModuleType, key: str, wall: float, cpu: float, rss: float) -> object:
    return rb.SideStats(key, key, 1, 1, wall, wall, rss, rss, cpu, cpu)


def test_done_when_targets_are_judged_on_the_run_figures() -> None:
    rb = run_bench()
    sizes = rb.FULL_SIZES
    figures = {
        "small": {
            "stats": {
                "ours": _stats(rb, "ours", 3.0, 2.5, 30.0),
                "theirs": _stats(rb, "theirs", 3.0, 3.0, 33.0),
                "floor": _stats(rb, "floor", 0.7, 0.6, 14.0),
            }
        },
        "heavy": {
            "stats": {
                "ours": _stats(rb, "ours", 0.5, 0.5, 36.0),
                "theirs": _stats(rb, "theirs", 4.0, 4.0, 800.0),
            }
        },
        "scale": {
            1000: {"rss_median_mb": 30.0},
            20000: {"rss_median_mb": 60.0},
        },
    }
    goals = {g.text: g for g in rb.done_when_goals(figures, sizes)}
    cpu = next(g for t, g in goals.items() if t.startswith("full review CPU"))
    assert cpu.verdict == "MET" and cpu.value == pytest.approx(2.5 / 3.0)
    heavy = next(g for t, g in goals.items() if t.startswith("heavy trial"))
    assert heavy.verdict == "MISS" and heavy.value == pytest.approx(0.125)  # over 0.10
    rss = next(g for t, g in goals.items() if t.startswith("review peak RSS at 20,000"))
    assert rss.verdict == "MISS" and rss.value == pytest.approx(2.0)
    release = [g for t, g in goals.items() if t.startswith("release")]
    # release / review at 2,000 and 20,000; release RSS at 20,000 and 100,000: not measured
    assert len(release) == 4
    assert all(g.verdict == "n/a" and "release-scale" in g.missing for g in release)


def _quick_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One ``--quick`` bench run of one round, its corpora and results under ``tmp_path``."""
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--quick",
            "--runs",
            "1",
            *args,
            "--work",
            str(tmp_path / "work"),
            "--results",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_quick_run_measures_cpu_and_the_floor(tmp_path: Path) -> None:
    done = _quick_run(tmp_path, "--scenario", "small")
    small = json.loads((tmp_path / "results" / "small.quick.json").read_text())
    by = {s["key"]: s for s in small["stats"]}
    assert set(by) == {"ours", "floor"}
    assert all(s["ok"] == 1 and s["cpu_median_s"] > 0 for s in by.values())
    floor_run = small["runs"]["floor"][0]
    # the floor read every file the corpus has
    assert floor_run["summary"]["files"] == small["corpus"]["files"]
    assert floor_run["summary"]["bytes"] == small["corpus"]["bytes"]
    goals = json.loads((tmp_path / "results" / "done-when.quick.json").read_text())["goals"]
    assert any(g["text"].startswith("full review CPU") for g in goals)
    assert 'issue 16 "Done when"' in done.stdout
    # the machine's parallel throughput is measured beside the figures it qualifies
    parallel = small["host"]["parallel"]
    assert parallel["cpus"] >= 1 and 0 < parallel["speedup"] <= parallel["cpus"] * 1.25
    assert parallel["cpu_growth"] > 0


def test_an_exportable_corpus_exports_every_training_ready_trial(tmp_path: Path) -> None:
    """The release-export scenario's corpus: its plan has a slot for every attempt of every
    cell, so no trial is superseded or unplanned and the release path exports at scale."""
    rb = run_bench()
    corpus = rb.CorpusFactory(tmp_path / "work", None).exportable(40)
    plan = corpus.root / rb.EXPORT_PLAN
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bf_assets.cli.main",
            "review",
            str(corpus.jobs),
            "--plan",
            str(plan),
            "--tasks",
            str(corpus.root / "tasks"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    summary = json.loads(done.stdout)["summary"]
    excluded = summary["excluded_by_reason"]
    assert summary["exported"] + sum(excluded.values()) == 40
    assert set(excluded) <= {"not training-ready"}  # none superseded, unplanned or rejected
    assert summary["exported"] >= 30
    assert corpus.stats["plan_cells"] == len(
        {
            (t["task"], t["harness"], t["model"], t["skill_mode"], t["sandbox"])
            for t in json.loads((corpus.root / "sample-manifest.json").read_text())["trials"]
        }
    )


def _run(job: str, start: float, end: float, **steps: float) -> dict[str, object]:
    return {"job": job, "status": "SUCCESS", "start": start, "end": end, "steps": steps}


def test_a_release_breakdown_is_computed_from_its_runs() -> None:
    ph = run_bench().bench_module("phases")
    runs = [
        _run("ingest_job", 100.0, 101.5, ingest_trials=1.4),
        _run("ingest_job", 101.6, 103.0, ingest_trials=1.3),
        _run("release_job", 103.1, 110.1, dataset_review=2.0, publish_gate=1.0, trial_pages=3.5),
        _run("ingest_job", 50.0, 51.0),  # an earlier release into the same instance
        {"job": "ingest_job", "status": "STARTED", "start": 103.2, "end": None, "steps": {}},
    ]
    got = ph.phases(runs, wall_s=12.0, since=99.0)
    assert got["runs"] == 3 and got["ingest_runs"] == 2
    assert got["ingest_s"] == pytest.approx(3.0)  # first start to last end, not the sum
    assert got["release_job_s"] == pytest.approx(7.0)
    assert list(got["steps_s"]) == ["dataset_review", "publish_gate", "trial_pages"]
    assert got["pages_wait_s"] == pytest.approx(3.5)
    assert got["outside_runs_s"] == pytest.approx(12.0 - 10.1)
    # without ``since`` the earlier release's run counts too
    assert ph.phases(runs, wall_s=70.0)["ingest_runs"] == 3
    assert ph.phases([{"job": "release_job", "start": None, "end": None}], 1.0) is None

    other = ph.phases(runs[:3], wall_s=14.0)
    med = ph.median_phases([got, None, other])
    assert med["of_runs"] == 2
    assert med["outside_runs_s"] == pytest.approx(((12.0 - 10.1) + (14.0 - 10.1)) / 2)
    line = ph.describe(med)
    assert "ingest 3.0 s in 2 run(s)" in line and "trial_pages 3.5 s" in line
    assert ph.median_phases([None]) is None
    assert "could not be read" in ph.describe(None)


def test_a_measured_release_says_where_its_time_went(tmp_path: Path) -> None:
    """The release-scale scenario reads each release's instance before it is removed."""
    done = _quick_run(tmp_path, "--scenario", "release-scale", "--release-sizes", "40")
    row = json.loads((tmp_path / "results" / "release-scale.quick.json").read_text())["sizes"][0]
    where = row["phases"]
    assert where is not None and where["of_runs"] == 1
    assert where["ingest_runs"] >= 1 and where["ingest_s"] > 0
    steps = list(where["steps_s"])
    assert steps[0] == "dataset_review" and "publish_gate" in steps and "trial_pages" in steps
    wall = row["runs"]["release"][0]["wall_s"]
    assert 0 < where["release_job_s"] < wall and where["outside_runs_s"] < wall
    assert "where the time went" in done.stdout
    floor = json.loads((tmp_path / "results" / "release-scale.quick.json").read_text())["floor"]
    assert floor["trials"] == 1 and floor["release_s"] > 0 and floor["review_s"] > 0
    assert [r["trials"] for r in floor["sizes"]] == [40]
    assert floor["run"]["runs"]["release"][0]["failure"] is None
    assert "the release's fixed cost: 1 trial(s) take" in done.stdout


def _point(trials: int, release_s: float, review_s: float) -> dict[str, object]:
    return {
        "trials": trials,
        "stats": [
            {"key": "release", "wall_median_s": release_s},
            {"key": "review", "wall_median_s": review_s},
        ],
    }


def test_the_release_floor_sets_the_fixed_cost_beside_each_budget() -> None:
    rb = run_bench()
    floor = rb.release_floor(
        _point(1, 2.0, 0.1), [_point(1001, 6.0, 1.1), _point(10001, 42.0, 10.1), _point(1, 2, 0)]
    )
    assert (floor["trials"], floor["release_s"], floor["review_s"]) == (1, 2.0, 0.1)
    small, large = floor["sizes"]  # a size no larger than the floor's has no marginal cost
    assert small["budget_s"] == pytest.approx(2.2)
    assert small["fixed_share_of_budget"] == pytest.approx(2.0 / 2.2)
    assert small["release_ms_per_trial"] == pytest.approx(4.0)
    assert small["review_ms_per_trial"] == pytest.approx(1.0)
    assert small["per_trial_ratio"] == pytest.approx(4.0)
    assert large["fixed_share_of_budget"] == pytest.approx(2.0 / 20.2)
    assert large["per_trial_ratio"] == pytest.approx(4.0)
    missing = _point(1, 2.0, 0.1)
    missing["stats"][0]["wall_median_s"] = None  # type: ignore[index]
    assert rb.release_floor(missing, [_point(1001, 6.0, 1.1)])["sizes"] == []
