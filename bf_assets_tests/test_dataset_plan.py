"""Experiment plan parsing: valid plans, normalisation, and clear errors for bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bf_assets.dataset.common import make_cell
from bf_assets.dataset.plan import Plan, PlanError, load_plan, parse_plan


def _slots(plan: Plan) -> int:
    """Trial slots the plan expects: the trials of every cell."""
    return sum(pc.trials for pc in plan.cells())


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
    assert _slots(plan) == 64
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


# --------------------------------------------------------------------------- limits

SAFE_LOAD_CASES = [
    PLAN_YAML,
    "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: 2026-11-03\ng: '2026-11-03'\nh: 0x1f\ni: 1_000\n",
    "at: 2026-11-03T10:00:00\nsha: 0123abcd\nn: 0123\ny: yes\noff: off\ninf: .inf\n",
    "base: &b {tasks: [t1, t2], harnesses: [codex]}\nm:\n  - <<: *b\n    harnesses: [claude]\n",
    "one: &x {a: 1, b: 2}\ntwo: &y {b: 3, c: 4}\nm: {<<: [*x, *y], d: 5}\n",
    's: |\n  line one\n  line two\nt: >\n  folded\n  text\nu: "tab\\there"\n',
    "- &e [a, b]\n- *e\n- {k: *e}\n- !!str 12\n- !!int '7'\n- !!binary aGk=\n",
    "dup: 1\ndup: 2\n? complex key\n: v\n'quoted: key': [\"x\", 'y']\n",
    "",
    "# only a comment\n",
    "--- \nname: p\n...\n",
]


@pytest.mark.parametrize("text", SAFE_LOAD_CASES)
def test_the_bounded_yaml_reader_reads_as_safe_load(text: str) -> None:
    """Plan and quarantine files are read event by event within limits; what they hold is
    exactly what ``yaml.safe_load`` made of them (anchors, merge keys, dates, tags)."""
    import yaml

    from bf_assets.dataset.inputlimits import DocumentLimits, parse_yaml

    limits = DocumentLimits(max_bytes=1 << 20, max_values=1000)
    assert parse_yaml(text, "f", PlanError, limits) == yaml.safe_load(text)


def _bomb(levels: int = 9, width: int = 10) -> str:
    """A billion laughs: ``width ** levels`` strings in a few hundred bytes, inside the
    plan's ``name`` (the first value the plan's checks quote in an error)."""
    lists = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lists.append(f"&l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "name: [" + ", ".join(lists) + "]\nmatrix: []\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (_bomb(), "more than 100,000 values, each alias counted as all it repeats"),
        ("name: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 32 levels"),
        ("name: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels"),
        ("".join(f"{'  ' * i}k:\n" for i in range(60)) + "  " * 60 + "v\n", "nested deeper"),
        ("name: &a [x, *a]\n", "refers to a collection that holds it"),
        ("name: *nowhere\n", "names no anchor"),
        ("name: p\n---\nname: q\n", "more than one YAML document"),
        ("name: !!python/object:os.system x\n", "tag:yaml.org,2002:python/object"),
        ("name: !!set {a, b}\n", "is not allowed here"),
        ("at: 2026-13-45\n", "cannot read the value"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_plan_past_a_limit_is_one_line_naming_it(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    with pytest.raises(PlanError) as info:
        load_plan(p)
    message = str(info.value)
    assert needle in message and message.startswith(f"{p}: ")
    assert "\n" not in message and len(message) < 400


def test_a_plan_file_past_the_size_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "plan.yaml"
    with open(p, "wb") as fh:  # 300 MB, sparse: refused by its size alone
        fh.truncate(300 * 1024 * 1024)
    with pytest.raises(PlanError, match=r"314,572,800 bytes, over the limit of 8,388,608 bytes"):
        load_plan(p)
    p.write_text(PLAN_YAML)
    monkeypatch.setenv("BF_INPUT_MAX_BYTES", "100")
    with pytest.raises(PlanError, match=r"over the limit of 100 bytes .*BF_INPUT_MAX_BYTES"):
        load_plan(p)
    monkeypatch.setenv("BF_INPUT_MAX_BYTES", "4096")
    assert _slots(load_plan(p)) == 64


def test_a_plan_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)  # opening it to read would wait for a writer
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(fifo)


def test_json_plans_have_the_same_limits(tmp_path: Path) -> None:
    p = tmp_path / "plan.json"
    p.write_text('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(PlanError, match="nested deeper than 32 levels"):
        load_plan(p)
    p.write_text(json.dumps({"name": [[[["x"]]]] * 30_000, "matrix": []}))
    with pytest.raises(PlanError, match="more than 100,000 values"):
        load_plan(p)


def _wide(n: int, trials: int = 1) -> dict[str, Any]:
    xs = [f"x{i}" for i in range(n)]
    return _plan(entry={"tasks": xs, "harnesses": xs, "models": xs, "trials": trials})


def test_the_matrix_is_sized_before_it_is_expanded() -> None:
    """400 x 400 x 400 is 64 million cells: refused from the list lengths alone (expanding
    it first would take minutes and gigabytes)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(PlanError) as info:
            parse_plan(_wide(400))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "plans up to 64,000,000 cells and 64,000,000 slots" in str(info.value)
    assert "over the limit of 500,000 slots (BF_PLAN_MAX_SLOTS raises it)" in str(info.value)
    assert peak < 20 * 1024 * 1024


def test_trials_per_cell_and_slots_limits_and_their_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(PlanError, match=r"matrix\[0\]\.trials: 1,000,000,000 trials per cell"):
        parse_plan(_plan(entry={"trials": 1_000_000_000}))
    assert _slots(parse_plan(_plan(entry={"trials": 1000}))) == 1000
    monkeypatch.setenv("BF_PLAN_MAX_TRIALS", "5000")
    assert _slots(parse_plan(_plan(entry={"trials": 5000}))) == 5000
    # the slots of every entry count: two entries of 300 slots pass 500 only together
    monkeypatch.setenv("BF_PLAN_MAX_SLOTS", "500")
    data = _plan(entry={"trials": 300})
    parse_plan(data)
    data["matrix"].append({**data["matrix"][0], "tasks": ["t2"]})
    with pytest.raises(PlanError, match="600 slots .* over the limit of 500 slots"):
        parse_plan(data)
    monkeypatch.setenv("BF_PLAN_MAX_SLOTS", "lots")
    with pytest.raises(PlanError, match="BF_PLAN_MAX_SLOTS='lots': must be a whole number"):
        parse_plan(_plan())


def test_an_error_quotes_a_long_value_in_short() -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(_plan(name=["x" * 10_000] * 10_000))
    assert len(str(info.value)) < 300
