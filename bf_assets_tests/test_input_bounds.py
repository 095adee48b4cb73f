"""Input that could exhaust memory is refused: ``bf-assets review`` and ``release`` given a
plan or quarantine file past its limits end with one line naming the file and the limit,
exit 2, no traceback, in a child process whose peak memory stays small (and which could
not map more than a bounded address space had it tried)."""

from __future__ import annotations

from pathlib import Path

import pytest
from placekit import run_cli
from trialkit import build_trial

PEAK_MB = 150  # the command's own imports take about 25 MB
ADDRESS_SPACE_MB = 2048


def _bomb(levels: int = 9, width: int = 10) -> str:
    """``width ** levels`` strings (a billion) written in a few hundred bytes."""
    lists = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    lists += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(lists) + "]"


ENTRY = "  - tasks: [demo-task]\n    harnesses: [codex]\n    models: [m]\n    skill_modes: [with-skill]\n    sandboxes: [docker]\n"  # fmt: skip
XS = "[" + ", ".join(f"x{i}" for i in range(400)) + "]"
PLANS = {
    "a billion trials": (
        "name: p\nmatrix:\n" + ENTRY + "    trials: 1000000000\n",
        "matrix[0].trials: 1,000,000,000 trials per cell, over the limit of 1,000 "
        "(BF_PLAN_MAX_TRIALS raises it)",
    ),
    "a 400x400x400 matrix": (
        f"name: p\nmatrix:\n  - {{tasks: {XS}, harnesses: {XS}, models: {XS}, "
        "skill_modes: [with-skill], sandboxes: [docker]}\n",
        "plans up to 64,000,000 cells and 64,000,000 slots (cells x trials), over the limit "
        "of 500,000 slots (BF_PLAN_MAX_SLOTS raises it)",
    ),
    "YAML nested 100,000 deep": (
        "name: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "nested deeper than 32 levels",
    ),
    "a billion laughs": (
        f"name: {_bomb()}\nmatrix: []\n",
        "more than 100,000 values, each alias counted as all it repeats",
    ),
}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    build_trial(tmp_path / "jobs")
    return tmp_path / "jobs"


def _refused(ran: object, path: Path, needle: str) -> None:
    code, out, err, peak = (getattr(ran, k) for k in ("code", "stdout", "stderr", "peak_mb"))
    assert code == 2, err[-2000:]
    assert err.splitlines() == [err.strip()], err[-2000:]  # one line
    assert err.startswith(f"bf-assets: error: {path}: ") and needle in err, err
    assert "Traceback" not in err and out == ""
    assert peak < PEAK_MB, f"peak {peak:.0f} MB"


@pytest.mark.parametrize("case", sorted(PLANS))
def test_a_plan_past_its_limits_is_refused_by_review(tmp_path: Path, runs: Path, case: str) -> None:
    text, needle = PLANS[case]
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    ran = run_cli(
        ["review", str(runs), "--plan", str(plan)],
        tmp_path,
        address_space_mb=ADDRESS_SPACE_MB,
        timeout=300,
    )
    _refused(ran, plan, needle)


def test_a_huge_plan_file_is_not_read(tmp_path: Path, runs: Path) -> None:
    plan = tmp_path / "plan.yaml"
    with open(plan, "wb") as fh:
        fh.truncate(3 * 1024**3)  # 3 GiB (sparse): more than the child could even map
    ran = run_cli(
        ["review", str(runs), "--plan", str(plan)], tmp_path, address_space_mb=ADDRESS_SPACE_MB
    )
    _refused(ran, plan, "3,221,225,472 bytes, over the limit of 8,388,608 bytes")


def _quarantine(n: int) -> str:
    one = "- trial: jobs/J/t__{i}\n  action: quarantine\n  reason: r\n  by: me\n  at: 2026-01-01\n"
    return "".join(one.format(i=i) for i in range(n))


def test_a_200000_entry_quarantine_is_refused(tmp_path: Path, runs: Path) -> None:
    q = tmp_path / "quarantine.yaml"
    q.write_text(_quarantine(200_000))
    ran = run_cli(
        ["review", str(runs), "--quarantine", str(q)], tmp_path, address_space_mb=ADDRESS_SPACE_MB
    )
    _refused(ran, q, "over the limit of 8,388,608 bytes for a plan or quarantine file")
    # allowed that size, the reading stops at the entry past the entry limit
    ran = run_cli(
        ["review", str(runs), "--quarantine", str(q)],
        tmp_path,
        {"BF_INPUT_MAX_BYTES": str(64 * 1024 * 1024)},
        address_space_mb=ADDRESS_SPACE_MB,
    )
    _refused(ran, q, "more than 10,000 entries: over the limit (BF_QUARANTINE_MAX_ENTRIES")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000 + "\n", "nested deeper than 32 levels"),
        (f"- trial: {_bomb()}\n", "each alias counted as all it repeats"),
    ],
)
def test_a_quarantine_past_its_limits_is_refused_by_review(
    tmp_path: Path, runs: Path, text: str, needle: str
) -> None:
    q = tmp_path / "quarantine.yaml"
    q.write_text(text)
    ran = run_cli(
        ["review", str(runs), "--quarantine", str(q)], tmp_path, address_space_mb=ADDRESS_SPACE_MB
    )
    _refused(ran, q, needle)


@pytest.mark.parametrize("flag", ["--plan", "--quarantine"])
def test_deeply_nested_yaml_is_refused_by_release_before_it_starts(
    tmp_path: Path, runs: Path, flag: str
) -> None:
    bad = tmp_path / "nested.yaml"
    bad.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    env = {
        "DAGSTER_HOME": str(tmp_path / "home"),
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
        "BF_RUN_ROOTS": "",
    }
    args = ["release", "--runs", str(runs), "--out", str(tmp_path / "out"), flag, str(bad)]
    ran = run_cli(args, tmp_path, env, address_space_mb=ADDRESS_SPACE_MB)
    _refused(ran, bad, "nested deeper than 32 levels")
    assert not (tmp_path / "home").exists() and not (tmp_path / "out").exists()
