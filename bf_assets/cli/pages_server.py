"""The trial pages over HTTP for the Dagster UI: a small read-only server started by
``bf-assets ui`` beside the webserver (browsers refuse ``file://`` links from a web page).

It serves only the ``report/`` folder of each run roots' folder of the local warehouse (the
review report and the trial pages, cleaned like the export), never the tables beside them,
and no file whose name starts with a dot.  A trial page the release left to be asked for
(:mod:`bf_assets.pages.on_demand`) is rendered from the sources file beside that
``report/`` folder when it is first requested, and written beside the others.
The UI's links come from ``$BF_PAGES_URL`` (:func:`bf_assets.settings.pages_url`).
"""

from __future__ import annotations

import argparse
import functools
import posixpath
import re
import sys
import threading
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPORT_DIR = "report"
PAGE_FILE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\.html")
# one page rendered at a time: two requests for one page write it once after the other
_RENDERING = threading.Lock()


def _parts(url_path: str) -> list[str]:
    return [p for p in posixpath.normpath(unquote(urlsplit(url_path).path)).split("/") if p]


def servable(url_path: str) -> bool:
    """Whether ``url_path`` names something in a ``<roots folder>/report/`` folder (no
    part of it a dot file)."""
    parts = _parts(url_path)
    return (
        len(parts) >= 2
        and parts[1] == REPORT_DIR
        and ".." not in parts
        and not any(p.startswith(".") for p in parts)
    )


def render_missing(root: str, url_path: str) -> bool:
    """Render the trial page ``url_path`` names (``<roots folder>/report/pages/trials/
    <page>.html``) when it is not on disk and the release kept what it is made of; True
    when it is on disk now."""
    parts = _parts(url_path)
    if len(parts) != 5 or parts[1:4] != [REPORT_DIR, "pages", "trials"]:
        return False
    if not PAGE_FILE.fullmatch(parts[4]):
        return False
    from bf_assets.pages.on_demand import sources_beside
    from bf_assets.pages.site import TRIALS_DIR, render_on_demand

    pages = Path(root, *parts[:3])
    name = f"{TRIALS_DIR}/{parts[4]}"
    with _RENDERING:
        if (pages / name).is_file():
            return True
        return render_on_demand(pages, name, sources_beside(pages)) is not None


class ReportPagesHandler(SimpleHTTPRequestHandler):
    """Files under ``report/`` folders only (404 for the rest, no directory listings); a
    trial page not rendered yet is rendered when asked for."""

    def send_head(self):  # type: ignore[no-untyped-def]
        if not servable(self.path) or self.path.endswith("/"):
            self.send_error(404, "not a report page")
            return None
        if not Path(self.translate_path(self.path)).exists():
            try:
                render_missing(self.directory, self.path)
            except Exception as exc:  # noqa: BLE001 (a page that cannot be made is a 500)
                self.send_error(500, f"the page could not be rendered: {type(exc).__name__}")
                return None
        return super().send_head()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib name)
        pass


def make_server(root: str, host: str, port: int) -> ThreadingHTTPServer:
    handler = functools.partial(ReportPagesHandler, directory=root)
    return ThreadingHTTPServer((host, port), handler)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bf_assets.cli.pages_server")
    ap.add_argument("--root", required=True, help="the local warehouse folder")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=3001)
    args = ap.parse_args(argv)
    try:
        server = make_server(args.root, args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"bf-assets ui: the trial page server cannot listen: {exc}\n")
        return 2
    with server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
