"""One decision, one path: for several plans and quarantine files over the sample runs, the
trials in every published config, the report that ships with the release, the manifest, the
card and ``bf-assets review``'s summary all name the same exported trials, through the CLI
review and through the Dagster release; an unplanned trial is never exported."""

from __future__ import annotations

import glob
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bf_assets.cli.main import main
from bf_assets_tests.releasekit import isolated_release

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "runs"

Cell = tuple[str, str, str, str, str]


def _cell(t: dict[str, Any]) -> Cell:
    return (t["task_id"], t["harness"], t["model"], t["skill_mode"], t["sandbox"])


def _review(capsys: pytest.CaptureFixture[str], runs: Path, *extra: str) -> dict[str, Any]:
    code = main(["review", str(runs / "jobs"), "--tasks", str(runs / "tasks"), "--json", *extra])
    assert code in (0, 1)
    return json.loads(capsys.readouterr().out)


def _plan(path: Path, cells: list[Cell], *, trials: int = 1, required: bool = False) -> str:
    lines = ["name: pinned", "matrix:"]
    for task, harness, model, mode, sandbox in cells:
        lines += [
            f"  - tasks: [{task}]",
            f"    harnesses: [{harness}]",
            f'    models: ["{model}"]',
            f"    skill_modes: [{mode}]",
            f"    sandboxes: [{sandbox}]",
            f"    trials: {trials}",
            f"    required: {'true' if required else 'false'}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _model_cells(review: dict[str, Any]) -> list[Cell]:
    return sorted(
        {_cell(t) for t in review["trials"] if t["harness"] not in ("oracle", "nop", "noop")}
    )


def _exported_cell(review: dict[str, Any]) -> Cell:
    return next(_cell(t) for t in review["trials"] if t["exported"])


Scenario = Callable[[Path, dict[str, Any]], list[str]]


def no_plan(tmp: Path, base: dict[str, Any]) -> list[str]:
    return []


def half_planned(tmp: Path, base: dict[str, Any]) -> list[str]:
    """Only half the observed cells are planned: the rest are unplanned."""
    cells = _model_cells(base)
    return ["--plan", _plan(tmp / "plan.yaml", cells[::2])]


def required_missing(tmp: Path, base: dict[str, Any]) -> list[str]:
    """A required cell nobody ran: the release is blocked, the decision still holds."""
    cells = [
        *_model_cells(base),
        ("no-such-task", "codex-acp", "openai/gpt-x", "no-skill", "docker"),
    ]
    return ["--plan", _plan(tmp / "plan.yaml", cells, required=True)]


def two_trials_per_cell(tmp: Path, base: dict[str, Any]) -> list[str]:
    """``trials: 2``: retries that were superseded at one trial per cell now fill slots."""
    return ["--plan", _plan(tmp / "plan.yaml", _model_cells(base), trials=2)]


def quarantined(tmp: Path, base: dict[str, Any]) -> list[str]:
    """A person holds one trial the review would otherwise export."""
    t = next(t for t in base["trials"] if t["exported"])
    q = tmp / "quarantine.yaml"
    q.write_text(
        f"- trial: {t['path']}\n  action: quarantine\n  reason: checking a perfect score\n"
        "  by: reviewer\n  at: 2026-11-30\n",
        encoding="utf-8",
    )
    return ["--quarantine", str(q)]


SCENARIOS = [no_plan, half_planned, required_missing, two_trials_per_cell, quarantined]


def _bundle_rows(bundle: Path) -> dict[str, set[str]]:
    """rollout ids per config, and the (job, rollout) keys of the main config."""
    out: dict[str, set[str]] = {}
    for config in ("rollouts", "prime_sft", "trl_sft"):
        files = sorted(glob.glob(str(bundle / "data" / config / "*.parquet")))
        out[config] = {
            r["rollout_id"]
            for f in files
            for r in pq.read_table(f, columns=["rollout_id"]).to_pylist()
        }
    main_files = sorted(glob.glob(str(bundle / "data" / "rollouts" / "*.parquet")))
    out["keys"] = {
        f"{r['job']}|{r['rollout']}"
        for f in main_files
        for r in pq.read_table(f, columns=["job", "rollout"]).to_pylist()
    }
    return out


@pytest.mark.skipif(not (SAMPLE / "jobs").is_dir(), reason="sample runs not in the checkout")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_every_output_names_the_same_exported_trials(
    scenario: Scenario,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE, runs)
    base = _review(capsys, runs)
    extra = scenario(tmp_path, base)
    review = _review(capsys, runs, *extra)
    exported = {f"{t['job']}|{t['rollout']}" for t in review["trials"] if t["exported"]}
    assert len(exported) == review["summary"]["exported"]
    assert exported, "every scenario keeps something to export"

    out = tmp_path / "out"
    code = isolated_release(monkeypatch, tmp_path, runs / "jobs", runs / "tasks", out, *extra)
    printed = dict(
        line.split(":", 1) for line in capsys.readouterr().out.splitlines() if ":" in line
    )
    blocked = review["summary"]["release_verdict"] == "not_publishable"
    assert code == (3 if blocked else 0)
    report_md = Path((printed.get("review report") or printed["blocked attempt"]).strip())
    bundle = report_md.parent.parent  # the release (published) or the refused staged bundle
    assert (bundle == out) is not blocked

    rows = _bundle_rows(bundle)
    assert rows["keys"] == exported
    assert rows["prime_sft"] == rows["rollouts"] == rows["trl_sft"]
    report = json.loads((bundle / "report" / "review.json").read_text())
    assert {f"{t['job']}|{t['rollout']}" for t in report["trials"] if t["exported"]} == exported
    assert report["summary"]["exported"] == len(exported)
    manifest = json.loads((bundle / "meta" / "manifest.json").read_text())
    assert {f"{s['job']}|{s['rollout']}" for s in manifest["source_trials"]} == exported
    lines = (bundle / manifest["excluded_trials"]["path"]).read_text().splitlines()
    excluded = {f"{e['job']}|{e['rollout']}" for e in map(json.loads, lines)}
    assert manifest["excluded_trials"]["trials"] == len(lines) == len(excluded)
    everyone = {f"{t['job']}|{t['rollout']}" for t in review["trials"]}
    assert excluded == everyone - exported and not excluded & exported
    card = (bundle / "README.md").read_text()
    m = re.search(r"## Excluded trials \((\d+)\)", card)
    assert m is not None and int(m.group(1)) == len(excluded)
    assert manifest["release_verdict"] == report["release_verdict"]
    assert report["release_verdict"] == review["summary"]["release_verdict"]
    unplanned = {
        f"{t['job']}|{t['rollout']}" for t in review["trials"] if t["export_reason"] == "unplanned"
    }
    assert not unplanned & exported
    if scenario is half_planned:
        assert unplanned, "half the cells are unplanned"
