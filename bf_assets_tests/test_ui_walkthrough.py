"""The README's "In the Dagster UI, step by step", walked in a real browser on a fresh instance.

``bf-assets ui`` (webserver, daemon and trial page server, on free ports) over a new
``DAGSTER_HOME`` holding only the shipped ``dagster.yaml``, the sample runs of ``data/runs``
and a temporary warehouse and publish folder.  Debian's chromium, driven by Playwright, does
what a newcomer reading the README does: the asset graph, the ingest the ``new_job_dirs``
sensor starts by itself, *Jobs* → ``release_job`` → *Materialize all*, the published dataset,
``curated_rollouts``' check ``release_is_publishable`` with its reasons, and a trial page
opened from the UI's link over HTTP.  Each step is photographed into the test's temporary
folder (``BF_SCREENSHOTS=DIR`` keeps them) and judged by the text it shows.  GraphQL is used
only to wait for runs to finish.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchkit import script_module

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "ui_materialize.py"
BIN = Path(sys.executable).parent
CHROMIUM = next(
    (
        p
        for p in (os.environ.get("BF_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium")
        if p and Path(p).is_file()
    ),
    None,
)
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed"),
    pytest.mark.skipif(
        not (BIN / "bf-assets").exists(), reason="bf-assets is not installed next to this Python"
    ),
]

#: Bounds on each wait (the whole walk takes a few minutes on a loaded 2-core machine).
READY_S = 600
RUNS_S = 900
UI_MS = 120_000

RUNS_Q = """query($job: String!) { runsOrError(filter: {pipelineName: $job}) {
  ... on Runs { results { runId status } } } }"""
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def load_tool() -> ModuleType:
    """``tools/ui_materialize.py``: starting and stopping ``bf-assets ui`` as ``./dev ui``."""
    return script_module("ui_materialize", TOOL)


def wait_runs(tool: ModuleType, base: str, job: str, count: int) -> list[dict[str, Any]]:
    """Wait until ``job`` has at least ``count`` runs and all of them have ended."""
    deadline = time.monotonic() + RUNS_S
    while time.monotonic() < deadline:
        runs = tool.gql(base, RUNS_Q, {"job": job})["runsOrError"]["results"]
        if len(runs) >= count and all(r["status"] in TERMINAL for r in runs):
            return runs
        time.sleep(2)
    raise AssertionError(f"{job}: {count} finished run(s) not seen within {RUNS_S} s")


@pytest.fixture(scope="module")
def ui_base(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, ModuleType, Path]]:
    """``bf-assets ui`` on a fresh instance, the ``new_job_dirs`` sensor left as shipped."""
    tool = load_tool()
    work = tmp_path_factory.mktemp("ui-walkthrough")
    home = work / "home"
    tool.fresh_home(home, tool.SHIPPED)
    env = tool.ui_env(home, work, {})
    env.pop("BF_EXECUTOR", None)  # a newcomer's runs: each run's own (default) executor
    port = tool.free_port()
    base = f"http://127.0.0.1:{port}"
    proc = tool.start_ui(home, env, port, work / "ui.log")
    try:
        tool.wait_ready(base, proc, READY_S)
        yield base, tool, work
    finally:
        tool.stop_ui(proc)


def shot(page: Any, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name))


def dismiss_newsletter(page: Any) -> None:
    """The first-visit "Join the Dagster community" dialog comes up a moment after load."""
    page.wait_for_timeout(2000)
    skip = page.get_by_role("button", name="Skip")
    if skip.count():
        skip.first.click()


def nav(page: Any, label: str) -> None:
    """Click an item of Dagster's left navigation (its accessible name ends with the label)."""
    page.get_by_role("link", name=re.compile(rf"\b{label}$")).first.click()
    page.wait_for_load_state("networkidle")


def test_the_readme_ui_steps_reach_a_trial_page(
    ui_base: tuple[str, ModuleType, Path], tmp_path: Path
) -> None:
    base, tool, work = ui_base
    shots = Path(os.environ.get("BF_SCREENSHOTS") or tmp_path)
    keys = tool.sample_job_keys()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        context.set_default_timeout(UI_MS)
        page = context.new_page()

        # 1. the UI, and its asset graph with every asset of the release
        page.goto(base, wait_until="networkidle")
        dismiss_newsletter(page)
        nav(page, "Lineage")
        page.get_by_text("Global asset lineage").wait_for()
        for group in ("ingest", "dataset", "curate", "publish"):
            page.get_by_text(group, exact=True).first.dblclick()  # unfolds it in the tree
        for asset in ("review_report", "trial_pages", "curated_rollouts", "published_dataset"):
            page.get_by_text(asset, exact=True).first.wait_for()
        page.get_by_role("button", name=re.compile(r"Materialize all")).wait_for()
        shot(page, shots, "1-asset-graph.png")

        # 2. the sensor, on from the start, registers the job directories and ingests them
        nav(page, "Automation")
        page.get_by_text("new_job_dirs", exact=True).first.wait_for()
        shot(page, shots, "2-automation.png")
        ingests = wait_runs(tool, base, "ingest_job", len(keys))
        assert [r["status"] for r in ingests] == ["SUCCESS"] * len(keys)
        nav(page, "Runs")
        page.get_by_text("ingest_job").first.wait_for()
        shot(page, shots, "2-ingest-runs.png")

        # 3. Jobs → release_job → Materialize all: one run of the release
        nav(page, "Jobs")
        page.get_by_role("link", name=re.compile(r"\brelease_job$")).first.click()
        page.get_by_role("button", name=re.compile(r"Materialize all$")).click()
        launched = page.get_by_text(re.compile(r"Launched run [0-9a-f]{8}"))
        launched.wait_for()
        run_prefix = launched.inner_text().split()[-1]
        shot(page, shots, "3-release-launched.png")
        (release,) = wait_runs(tool, base, "release_job", 1)
        assert release["runId"].startswith(run_prefix)
        assert release["status"] == "SUCCESS"

        # 4. the published dataset, materialized
        nav(page, "Catalog")
        page.get_by_role("link", name=re.compile(r"\bpublished_dataset$")).first.click()
        page.get_by_text("release_verdict", exact=True).first.wait_for()
        # the status panel says "Never materialized" until its own query has answered
        page.get_by_text("Never materialized").first.wait_for(state="hidden")
        shot(page, shots, "4-published-dataset.png")
        published = page.inner_text("body")
        assert "publishable_with_quarantines" in published
        assert str(work / "published") in published  # what was written where

        # 5. curated_rollouts → Checks → release_is_publishable, its verdict and reasons
        nav(page, "Catalog")
        page.get_by_role("link", name=re.compile(r"\bcurated_rollouts$")).first.click()
        page.get_by_role("tab", name=re.compile(r"Checks")).click()
        page.get_by_text("release_is_publishable", exact=True).first.click()
        page.get_by_text("publishable_with_quarantines").first.wait_for()
        page.get_by_text("[Show Markdown]").first.click()  # the check's `why`
        reasons = page.get_by_role("dialog")
        reasons.get_by_text(re.compile(r"rejected: \d+ trials")).wait_for()
        assert "not training ready" in reasons.inner_text()
        shot(page, shots, "5-check-reasons.png")
        reasons.get_by_role("button", name="Close").click()

        # 6. trial_pages → index_url opens the index over HTTP; then one trial page
        nav(page, "Catalog")
        page.get_by_role("link", name=re.compile(r"\btrial_pages$")).first.click()
        index_link = page.get_by_role("link", name=re.compile(r"pages\/index\.html$")).first
        assert index_link.get_attribute("href").startswith("http://127.0.0.1:")
        with context.expect_page() as opened:
            index_link.click()
        index = opened.value
        index_url = index_link.get_attribute("href")
        index.wait_for_load_state()
        assert index.title() == "Trial review pages"
        rows = index.locator("#trials tbody tr")
        assert rows.count() > 0
        row_verdict = rows.first.locator("td").first.inner_text().strip()
        assert row_verdict in ("quarantined", "rejected")  # held and rejected trials first
        shot(index, shots, "6-trial-index.png")
        with index.expect_navigation():
            rows.first.get_by_role("link").first.click()
        assert index.url.startswith("http://127.0.0.1:") and "/trials/" in index.url
        assert index.title().endswith(f"· {row_verdict}"), index.title()
        header = index.locator("header").first.inner_text()
        assert row_verdict in header, header  # the verdict badge at the top of the page
        shot(index, shots, "6-trial-page.png")

        # ... and the review report's link in review_report's metadata opens the same index
        nav(page, "Catalog")
        page.get_by_role("link", name=re.compile(r"\breview_report$")).first.click()
        page.get_by_text("[Show Markdown]").first.click()  # the report
        report = page.get_by_role("dialog")
        link = report.get_by_role("link", name=re.compile(r"Trial review pages"))
        assert link.get_attribute("href") == index_url
        shot(page, shots, "6-report-link.png")
        browser.close()
