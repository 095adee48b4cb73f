"""What the tests that run ``bf-assets release`` end to end share."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bf_assets.cli.main import main


def isolated_release(
    monkeypatch: pytest.MonkeyPatch, base: Path, jobs: Path, tasks: Path, out: Path, *extra: str
) -> int:
    """``bf-assets release`` of ``jobs`` (with the task tree ``tasks``) into ``out``, on a
    Dagster instance, warehouse and staging folder of its own under ``base``; its exit code."""
    monkeypatch.setenv("DAGSTER_HOME", str(base / "home"))
    monkeypatch.setenv("BF_RUN_ROOTS", "")
    monkeypatch.setenv("BF_WAREHOUSE", str(base / "warehouse"))
    monkeypatch.setenv("BF_STAGING_DIR", str(base / "staging"))
    return main(["release", "--runs", str(jobs), "--tasks", str(tasks), "--out", str(out), *extra])


def published_digests(out: Path) -> dict[str, str]:
    """sha256 of every file of the release ``out`` points to, by path within it."""
    root = out.resolve()
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
