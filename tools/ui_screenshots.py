"""Screenshots of the Dagster UI as a user sees it, taken with a real browser.

Runs a release of the sample (published), then a blocked one (``data/plans/strict.yaml``)
on one fresh instance, serves the UI (``dagster dev``) on a free port and drives Debian's
chromium through Playwright (``executable_path``; no browser download) to the lineage, the
failing ``release_is_publishable`` check with its reasons, and the review report.

    .venv/bin/python tools/ui_screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]

Needs ``playwright`` (the test extra) and ``apt-get install chromium``.  It checks what it
photographs: each page must show the text it is about, else it exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (loopback only)
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the UI did not answer at {url} within {seconds:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="bf-ui-"))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(work / "home"),
        "BF_WAREHOUSE": str(work / "warehouse"),
        "BF_PUBLISH_DIR": str(work / "published"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    for extra in ([], ["--plan", "data/plans/strict.yaml"]):
        subprocess.run(
            [str(BIN / "bf-assets"), "release", "--out", str(work / "published"), *extra],
            cwd=REPO,
            env=env,
            check=False,
            capture_output=True,
        )
    port = _free_port()
    ui = subprocess.Popen(
        [str(BIN / "dagster"), "dev", "-m", "bf_assets.definitions", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    try:
        _wait(base + "/server_info", 180)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            lineage = "/assets/published_dataset?view=lineage&lineageScope=upstream&lineageDepth=6"
            shots = [
                ("graph.png", lineage, "review_report", None),
                ("check-blocked.png", "/assets/curated_rollouts?view=checks",
                 "below floor", "release_is_publishable"),
                ("report.png", "/assets/review_report", "Blockers", None),
            ]  # fmt: skip
            for name, path, must, click in shots:
                page.goto(base + path, wait_until="networkidle", timeout=120_000)
                page.wait_for_timeout(2000)
                skip = page.get_by_role("button", name="Skip")
                if skip.count():
                    skip.first.click()  # the first-visit newsletter dialog
                if click:
                    page.get_by_text(click, exact=True).first.click()
                    page.wait_for_timeout(2000)
                if must not in page.content():
                    problems.append(f"{name}: {must!r} not on {path}")
                page.screenshot(path=str(out / name), full_page=False)
                print(out / name)
            browser.close()
    finally:
        ui.terminate()
        try:
            ui.wait(timeout=30)
        except subprocess.TimeoutExpired:
            ui.kill()
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print("missing:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
