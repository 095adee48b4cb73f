"""The evidence of each finding: the lines of the file it cites, in context.

A finding that cites a line gets that line and ``CONTEXT`` lines on either side.  A finding
that names a file but no line is located in it when the file is small: by its evidence text,
else by the key its check is about (``GATE_VERIFIER_ERROR`` → ``"verifier_error"``); the page
says the line was located, not cited.  Otherwise the head of the file is shown.

Each line is shown up to a byte limit; a cited line longer than that shows its head and the
stretch around the evidence (searched in the file as a stream, so a 150 MB one-line
``results.jsonl`` is never held).  Lines are cleaned: a JSONL line is parsed and cleaned as
a value, a line of a pretty-printed document as a fragment, with the lines inside a banned
key's object or list left out.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson

from bf_assets.findings import Finding
from bf_assets.pages.lines import TrialFiles, decode, safe_rel
from bf_assets.pages.scrub import (
    AHEAD,
    REMOVED,
    Scrub,
    after_open_part,
    bracket_depth,
    open_reasoning_at_end,
)
from bf_assets.redact.inline_reasoning import after_open_span, open_span_at_end

CONTEXT = 3
HEAD_LINES = 6
LINE_SHOW = 600  # bytes shown of a context line
CITED_SHOW = 4000  # of a cited line
AROUND_MATCH = 1200  # of a long cited line: bytes around the evidence
LOOKBACK = 1024 * 1024  # bytes before that window searched for a reasoning part it is in
PARSE_SHOW = 256 * 1024  # a complete line up to this size is parsed and cleaned as a value
DOC_LINE = 64 * 1024
DOC_AHEAD = 8  # lines after a document's line searched for a reasoning part's mark
MAX_WINDOWS = 60
NEEDLE_CHARS = 48
# The key a check is about, to locate a finding that cites a file but no line.
CHECK_KEYS: dict[str, tuple[str, ...]] = {
    "GATE_VERIFIER_ERROR": ("verifier_error", "verifier_result", "exception_info"),
    "GATE_REWARD_MISSING": ("rewards", "reward", "verifier_result"),
    "GATE_TOKENS_MISSING": ("agent_result", "token_usage", "final_metrics"),
    "GATE_TOKENS_SUSPICIOUS": ("agent_result", "token_usage", "final_metrics"),
    "GATE_TRAJECTORY_PARTIAL": ("partial_trajectory", "trajectory_source"),
    "GATE_INFRA_ERROR": ("error", "exception_info", "error_category"),
    "ATTR_EXPERIMENT_FIDELITY": ("verifier_error", "error", "exception_info"),
    "PROVENANCE_MISSING": ("source", "task_digest", "task_path"),
    "GATE_ROW_READY_MISMATCH": ("training_ready",),
    "GATE_ROW_SHAPE": ("token_usage",),
}


@dataclass(slots=True)
class ShownLine:
    number: int
    text: str
    omitted: int  # bytes (or characters, after cleaning) not shown
    cited: bool = False


@dataclass(slots=True)
class Window:
    anchor: str  # element id of the window
    file: str
    line: int | None  # the line the finding cites, or the one the page located
    how: str  # cited, located, head, none
    note: str = ""
    lines: list[ShownLine] = field(default_factory=list)
    problem: str | None = None

    def line_id(self, n: int) -> str:
        return f"{self.anchor}-L{n}"


def needles(f: Finding) -> list[bytes]:
    """What to look for in the file to find the line a line-less finding is about."""
    out: list[bytes] = []
    ev = (f.evidence or "").split("…", 1)[0].split("[REDACTED", 1)[0].strip()
    pieces = [ev]
    if ": " in ev:
        pieces.append(ev.split(": ", 1)[1])
    for p in pieces:
        p = p[:NEEDLE_CHARS].strip()
        if len(p) >= 6:
            out.append(p.encode())
            esc = orjson.dumps(p).decode()[1:-1]
            if esc != p:
                out.append(esc.encode())
    out.extend(f'"{k}"'.encode() for k in CHECK_KEYS.get(f.check, ()))
    return out


def plan(files: TrialFiles, findings: Sequence[Finding]) -> list[tuple[Finding, str | None]]:
    """Ask ``files`` for what each finding's window needs; ``(finding, anchor)`` pairs."""
    out: list[tuple[Finding, str | None]] = []
    n = 0
    for f in findings:
        rel = safe_rel(f.file) if f.file else None
        if rel is None or n >= MAX_WINDOWS:
            out.append((f, None))
            continue
        n += 1
        if f.line:
            files.want(rel, range(f.line - CONTEXT, f.line + CONTEXT + 1))
        else:
            files.want(rel, head=HEAD_LINES, needles=needles(f))
        out.append((f, f"ev{n}"))
    return out


def build_window(files: TrialFiles, f: Finding, anchor: str, scrub: Scrub) -> Window:
    rel = safe_rel(f.file or "") or ""
    w = Window(anchor, rel, f.line, "cited")
    scan = files.scan(rel)
    if scan.problem is not None:
        w.problem = scan.problem
        w.how = "none"
        return w
    target = f.line
    if target is None:
        found = [scan.found[n] for n in needles(f) if n in scan.found]
        if found:
            target, w.how = found[0], "located"
            w.note = "the finding cites the file, not a line: shown where its evidence is"
        else:
            w.how = "head"
            w.note = "the finding cites the file, not a line: its first lines"
    if f.line is None and target is not None and scan.span(target) is None:
        target, w.how = None, "head"  # located, but too many lines to keep every span
        w.note = "the finding cites the file, not a line: its first lines"
    w.line = target
    if target is not None and target > scan.lines:
        w.note = f"line {target} is past the end of the file ({scan.lines} lines)"
        w.problem = w.note
        return w
    first = max(1, (target or 1) - CONTEXT) if target else 1
    last = min(scan.lines, target + CONTEXT if target else HEAD_LINES)
    doc = rel.endswith(".json") and scan.all_spans is not None  # read from line 1
    states = _doc_lines(files, rel, last, scrub) if doc else None
    for n in range(first, last + 1):
        cited = n == target
        if states is not None:
            text, omitted = states[n - 1]
            if cited and omitted:
                text, omitted = _long_line(files, rel, n, f, scrub)
        else:
            text, omitted = _jsonl_line(files, rel, n, f if cited else None, scrub)
        w.lines.append(ShownLine(n, text, omitted, cited))
    return w


def _doc_lines(files: TrialFiles, rel: str, upto: int, scrub: Scrub) -> list[tuple[str, int]]:
    """Lines 1..``upto`` of a pretty-printed document, cleaned as fragments; the lines inside
    a banned key's object or list, or inside a reasoning part, are left out (the depth is
    followed from line 1).  Each line is judged with the ``DOC_AHEAD`` lines after it: a
    part's mark may come a line or two after its brace (an OpenAI item's ``id``, a Gemini
    thought's ``text``)."""

    def read(n: int) -> tuple[str, int]:
        got = files.read(rel, n, DOC_LINE)
        data, omitted = got if got is not None else (b"", 0)
        return decode(data), omitted

    out: list[tuple[str, int]] = []
    skipping = 0
    following: deque[tuple[str, int]] = deque(read(n) for n in range(1, DOC_AHEAD + 2))
    for n in range(1, upto + 1):
        text, omitted = following.popleft()
        following.append(read(n + DOC_AHEAD + 1))
        if not scrub.clean:
            out.append(_clip(text, LINE_SHOW, omitted))
            continue
        if skipping > 0:
            skipping += bracket_depth(text)
            out.append((f"  … {REMOVED}" if skipping > 0 else "", 0))
            continue
        # a part begins at a brace: only a line with one needs the lines after it
        ahead = "".join("\n" + t for t, _ in following)[:AHEAD] if "{" in text else ""
        cleaned, skipping = scrub.fragment(text, ahead)
        out.append(_clip(cleaned, LINE_SHOW, omitted))
    return out


def _clip(text: str, limit: int, omitted: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, omitted
    return text[:limit], omitted + len(text) - limit


def _jsonl_line(
    files: TrialFiles, rel: str, n: int, cited: Finding | None, scrub: Scrub
) -> tuple[str, int]:
    limit = CITED_SHOW if cited else LINE_SHOW
    got = files.read(rel, n, PARSE_SHOW + 1)
    if got is None:
        return "", 0
    data, omitted = got
    if not omitted and len(data) <= PARSE_SHOW:
        text = scrub.remember(("jsonl", data), lambda: _whole_line(data, scrub))
        if cited is not None and len(text) > limit:
            return _excerpt(text, cited, limit)
        return _clip(text, limit, 0)
    if cited is not None:
        return _long_line(files, rel, n, cited, scrub)
    text = scrub.fragment(decode(data[:limit]), decode(data[limit : limit + AHEAD]))[0]
    return text, len(data) + omitted - limit


def _whole_line(data: bytes, scrub: Scrub) -> str:
    """A whole JSONL line as a page shows it: parsed and cleaned as a value (in the writers'
    JSON style when cleaning changed it, else as written), a fragment when it does not
    parse."""
    text = decode(data)
    if not scrub.clean:
        return text
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return scrub.fragment(text)[0]
    cleaned = scrub.value(value)
    return json.dumps(cleaned, ensure_ascii=False) if cleaned != value else text


def _excerpt(text: str, f: Finding, limit: int) -> tuple[str, int]:
    """The head of a long (already cleaned) line and the stretch around the evidence."""
    for nd in needles(f):
        i = text.find(nd.decode())
        if i > limit // 2:
            head = text[: limit // 3]
            lo = max(len(head), i - AROUND_MATCH // 2)
            mid = text[lo : lo + AROUND_MATCH]
            return f"{head} … {mid} …", len(text) - len(head) - len(mid)
        if i >= 0:
            break
    return _clip(text, limit, 0)


def _outside_reasoning(
    files: TrialFiles, rel: str, n: int, lo: int, window: bytes, scrub: Scrub
) -> str:
    """``window`` (the text of line ``n`` from byte ``lo``) without the rest of a reasoning
    part it starts inside: the part's ``type`` is looked for in the ``LOOKBACK`` bytes before
    it (a page removes the part from its brace; a window opened past the brace would
    otherwise show its middle); likewise the rest of an inline reasoning span whose opening
    tag is in those bytes and its closing one is not."""
    text = decode(window)
    if not scrub.clean:
        return text
    back = decode(files.read_at(rel, n, max(0, lo - LOOKBACK), min(lo, LOOKBACK)))
    part = open_reasoning_at_end(back)
    if part is not None:
        return after_open_part(text, part)
    inline = open_span_at_end(back)  # inside reasoning written inline (``<think>…``)
    return text if inline is None else after_open_span(text, inline)


def _ahead(files: TrialFiles, rel: str, n: int, at: int, scrub: Scrub) -> str:
    """The ``AHEAD`` bytes of line ``n`` from byte ``at``, for a fragment's reasoning marks
    (nothing to read for a raw page)."""
    return decode(files.read_at(rel, n, at, AHEAD)) if scrub.clean else ""


def _long_line(files: TrialFiles, rel: str, n: int, f: Finding, scrub: Scrub) -> tuple[str, int]:
    """A cited line too long to parse: its head and the bytes around the evidence."""
    span = files.scan(rel).span(n)
    total = span.length if span else 0
    head = files.read_at(rel, n, 0, CITED_SHOW // 3)
    pieces = [scrub.fragment(decode(head), _ahead(files, rel, n, len(head), scrub))[0]]
    shown = len(head)
    for nd in needles(f):
        at = files.find_in_line(rel, n, nd)
        if at is None:
            continue
        if at > len(head):
            lo = max(len(head), at - AROUND_MATCH // 2)
            mid = files.read_at(rel, n, lo, AROUND_MATCH)
            window = _outside_reasoning(files, rel, n, lo, mid, scrub)
            pieces.append(scrub.fragment(window, _ahead(files, rel, n, lo + len(mid), scrub))[0])
            shown += len(mid)
        break
    return " … ".join(pieces) + " …", max(0, total - shown)
