"""The trial pages over HTTP for the UI: the page server of ``bf-assets ui`` and the links."""

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bf_assets.cli.pages_server import make_server
from bf_assets.settings import pages_url


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    pages = tmp_path / "roots-abc" / "report" / "pages"
    pages.mkdir(parents=True)
    (pages / "index.html").write_text("<h1>trial index</h1>")
    (pages / "t1.html").write_text("<h1>trial one</h1>")
    (pages / ".pages-state.json").write_text("{}")
    (tmp_path / "roots-abc" / "pages-on-demand.bin").write_bytes(b"not served")
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
        "/roots-abc/report/pages/.pages-state.json",
        "/roots-abc/pages-on-demand.bin",
        "/roots-abc/report/../pages-on-demand.bin",
        "/roots-abc/report/pages/trials/t2.html",  # no page, nothing kept to make it
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


def test_the_page_server_renders_a_page_left_for_when_it_is_asked_for(
    runs_root: Path, tmp_path: Path
) -> None:
    """A clean exported trial's page is not rendered by the release; its link in the index
    works through the server, which renders the page once and writes it beside the others."""
    from trialkit import healthy_spec

    from bf_assets.corpus.run import review_refs
    from bf_assets.dataset.assemble import assemble
    from bf_assets.dataset.common import trial_key
    from bf_assets.ingest.discovery import discover
    from bf_assets.pages.on_demand import sources_beside
    from bf_assets.pages.site import page_name, write_pages
    from bf_assets.review.options import ReviewOptions

    healthy_spec().write(runs_root)
    ds = assemble(review_refs(discover([str(runs_root)]).trials, ReviewOptions()))
    pages = tmp_path / "wh" / "roots-abc" / "report" / "pages"
    res = write_pages(ds, pages, on_demand=sources_beside(pages))
    [t] = ds.trials
    name = page_name(trial_key(t))
    assert res.on_demand == 1 and f'href="{name}"' in res.index.read_text()
    server = make_server(str(tmp_path / "wh"), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/roots-abc/report/pages/"
    try:
        assert not (pages / name).exists()
        with urllib.request.urlopen(base + name, timeout=60) as got:
            assert got.status == 200
            csp = got.read().decode()
        assert (pages / name).read_text() == csp  # written beside the others
        assert "script-src 'none'" in csp and t.ref.rollout in csp
        assert _get(base + "trials/other-0000000000.html")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
