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

import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from benchkit import script_module

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "ui_materialize.py"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    not (BIN / "dg").exists() and not (BIN / "dagster").exists(),
    reason="neither dg nor dagster is installed next to this Python",
)


def load_tool() -> ModuleType:
    return script_module("ui_materialize", TOOL)


def test_materialize_all_runs_through_the_daemons_without_idle_iterations(
    tmp_path: Path,
) -> None:
    tool = load_tool()
    ui, published = tool.measure_ui(tmp_path / "ui", tool.SHIPPED, {}, None, timeout=1200)
    assert ui.backfill_status == "COMPLETED_SUCCESS"
    assert ui.all_succeeded, [r["status"] for r in ui.runs]
    # the trial pages open from the UI's link over HTTP (the page server of bf-assets ui)
    assert ui.trial_pages_url.startswith("http://127.0.0.1:"), ui.trial_pages_url
    assert (ui.trial_pages_status, ui.trial_page_status) == (200, 200)
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
