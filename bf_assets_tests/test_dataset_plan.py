"""Experiment plan parsing: valid plans, normalisation, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bf_assets.dataset.common import make_cell
from bf_assets.dataset.plan import PlanError, load_plan, parse_plan

PLAN_YAML = """\
name: skillsbench-2026-11
source:
  repo: benchflow-ai/skillsbench
  resolved_sha: "0123abcd"
min_coverage: 0.9
matrix:
  - tasks: [citation-check, adaptive-cruise-control]
    harnesses: [codex, claude-agent-acp]
    models: [openai/gpt-5, anthropic/claude-sonnet-4-5]
    skill_modes: [with_skills, no-skill]
    sandboxes: [docker, Daytona]
    trials: 2
    required: true
"""


def _plan(**over: Any) -> dict[str, Any]:
    entry = {
        "tasks": ["t1"],
        "harnesses": ["codex"],
        "models": ["m"],
        "skill_modes": ["with-skill"],
        "sandboxes": ["docker"],
    }
    entry.update(over.pop("entry", {}))
    data: dict[str, Any] = {"name": "p", "matrix": [entry]}
    data.update(over)
    return data


def test_yaml_plan_loads_and_expands(tmp_path: Path) -> None:
    p = tmp_path / "plan.yaml"
    p.write_text(PLAN_YAML)
    plan = load_plan(p)
    assert plan.name == "skillsbench-2026-11"
    assert plan.source is not None
    assert (plan.source.repo, plan.source.resolved_sha) == ("benchflow-ai/skillsbench", "0123abcd")
    assert plan.min_coverage == 0.9
    cells = plan.cells()
    assert len(cells) == 2 * 2 * 2 * 2 * 2
    assert all(pc.trials == 2 and pc.required for pc in cells)
    assert plan.expected_slots() == 64
    harnesses = {pc.cell.harness for pc in cells}
    assert harnesses == {"codex-acp", "claude-agent-acp"}
    assert {pc.cell.skill_mode for pc in cells} == {"with-skill", "no-skill"}
    assert {pc.cell.sandbox for pc in cells} == {"docker", "daytona"}
    assert make_cell("citation-check", "codex", "openai/gpt-5", "with_skills", "docker") in {
        pc.cell for pc in cells
    }


def test_json_plan_loads(tmp_path: Path) -> None:
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(_plan(entry={"trials": 3})))
    plan = load_plan(p)
    assert plan.source is None and plan.min_coverage is None
    [pc] = plan.cells()
    assert pc.trials == 3 and not pc.required


def test_overlapping_entries_merge() -> None:
    data = _plan()
    data["matrix"].append({**data["matrix"][0], "trials": 2, "required": True})
    data["matrix"].append({**data["matrix"][0], "harnesses": ["codex-acp"], "trials": 1})
    [pc] = parse_plan(data).cells()
    assert pc.trials == 2 and pc.required


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (_plan(extra=1), "unknown key(s) extra"),
        (_plan(entry={"harness": ["x"]}), "unknown key(s) harness"),
        ({**_plan(), "matrix": {"tasks": ["t"]}}, "matrix: must be a list"),
        ({**_plan(), "matrix": []}, "matrix: must not be empty"),
        ({"matrix": _plan()["matrix"]}, "missing key name"),
        ({"name": "p"}, "missing key matrix"),
        (_plan(entry={"trials": 0}), "trials: must be >= 1"),
        (_plan(entry={"trials": -2}), "trials: must be >= 1"),
        (_plan(entry={"trials": "2"}), "trials: must be an integer"),
        (_plan(entry={"trials": True}), "trials: must be an integer"),
        (_plan(entry={"trials": 1.5}), "trials: must be an integer"),
        (_plan(entry={"required": "yes"}), "required: must be true or false"),
        (_plan(entry={"tasks": "t1"}), "tasks: must be a list"),
        (_plan(entry={"models": []}), "models: must not be empty"),
        (_plan(entry={"models": ["ok", 3]}), "models[1]: must be a non-empty string"),
        (_plan(entry={"sandboxes": [""]}), "sandboxes[0]: must be a non-empty string"),
        (_plan(min_coverage=1.5), "min_coverage: must be in 0..1"),
        (_plan(min_coverage="high"), "min_coverage: must be a number"),
        (_plan(source="repo@sha"), "source: must be a mapping"),
        (_plan(source={"repo": "r", "sha": "x"}), "unknown key(s) sha"),
        (_plan(source={"resolved_sha": 123456}), "quote a commit sha"),
        (["not", "a", "mapping"], "the plan must be a mapping"),
        ({**_plan(), "matrix": ["entry"]}, "matrix[0]: must be a mapping"),
    ],
)
def test_bad_plans_raise_clear_errors(data: Any, needle: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(data)
    assert needle in str(info.value)


def test_missing_dimension_is_named() -> None:
    data = _plan()
    del data["matrix"][0]["sandboxes"]
    with pytest.raises(PlanError, match=r"matrix\[0\]: missing key\(s\) sandboxes"):
        parse_plan(data)


def test_unparsable_and_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "plan.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(PlanError, match="not valid YAML"):
        load_plan(bad)
    bad_json = tmp_path / "plan.json"
    bad_json.write_text("{name: 1}")
    with pytest.raises(PlanError, match="not valid JSON"):
        load_plan(bad_json)
    with pytest.raises(PlanError, match="cannot read"):
        load_plan(tmp_path / "absent.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(PlanError, match="must be a mapping"):
        load_plan(empty)
