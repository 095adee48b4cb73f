"""The trial pages over HTTP for the Dagster UI: a small read-only server started by
``bf-assets ui`` beside the webserver (browsers refuse ``file://`` links from a web page).

It serves only the ``report/`` folder of each run roots' folder of the local warehouse (the
review report and the trial pages, cleaned like the export), never the tables beside them.
The UI's links come from ``$BF_PAGES_URL`` (:func:`bf_assets.batch.places.pages_url`).
"""

from __future__ import annotations

import argparse
import functools
import posixpath
import sys
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

REPORT_DIR = "report"


def servable(url_path: str) -> bool:
    """Whether ``url_path`` names something in a ``<roots folder>/report/`` folder."""
    parts = [p for p in posixpath.normpath(unquote(urlsplit(url_path).path)).split("/") if p]
    return len(parts) >= 2 and parts[1] == REPORT_DIR and ".." not in parts


class ReportPagesHandler(SimpleHTTPRequestHandler):
    """Files under ``report/`` folders only (404 for the rest, no directory listings)."""

    def send_head(self):  # type: ignore[no-untyped-def]
        if not servable(self.path) or self.path.endswith("/"):
            self.send_error(404, "not a report page")
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
