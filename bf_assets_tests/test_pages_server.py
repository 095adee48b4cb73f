"""The trial pages over HTTP for the UI: the page server of ``bf-assets ui`` and the links."""

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bf_assets.batch.places import pages_url
from bf_assets.cli.pages_server import make_server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    pages = tmp_path / "roots-abc" / "report" / "pages"
    pages.mkdir(parents=True)
    (pages / "index.html").write_text("<h1>trial index</h1>")
    (pages / "t1.html").write_text("<h1>trial one</h1>")
    tables = tmp_path / "roots-abc" / "raw_trials"
    tables.mkdir()
    (tables / "part.parquet").write_bytes(b"PAR1 raw")
    server = make_server(str(tmp_path), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_the_page_server_serves_trial_pages(served: str) -> None:
    assert _get(f"{served}/roots-abc/report/pages/index.html") == (200, "<h1>trial index</h1>")
    assert _get(f"{served}/roots-abc/report/pages/t1.html")[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/roots-abc/raw_trials/part.parquet",
        "/roots-abc/report/../raw_trials/part.parquet",
        "/roots-abc/report/%2e%2e/raw_trials/part.parquet",
        "/roots-abc/report/pages/",
        "/",
    ],
)
def test_the_page_server_serves_nothing_but_report_files(served: str, path: str) -> None:
    assert _get(served + path)[0] == 404


def test_pages_url_is_an_address_on_the_page_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "wh"))
    index = tmp_path / "wh" / "roots-abc" / "report" / "pages" / "index.html"
    monkeypatch.delenv("BF_PAGES_URL", raising=False)
    assert pages_url(index) is None
    monkeypatch.setenv("BF_PAGES_URL", "http://127.0.0.1:3001/")
    assert pages_url(index) == "http://127.0.0.1:3001/roots-abc/report/pages/index.html"
    assert pages_url(tmp_path / "elsewhere" / "index.html") is None


def test_the_report_in_the_ui_links_the_page_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.defs.review import ui_links

    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path))
    md = tmp_path / "roots-abc" / "report" / "review.md"
    text = "- [Trial review pages (trial_pages)](pages/index.html)\n"
    monkeypatch.delenv("BF_PAGES_URL", raising=False)
    assert ui_links(text, md) == text
    monkeypatch.setenv("BF_PAGES_URL", "http://127.0.0.1:3001")
    assert ui_links(text, md) == (
        "- [Trial review pages (trial_pages)]"
        "(http://127.0.0.1:3001/roots-abc/report/pages/index.html)\n"
    )


def test_the_ui_starts_no_page_server_on_a_taken_port() -> None:
    import socket

    from bf_assets.cli.ui import _port_free

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert not _port_free("127.0.0.1", port)
    assert _port_free("127.0.0.1", port)
