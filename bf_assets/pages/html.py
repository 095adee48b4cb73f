"""HTML pieces shared by the trial pages and the index.

Every value from trial data goes through :func:`esc` (text and attribute values; control
characters replaced).  Pages carry a Content-Security-Policy that allows no network, no
external file and only the page's own inline script, pinned by its sha256: even a value that
escaped escaping could not run script.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable, Iterator
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# any character escaping changes: markup, quotes, control characters, lone surrogates
_CHANGES = re.compile(r"[&<>\"'\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")

CSS = """
:root { --bad:#b42318; --warn:#b54708; --ok:#067647; --info:#475467; --line:#eaecf0;
  --hl:#fff1a8; --muted:#667085; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; color: #101828; background: #f9fafb; font-size: 14px; line-height: 1.45; }
header.top { background: #101828; color: #fff; padding: 12px 24px; }
header.top a { color: #b2ddff; }
header.top h1 { font-size: 18px; margin: 4px 0; word-break: break-all; }
main { padding: 8px 24px 48px; max-width: 1400px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 16px 0;
  padding: 12px 16px; overflow-x: auto; }
h2 { font-size: 16px; margin: 4px 0 10px; }
h3 { font-size: 14px; margin: 12px 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; white-space: nowrap; }
table.kv th { width: 180px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
.badge { display: inline-block; border-radius: 10px; padding: 1px 8px; font-size: 12px;
  font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.v-rejected, .s-blocker { color: var(--bad); }
.v-quarantined, .s-quarantine { color: var(--warn); }
.v-publishable { color: var(--ok); }
.s-warning { color: #a15c07; } .s-info { color: var(--info); }
.x-finished { color: var(--ok); } .x-exception, .x-not_started { color: var(--bad); }
.x-agent_timeout, .x-verifier_timeout, .x-unknown { color: var(--warn); }
.raw-banner { background: var(--bad); color: #fff; padding: 8px 24px; font-weight: 600; }
.muted { color: var(--muted); }
.note { color: var(--muted); font-style: italic; }
.problem { color: var(--bad); }
table.src { table-layout: fixed; }
table.src td.n { width: 64px; color: var(--muted); text-align: right; user-select: none; }
table.src td.t { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px;
  white-space: pre-wrap; word-break: break-all; }
table.src tr.cited td { background: #fff8d6; }
table.src tr.cited td.n { color: #101828; font-weight: 700; }
tr[id], .step, .win, section { scroll-margin-top: 140px; }
tr:target td, .step:target { background: var(--hl) !important; outline: 2px solid #f5b800; }
.win { border-left: 3px solid var(--line); padding-left: 10px; margin: 14px 0; }
.win:target { border-left-color: #f5b800; }
.step { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
.step.cited { border-color: #f5b800; background: #fffbeb; }
.step .hd { font-weight: 600; }
.part { margin: 6px 0 6px 8px; padding-left: 8px; border-left: 3px solid var(--line); }
.part.call { border-left-color: #2e90fa; } .part.result { border-left-color: #98a2b3; }
.part.text.user { border-left-color: #7a5af8; } .part.text.assistant { border-left-color: #12b76a; }
.part .ti { font-size: 12px; color: var(--muted); font-weight: 600; }
.skill { color: #6941c6; border-color: #6941c6; }
.gap { color: var(--muted); margin: 8px 0; padding: 6px 10px; border: 1px dashed #d0d5dd; border-radius: 6px; }
.cites a { margin-right: 6px; }
.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; margin-bottom: 8px; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
.filters select, .filters input { font-size: 13px; padding: 3px 6px; min-width: 160px; }
tr.hidden { display: none; }
.count { font-weight: 600; }
details > summary { cursor: pointer; color: var(--muted); }
"""


def esc(value: Any) -> str:
    """Text (or an attribute value) for HTML: escaped, control characters replaced."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    if _CHANGES.search(text) is None:  # most values: nothing to escape or replace
        return text
    return html.escape(_CONTROL.sub("\ufffd", text), quote=True)


def script_hash(js: str) -> str:
    digest = hashlib.sha256(js.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode()


def page(title: str, body: str, *, script: str = "") -> str:
    """A whole document: strict CSP (no network; the inline script pinned by hash)."""
    return "".join(page_parts(title, [body], script=script))


def page_parts(title: str, body: Iterable[str], *, script: str = "") -> Iterator[str]:
    """:func:`page` a piece at a time: the head, the pieces of ``body`` as given (joined with
    nothing), the tail; a large page is written without ever being one string."""
    script_src = f"'{script_hash(script)}'" if script else "'none'"
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {script_src}; base-uri 'none'; form-action 'none'"
    )
    tail = f"<script>{script}</script>\n" if script else ""
    yield (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )
    yield from body
    yield f"\n{tail}</body>\n</html>\n"


def badge(text: str, cls: str) -> str:
    return f'<span class="badge {esc(cls)}">{esc(text)}</span>'


def kv_table(rows: list[tuple[str, Any]]) -> str:
    if not rows:
        return '<p class="note">none recorded</p>'
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def omitted_note(n: int, unit: str = "bytes") -> str:
    return f' <span class="note">… {n:,} {unit} not shown</span>' if n > 0 else ""
