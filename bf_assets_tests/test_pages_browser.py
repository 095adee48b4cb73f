"""The trial pages, and the release's report and card, in a real browser: Debian's chromium
driven by Playwright.

Skipped cleanly where Playwright or a chromium binary is missing (``.ci/run`` installs
chromium where it can).  Set ``BF_SCREENSHOTS=DIR`` to keep the screenshots (the ones in
``docs/screenshots/`` were taken this way).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_pages_core import hostile_spec, review_dataset
from test_report_published import (
    HostileRelease,
    build_hostile_release,
    markdown,
    pictures,
    rendered_files,
)
from trialkit import healthy_spec

from bf_assets.pages.site import PagesResult, write_pages

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = next(
    (
        p
        for p in (os.environ.get("BF_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium")
        if p and Path(p).is_file()
    ),
    None,
)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed")
HIGHLIGHT = "rgb(255, 241, 168)"  # --hl of the page CSS


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> PagesResult:
    base = tmp_path_factory.mktemp("site")
    root = base / "jobs"
    root.mkdir()
    hostile_spec().write(root)
    healthy_spec().write(root)
    other = healthy_spec(task="other-task", rollout_id="cccc3333")
    for doc in (other.config, other.result):
        doc["agent"] = "claude-agent-acp"
        doc["effective_skills_dir"] = doc["effective_skills_dir"].replace("demo-task", "other-task")
    assert other.row is not None
    other.row["info"]["agent"] = "claude-agent-acp"
    other.sync().write(root)
    q = base / "quarantine.yaml"
    q.write_text(
        "- trial: jobs/2026-06-01__00-00-00/other-task__cccc3333\n  action: quarantine\n"
        "  reason: check the score\n  by: tester\n  at: 2026-11-03\n"
    )
    ds = review_dataset(root, quarantine=str(q))
    return write_pages(ds, base / "pages")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: problems.append(str(e)))
    pg.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.problems = problems
    yield pg
    pg.close()


def shot(pg: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("BF_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(folder / name))


def in_viewport(pg: Any, selector: str) -> bool:
    return bool(
        pg.evaluate(
            """(s) => { const r = document.querySelector(s).getBoundingClientRect();
                 return r.top >= 0 && r.bottom <= window.innerHeight; }""",
            selector,
        )
    )


def hostile_page(site: PagesResult) -> Path:
    return next(p for k, p in site.pages.items() if k[1].startswith('demo-task__b4d"'))


def test_a_finding_link_scrolls_to_and_highlights_its_line(
    site: PagesResult, page: Any, tmp_path: Path
) -> None:
    page.goto(hostile_page(site).as_uri())
    assert "demo-task__b4d" in page.title()
    shot(page, "trial-page-top.png", tmp_path)
    link = page.locator("#findings tr", has_text="HACK_SCORE_WRITE").locator("a.cite")
    href = link.get_attribute("href")
    assert href and href.endswith("-L3")
    link.click()
    row = f"tr{href}"
    page.wait_for_function("(h) => location.hash === h", arg=href)
    assert in_viewport(page, row)
    color = page.eval_on_selector(f"{row} td.t", "e => getComputedStyle(e).backgroundColor")
    assert color == HIGHLIGHT
    assert "/logs/verifier/reward.txt" in page.inner_text(row)
    shot(page, "trial-page-evidence.png", tmp_path)
    assert page.problems == []  # no console error, no CSP violation, no injected dialog


def test_a_located_finding_and_the_conversation_link(
    site: PagesResult, page: Any, tmp_path: Path
) -> None:
    page.goto(hostile_page(site).as_uri())
    located = page.locator("#findings tr", has_text="GATE_VERIFIER_ERROR").locator("a.cite")
    located.click()
    href = located.get_attribute("href")
    assert in_viewport(page, f"tr{href}")
    assert "verifier crashed" in page.inner_text(f"tr{href}")
    conv = page.locator("#findings tr", has_text="HACK_SCORE_WRITE").get_by_text(
        "in the conversation"
    )
    conv.click()
    page.wait_for_function("() => location.hash === '#acp-L3'")
    assert in_viewport(page, "#acp-L3 .hd")
    color = page.eval_on_selector("#acp-L3", "e => getComputedStyle(e).backgroundColor")
    assert color == HIGHLIGHT
    shot(page, "trial-page-conversation.png", tmp_path)
    assert page.problems == []


def test_the_index_filters_by_check_harness_and_task(
    site: PagesResult, page: Any, tmp_path: Path
) -> None:
    page.goto(site.index.as_uri())
    rows = page.locator("#trials tbody tr")
    visible = page.locator("#trials tbody tr:not(.hidden)")
    assert rows.count() == 3 and visible.count() == 3
    first = rows.nth(0).inner_text()
    assert "other-task__cccc3333" in first and "quarantined" in first  # held trials first
    assert "rejected" in rows.nth(1).inner_text()
    page.select_option("#f-check", "HACK_SCORE_WRITE")
    assert visible.count() == 1 and "demo-task__b4d" in visible.nth(0).inner_text()
    assert page.inner_text("#shown") == "1"
    page.select_option("#f-check", "")
    page.select_option("#f-harness", "claude-agent-acp")
    assert visible.count() == 1 and "other-task" in visible.nth(0).inner_text()
    page.select_option("#f-harness", "")
    page.select_option("#f-task", "demo-task")
    assert visible.count() == 2
    page.fill("#f-text", "aaaa1111")
    assert visible.count() == 1
    page.fill("#f-text", "")
    page.select_option("#f-task", "")
    assert visible.count() == 3
    page.select_option("#f-verdict", "quarantined")
    shot(page, "index-filtered.png", tmp_path)
    assert visible.count() == 1
    page.select_option("#f-verdict", "")
    with page.expect_navigation():
        rows.nth(0).locator("a").first.click()
    assert "other-task__cccc3333" in page.url
    assert "check the score" in page.inner_text("#decision")
    assert page.problems == []


def test_every_page_loads_without_errors(site: PagesResult, page: Any) -> None:
    for key, path in sorted(site.pages.items()):
        page.goto(path.as_uri())
        assert page.locator("#findings").count() == 1, key
        assert page.evaluate("document.scripts.length") == 0
    assert page.problems == []


@pytest.fixture(scope="module")
def hostile_release(tmp_path_factory: pytest.TempPathFactory) -> HostileRelease:
    return build_hostile_release(tmp_path_factory.mktemp("hostile-release"))


def test_the_report_and_card_run_nothing_from_trial_data(
    hostile_release: HostileRelease, page: Any, tmp_path: Path
) -> None:
    """The published report and card rendered as the Hub renders Markdown (raw HTML on),
    and each coverage picture opened as a document of its own: no dialog, no error."""
    for rel, text in rendered_files(hostile_release).items():
        body = markdown().render(text)
        doc = tmp_path / (rel.replace("/", "-") + ".html")
        doc.write_text(f"<!doctype html><meta charset=utf-8><title>{rel}</title>{body}")
        page.goto(doc.as_uri())
        page.wait_for_function("() => [...document.images].every((i) => i.complete)")
        page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # queued handlers
        assert page.problems == [], rel  # no injected dialog, no error
        assert "onerror=alert(5)" in page.inner_text("body")  # shown as text
        assert page.evaluate("document.scripts.length") == 0
        shot(page, f"published-{doc.stem}.png", tmp_path)
        for i, svg in enumerate(pictures(text)):
            picture = tmp_path / f"{doc.stem}-picture-{i}.svg"
            picture.write_text(svg)
            page.goto(picture.as_uri())  # an SVG document would run a script it held
            assert page.evaluate("document.scripts.length") == 0
    assert page.problems == []
