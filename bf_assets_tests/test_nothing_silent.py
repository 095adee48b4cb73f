"""Nothing silent, through the command in a child process.

* Every trial discovered is accounted for: a trial directory that cannot be listed, a link
  leaving the run root and a dangling link are reviewed as trials rejected with
  ``GATE_UNREADABLE`` and the reason, and the release lists them as excluded.
* A place the command cannot write (a full Dagster home, a read-only warehouse, a full
  cache folder) or a run root it cannot list is one line on stderr and exit 2, never a
  traceback.

Root lists a mode-000 folder whatever its mode: the commands here run without that power
(:func:`placekit.without_read_override`); a full disk and a read-only folder are small
``tmpfs`` mounts (root only, skipped elsewhere).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from placekit import full_disk, locked_dir, nearly_full_disk, read_only_dir, run_cli, unlock
from trialkit import JOB, build_trial

UNREAD = {
    "demo-task__bbbb0002": "the trial directory cannot be listed (Permission denied); not read",
    "demo-task__cccc0003": "the trial directory is a link that leaves the run root; not read",
    "demo-task__dddd0004": (
        "the trial directory is a link whose target does not exist or cannot be reached; not read"
    ),
}


@pytest.fixture
def corpus(tmp_path: Path) -> object:
    """One healthy trial, and beside it one of each trial directory that cannot be read."""
    root = tmp_path / "jobs"
    build_trial(root, rollout_id="aaaa0001")
    locked = build_trial(root, rollout_id="bbbb0002")
    outside = build_trial(tmp_path / "elsewhere", rollout_id="cccc0003")
    os.symlink(outside.path, root / JOB / outside.path.name)
    os.symlink(tmp_path / "moved-away", root / JOB / "demo-task__dddd0004")
    locked_dir(locked.path)
    yield root
    unlock(locked.path)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "DAGSTER_HOME": str(tmp_path / "home"),
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
        "BF_RUN_ROOTS": "",
    }


def _assert_unread_trials(trials: list[dict[str, object]]) -> None:
    by_name = {str(t["rollout"]): t for t in trials}
    assert set(by_name) == {"demo-task__aaaa0001", *UNREAD}
    assert by_name["demo-task__aaaa0001"]["verdict"] == "publishable"
    for name, why in UNREAD.items():
        t = by_name[name]
        assert t["verdict"] == "rejected", name
        [unreadable] = [f for f in t["findings"] if f["check"] == "GATE_UNREADABLE"]  # type: ignore[attr-defined, index]
        assert unreadable["message"] == why and unreadable["file"] == "."


def test_review_reports_every_trial_it_cannot_read(tmp_path: Path, corpus: Path) -> None:
    ran = run_cli(["review", str(corpus), "--json"], tmp_path, unprivileged=True)
    assert ran.code == 1, ran.stderr[-2000:]  # some trials are not publishable; no crash
    assert "Traceback" not in ran.stderr
    _assert_unread_trials(json.loads(ran.stdout)["trials"])
    table = run_cli(["review", str(corpus)], tmp_path, unprivileged=True)
    for name in UNREAD:
        [row] = [line for line in table.stdout.splitlines() if line.startswith(f"{JOB}/{name}")]
        assert "rejected" in row and "GATE_UNREADABLE" in row


def test_release_excludes_every_trial_it_cannot_read_with_the_reason(
    tmp_path: Path, corpus: Path
) -> None:
    out = tmp_path / "out"
    ran = run_cli(
        ["release", "--runs", str(corpus), "--out", str(out)],
        tmp_path,
        _env(tmp_path),
        unprivileged=True,
    )
    assert ran.code == 0, ran.stderr[-2000:]
    assert "trials exported: 1 (excluded: rejected 3)" in ran.stdout
    report = json.loads((out / "report" / "review.json").read_text())
    _assert_unread_trials(report["trials"])
    excluded = {t["rollout"]: t for t in report["trials"] if not t["exported"]}
    assert set(excluded) == set(UNREAD)
    assert {t["export_reason"] for t in excluded.values()} == {"rejected"}


def _one_line_error(ran: object, *needles: str) -> None:
    code, err = ran.code, ran.stderr  # type: ignore[attr-defined]
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    assert err.splitlines() == [err.strip()] and err.startswith("bf-assets: error: "), err
    for needle in needles:
        assert needle in err, err


def test_a_full_dagster_home_is_one_line(tmp_path: Path) -> None:
    runs = build_trial(tmp_path / "jobs").root
    env = _env(tmp_path)
    with full_disk(tmp_path / "full") as full:
        env["DAGSTER_HOME"] = str(full / "home")
        ran = run_cli(
            ["release", "--runs", str(runs), "--out", str(tmp_path / "out")], tmp_path, env
        )
    _one_line_error(ran, "the Dagster home (DAGSTER_HOME)", "No space left on device")
    assert not (tmp_path / "out").exists()


def test_a_nearly_full_dagster_home_is_one_line(tmp_path: Path) -> None:
    """Room for a probe, not for a release: refused before Dagster fails part way."""
    runs = build_trial(tmp_path / "jobs").root
    env = _env(tmp_path)
    with nearly_full_disk(tmp_path / "small") as small:
        env["DAGSTER_HOME"] = str(small / "home")
        ran = run_cli(
            ["release", "--runs", str(runs), "--out", str(tmp_path / "out")], tmp_path, env
        )
    _one_line_error(ran, "the Dagster home (DAGSTER_HOME)", "its disk is nearly full")


def test_a_read_only_warehouse_is_one_line(tmp_path: Path) -> None:
    runs = build_trial(tmp_path / "jobs").root
    env = _env(tmp_path)
    with read_only_dir(tmp_path / "ro") as ro:
        env["BF_WAREHOUSE"] = str(ro / "warehouse")
        ran = run_cli(
            ["release", "--runs", str(runs), "--out", str(tmp_path / "out")], tmp_path, env
        )
    _one_line_error(ran, "the warehouse (BF_WAREHOUSE)", "Read-only file system")


def test_a_full_cache_folder_is_one_line_from_review(tmp_path: Path) -> None:
    runs = build_trial(tmp_path / "jobs").root
    with full_disk(tmp_path / "full") as full:
        ran = run_cli(["review", str(runs), "--cache-dir", str(full / "cache")], tmp_path)
    _one_line_error(ran, "No space left on device")


@pytest.mark.parametrize("command", ["review", "release"])
def test_a_run_root_that_cannot_be_listed_is_one_line(tmp_path: Path, command: str) -> None:
    runs = build_trial(tmp_path / "jobs").root
    locked_dir(runs)
    try:
        args = [str(runs)] if command == "review" else ["--runs", str(runs)]
        ran = run_cli([command, *args], tmp_path, _env(tmp_path), unprivileged=True)
    finally:
        unlock(runs)
    _one_line_error(ran, f"run root '{runs}' cannot be listed: Permission denied")
