"""``SOURCE_SECRET``: credentials in a trial's own files, reported so their owner can rotate
them.

Every text file the review read (the documents, the trajectories, ``results.jsonl``, the
Harbor logs) is read again as a stream of blocks: the redactor's spans
(:func:`bf_assets.redact.secret_spans`) are looked for in each block, and only a line
with a span is looked at closer.  A JSON file is cut into pieces at each chat message
(``{"role"``, never inside a string), a new message again at each object and only the pieces this process has not seen before are scanned: an
LLM trajectory repeats the whole history in each request, and the trials of a task repeat
their prompts and tools.  In a JSON file the span must hold inside a string of the
file (decoded, as the export cleans it: a key named ``session_id`` next to its value is
not a secret); the finding gives the file, the 1-based line, the JSON key path when the
line or document can be parsed, the kind, and a short excerpt with every span redacted.

Memory is bounded by the block size (a line longer than a block is looked at in
overlapping windows), and findings by :data:`MAX_FINDINGS` a trial, the last one counting
the rest.  A secret repeated over many lines of a file (an LLM trajectory repeats the whole
history in each request) is one finding with the count of its other lines.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from bf_assets.findings import Finding, finding
from bf_assets.ingest.readers import READ_FLAGS, resolve_file
from bf_assets.redact import redact_text

CHECK = "SOURCE_SECRET"
MAX_FINDINGS = 20
BLOCK_BYTES = 1 << 20  # read and scanned at a time
WINDOW_OVERLAP = 4096  # characters a window of a long line shares with the next
PARSE_MAX_CHARS = 1 << 20  # a longer JSON line is not parsed for its key path
EXCERPT_CONTEXT = 40  # characters kept each side of a span
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NO_PATH = "-"
# Where JSON text is cut into pieces: a chat message's start (never inside a JSON string,
# where a quote is escaped), so a piece holds whole strings and a repeated message is one
# repeated piece.
_CUT = '{"role"'
_SUBCUT = '{"'  # a new message is cut again at each object (shared tool definitions, ...)
MAX_KNOWN_PIECES = 100_000  # pieces remembered (then only those with a secret)


@dataclass(slots=True)
class _Hit:
    kind: str
    secret: str
    excerpt: str
    path: str | None = None


@dataclass(slots=True)
class _Seen:
    """What one file has given: its first hit of each secret, and how many lines repeat it."""

    order: list[tuple[str, int, _Hit]] = field(default_factory=list)  # (digest, line, hit)
    again: dict[str, int] = field(default_factory=dict)


# How much of one file is scanned: a run's records and logs whole; of a larger file (an agent
# log of hundreds of MB) its head, where a run prints its environment and set-up.
SCAN_MAX_BYTES = 4 << 20


def source_secret_findings(
    trial_dir: str,
    root: str,
    files: Iterable[str],
    documents: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """The ``SOURCE_SECRET`` findings of the text files ``files`` (paths relative to
    ``trial_dir``); ``documents``: values already parsed of JSON documents among them (for
    the key paths).  Never raises for what a file holds; an unreadable file is skipped (the
    review reports it)."""
    out: list[Finding] = []
    rest = 0
    for rel in files:
        try:
            seen = _scan_file(os.path.join(trial_dir, rel), root, rel, documents or {})
        except (OSError, ValueError, MemoryError, RecursionError):
            continue
        for digest, line, hit in seen.order:
            if len(out) >= MAX_FINDINGS:
                rest += 1
                continue
            out.append(_finding(rel, line, hit, seen.again.get(digest, 0)))
    if rest:
        last = out[-1]
        out[-1] = finding(
            CHECK,
            f"{last.message}; {rest} more credential-shaped strings in this trial's files "
            "are not listed",
            file=last.file,
            line=last.line,
            evidence=last.evidence,
        )
    return out


def _finding(rel: str, line: int, hit: _Hit, again: int) -> Finding:
    where = f"{rel} line {line}" + (f" at {hit.path}" if hit.path else "")
    more = f" (and {again} later lines of the file)" if again else ""
    return finding(
        CHECK,
        f"a credential ({hit.kind}) in {where}{more}: rotate it (no export shows it)",
        file=rel,
        line=line,
        evidence=_evidence(hit),
    )


def _evidence(hit: _Hit) -> str:
    """Where the secret sits and its kind, never the text around it: a neighbouring secret
    that only its decoded context shows (a password in a YAML list inside a JSON string)
    would otherwise be copied out with it."""
    placeholder = f"[REDACTED:{hit.kind}]"
    return redact_text(f"{hit.path} = {placeholder}") if hit.path else placeholder


def _blocks(real: str) -> Iterator[str]:
    """The file's text in blocks (invalid UTF-8 replaced), its first :data:`SCAN_MAX_BYTES`."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = os.open(real, READ_FLAGS)
    left = SCAN_MAX_BYTES
    with os.fdopen(fd, "rb", buffering=0) as fh:
        while True:
            data = fh.read(min(BLOCK_BYTES, left)) if left > 0 else b""
            left -= len(data)
            if not data:
                tail = decoder.decode(b"", final=True)
                if tail:
                    yield tail
                return
            yield decoder.decode(data)


class _Pieces:
    """The pieces of JSON text already scanned in this process (cut at :data:`_CUT`, which
    never occurs inside a JSON string, so a piece holds whole strings), by keyed hash:
    repeated history, prompts and tool definitions are scanned once.  A piece that held
    secrets keeps their digests, so a line that repeats it is looked at again in a file
    that has not shown them yet, and counts as another line of each in one that has."""

    def __init__(self) -> None:
        self.known: dict[int, tuple[str, ...]] = {}

    def split(self, lines: list[str]) -> tuple[list[str], list[int], list[tuple[int, int]]]:
        """``(new pieces, the line index of each, (line index, hash) of the repeats that may
        hold a secret)``: of a piece known to, or first seen in these lines."""
        fresh: list[str] = []
        owner: list[int] = []
        repeats: list[tuple[int, int]] = []
        here: set[int] = set()
        known = self.known
        for i, line in enumerate(lines):
            if len(known) > MAX_KNOWN_PIECES:  # forget what held no secret
                self.known = known = {h: d for h, d in known.items() if d}
                here = {h for h in here if h in known}
            for message in line.split(_CUT):
                h = hash(message)
                got = known.get(h)
                if got is not None:
                    if got or h in here:
                        repeats.append((i, h))
                    continue
                parts = message.split(_SUBCUT)  # a new message: its parts may be known
                if len(parts) > 1:
                    known[h] = ()
                    here.add(h)
                for piece in parts:
                    h = hash(piece)
                    got = known.get(h)
                    if got is None:
                        known[h] = ()
                        here.add(h)
                        fresh.append(piece)
                        owner.append(i)
                    elif got or h in here:
                        repeats.append((i, h))
        return fresh, owner, repeats

    def digests(self, h: int) -> tuple[str, ...]:
        return self.known.get(h, ())

    def holds(self, line: str, secret: str, digest: str) -> None:
        """Remember that the pieces of ``line`` holding ``secret`` hold it."""
        for message in line.split(_CUT):
            if secret in message:
                for piece in (message, *message.split(_SUBCUT)):
                    if secret in piece:
                        h = hash(piece)
                        self.known[h] = (*self.known.get(h, ()), digest)


_PIECES = _Pieces()  # a worker process's own after the fork


def _scan_file(path: str, root: str, rel: str, documents: Mapping[str, Any]) -> _Seen:
    from bf_assets.redact import secret_spans as spans

    seen = _Seen()
    real, _, issue = resolve_file(path, root)
    if issue is not None or real is None:
        return seen
    json_kind = "document" if rel.endswith(".json") else "lines" if rel.endswith(".jsonl") else ""
    pieces = _PIECES if json_kind else None
    last_line: dict[str, int] = {}
    line_no = 1  # the line the text in ``carry`` starts on
    carry = ""
    parsed: list[Any] = []  # the document, parsed once when a hit needs its key path

    def again(digest: str, line: int) -> None:
        if last_line[digest] != line:
            seen.again[digest] = seen.again.get(digest, 0) + 1
            last_line[digest] = line

    def take(text: str, first_line: int, head_cut: bool, tail_cut: bool) -> None:
        lines = text.split("\n")
        if pieces is None:
            candidates = _hit_lines(text, spans)
            repeats: list[tuple[int, int]] = []
        else:
            fresh, owner, repeats = pieces.split(lines)
            candidates = _hit_pieces(fresh, owner, spans)
            for i, h in repeats:  # a piece with a secret this file has not shown yet
                if any(d not in last_line for d in pieces.digests(h)):
                    candidates.add(i)
        hit_lines: set[int] = set()
        for i in sorted(candidates):
            whole = not (head_cut and i == 0) and not (tail_cut and i == len(lines) - 1)
            line = first_line + i
            for hit in _line_hits(lines[i], json_kind, whole, spans):
                hit_lines.add(i)
                digest = hashlib.sha256(hit.secret.encode()).hexdigest()
                if pieces is not None:
                    pieces.holds(lines[i], hit.secret, digest)
                if digest in last_line:
                    again(digest, line)
                    continue
                last_line[digest] = line
                if json_kind == "document" and hit.path is None:
                    hit.path = _document_path(path, root, rel, documents, parsed, hit.secret)
                seen.order.append((digest, line, hit))
        for i, h in repeats:
            if i not in hit_lines and pieces is not None:
                for digest in pieces.digests(h):
                    if digest in last_line:
                        again(digest, first_line + i)

    mid_line = False  # ``carry`` starts inside a line (the overlap of a long line's window)
    for block in _blocks(real):
        carry += block
        cut = carry.rfind("\n") + 1
        if cut:
            take(carry[: cut - 1], line_no, mid_line, False)
            line_no += carry.count("\n", 0, cut)
            carry, mid_line = carry[cut:], False
        elif len(carry) > BLOCK_BYTES + WINDOW_OVERLAP:  # a long line: a window of it
            take(carry, line_no, mid_line, True)
            carry, mid_line = carry[-WINDOW_OVERLAP:], True
    if carry:
        take(carry, line_no, mid_line, False)
    return seen


def _hit_lines(text: str, spans_of: Any) -> set[int]:
    """The indexes of the lines of ``text`` the redactor finds a span in."""
    out: set[int] = set()
    line, counted = 0, 0
    for a, _b, _, _ in sorted(spans_of(text)):
        line += text.count("\n", counted, a)
        counted = a
        out.add(line)
    return out


def _hit_pieces(fresh: list[str], owner: list[int], spans_of: Any) -> set[int]:
    """The lines (indexes) whose new pieces the redactor finds a span in: the pieces are
    scanned as one text, a piece a line."""
    if not fresh:
        return set()
    return {owner[i] for i in _hit_lines("\n".join(fresh), spans_of)}


def _line_hits(line: str, json_kind: str, whole: bool, spans_of: Any) -> list[_Hit]:
    line_spans = list(spans_of(line))
    if not json_kind:
        return [_hit(line, line_spans, sp) for sp in line_spans]
    hits: list[_Hit] = []
    starts = sorted(a for a, _, _, _ in line_spans)
    ends = sorted(b for _, b, _, _ in line_spans)
    for m in _STRING.finditer(line):
        # only a string the line's spans touch (the rest of a long line is not decoded)
        if bisect_left(starts, m.end()) <= bisect_right(ends, m.start()):
            continue
        try:
            value = orjson.loads(m.group())
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, str):
            value_spans = list(spans_of(value))
            hits.extend(_hit(value, value_spans, sp) for sp in value_spans)
    for h in hits:  # the excerpt from the line itself when it holds the secret as is
        at = line.find(h.secret)
        if at >= 0:
            target = (at, at + len(h.secret), 0, h.kind)
            h.excerpt = _excerpt(line, [*line_spans, target], target)
    if not hits and not whole:  # a window of a long line: its strings may be cut
        hits = [_hit(line, line_spans, sp) for sp in line_spans]
    if hits and json_kind == "lines" and whole and len(line) <= PARSE_MAX_CHARS:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = None
        if value is not None:
            for h in hits:
                h.path = _key_path(value, h.secret)
    return hits


Span = tuple[int, int, int, str]


def _hit(text: str, spans: list[Span], span: Span) -> _Hit:
    return _Hit(span[3], text[span[0] : span[1]], _excerpt(text, spans, span))


def _excerpt(text: str, spans: list[Span], target: Span) -> str:
    """The text around ``target`` with every span of ``text`` in it replaced by its
    placeholder; the window never ends inside a span (a cut secret is no longer one)."""
    a, b = target[0], target[1]
    lo, hi = max(0, a - EXCERPT_CONTEXT), min(len(text), b + EXCERPT_CONTEXT)
    ordered = sorted((s, e, kind) for s, e, _, kind in spans)
    moved = True
    while moved:  # spans may overlap: a widened edge may fall inside another one
        moved = False
        for s, e, _ in ordered:
            if s < lo < e:
                lo, moved = s, True
            if s < hi < e:
                hi, moved = e, True
    out: list[str] = []
    pos = lo
    for s, e, kind in ordered:
        if e <= pos or s >= hi:
            continue
        if s > pos:
            out.append(text[pos:s])
        out.append(f"[REDACTED:{kind}]")
        pos = max(pos, e)
    out.append(text[pos:hi])
    return "".join(out)


def _document_path(
    path: str, root: str, rel: str, documents: Mapping[str, Any], parsed: list[Any], secret: str
) -> str | None:
    if not parsed:
        value = documents.get(rel, _NO_PATH)
        if value is _NO_PATH:
            from bf_assets.ingest.readers import DEFAULT_LIMITS, read_document

            value = read_document(path, root, DEFAULT_LIMITS).value
        parsed.append(value)
    return _key_path(parsed[0], secret)


def _key_path(value: Any, secret: str) -> str | None:
    """``$.a.b[2].c`` of the first string (or key) holding ``secret``, walked iteratively."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        v, p = stack.pop()
        if isinstance(v, str):
            if secret in v:
                return p
        elif isinstance(v, dict):
            items = list(v.items())
            for k, child in reversed(items):
                name = f"{p}.{k}" if isinstance(k, str) and _PLAIN_KEY.match(k) else f"{p}[{k!r}]"
                if isinstance(k, str) and secret in k:
                    return f"{p} (a key)"
                stack.append((child, name))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{p}[{i}]"))
    return None


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
