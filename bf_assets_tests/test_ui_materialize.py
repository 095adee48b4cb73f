"""End to end: "Materialize all" on the sample through a real webserver and daemon.

``bf-assets ui`` (as ``./dev ui`` starts it) on a fresh instance with the shipped
``dagster.yaml``; the backfill the UI's dialog sends for "Materialize all" over "All"
partitions is launched through GraphQL (``tools/ui_materialize.py``, which also clicks it in
chromium and times it).  Nothing here is timed: the daemons are judged by the iterations a
run waited through, read from the daemon's own log.  A run must be requested by the first
backfill iteration after its parents finished, and launched by the run-queue iteration that
first saw it (two when it was queued while an iteration was under way).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "ui_materialize.py"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    not (BIN / "dg").exists() and not (BIN / "dagster").exists(),
    reason="neither dg nor dagster is installed next to this Python",
)


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ui_materialize", TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_materialize_all_runs_through_the_daemons_without_idle_iterations(
    tmp_path: Path,
) -> None:
    tool = load_tool()
    ui, published = tool.measure_ui(tmp_path / "ui", tool.SHIPPED, {}, None, timeout=1200)
    assert ui.backfill_status == "COMPLETED_SUCCESS"
    assert ui.all_succeeded, [r["status"] for r in ui.runs]
    # the ingest of both job directories in one run (single-run backfill policy), then the
    # unpartitioned release assets in one more
    keys = tool.sample_job_keys()
    assert [r["assets"] for r in ui.runs] == [f"{keys[0]}…{keys[-1]}", "unpartitioned"]
    for r in ui.runs:
        assert r["idle_backfill_iterations"] == 0, r
        assert 1 <= r["queue_iterations"] <= 2, r
    # the release published the dataset into the instance's publish folder
    assert (published / "README.md").is_file()
    assert any((published / "data").rglob("*.parquet"))
    shutil.rmtree(tmp_path / "ui" / "warehouse", ignore_errors=True)
