"""Shared fixtures: the ``/work/shared`` fixture sets (skipped when absent) and built trials."""

from __future__ import annotations

from pathlib import Path

import pytest
from trialkit import Trial, build_trial

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared contract and fixture tree next to the repository; skip when it is absent."""
    if not (SHARED / "fixtures").is_dir():
        pytest.skip(f"shared fixtures not available at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def fixtures_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures"


@pytest.fixture
def runs_root(tmp_path: Path) -> Path:
    """An empty jobs root (the run root every built trial lives under)."""
    root = tmp_path / "jobs"
    root.mkdir()
    return root


@pytest.fixture
def trial(runs_root: Path) -> Trial:
    """A freshly written healthy production trial (see :func:`trialkit.healthy_spec`)."""
    return build_trial(runs_root)
