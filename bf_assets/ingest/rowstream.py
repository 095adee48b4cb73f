"""Streaming reader for a rollout ``results.jsonl``.

The row of a long trial is one line of hundreds of MB (every step repeats its prompt), so
the row is never built whole: lines up to the line cap are parsed with orjson; longer ones
are cut at their steps and each step parsed with orjson (:mod:`bf_assets.ingest.fastjson`),
or, when that fast path cannot vouch for the row, read by the exact parser here: the row's
text is decoded block by block and each top-level value and each ``trajectory[]`` step is
parsed on its own by the C scanner of :mod:`json` (``raw_decode`` says where a value ends),
the step handed to ``on_step`` and dropped.  Both give the same result; memory is bounded by
the largest single value (a value over :data:`~bf_assets.ingest.fastjson.STEP_CAP` is not
built: the row is unreadable), time is linear in the row's size.

Lines are found with block-wise byte searches: a run of blank lines of any length costs one
regex search and one newline count per block.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from bf_assets.ingest.fastjson import STEP_CAP, GiveUp, split_row
from bf_assets.ingest.readers import (
    CONTENT,
    DEFAULT_LIMITS,
    FileStats,
    IssueKind,
    MiB,
    ReadIssue,
    ReadLimits,
    depth_cap,
    escape_name,
    new_digest,
    parse_json_bytes,
    read_upto,
    resolve_file,
    value_issue,
)

StepCallback = Callable[[int, Any], None]
DiscardCallback = Callable[[int], None]


@dataclass(slots=True)
class RowRead:
    line: int
    top: Any  # the row without ``trajectory`` (None when the line failed)
    n_steps: int
    trajectory_is_list: bool
    issues: list[ReadIssue]


@dataclass(slots=True)
class RowsRead:
    present: bool = False
    issues: list[ReadIssue] = field(default_factory=list)
    stats: FileStats = field(default_factory=FileStats)
    rows: list[RowRead] = field(default_factory=list)


SPAN_BLOCK = 4 * MiB


def _line_spans(fh: IO[bytes], digest: Any, stats: FileStats) -> Iterator[tuple[int, int, int]]:
    """``(lineno, start, end)`` for each physical line holding something other than
    whitespace: ``start`` is its first such byte, ``end`` its newline (or the end of the
    file).  Hashes the file and fills ``stats`` as it goes; blank lines cost no Python step."""
    lineno = 0
    base = 0  # file offset of the block
    line_start = 0  # file offset of the current physical line
    content: int | None = None  # file offset of the current line's first content byte
    while block := fh.read(SPAN_BLOCK):
        digest.update(block)
        i = 0
        while True:
            if content is None:
                m = CONTENT.search(block, i)
                j = m.start() if m is not None else len(block)
                n = block.count(b"\n", i, j)
                if n:
                    lineno += n
                    line_start = base + block.rfind(b"\n", i, j) + 1
                if m is None:
                    break
                content, i = base + j, j
            e = block.find(b"\n", i)
            if e < 0:
                break
            lineno += 1
            yield lineno, content, base + e
            content, i = None, e + 1
            line_start = base + i
        base += len(block)
    if content is not None:
        lineno += 1
        yield lineno, content, base
    elif line_start < base:
        lineno += 1  # a last line of whitespace without a newline
    stats.size = base
    stats.lines = lineno


# results.jsonl up to this size is read into memory once (rows sliced from it).
SMALL_FILE_BYTES = 4 * 1024 * 1024


def read_rows(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    on_step: StepCallback,
    limits: ReadLimits = DEFAULT_LIMITS,
    *,
    on_discard: DiscardCallback | None = None,
    share: bool = False,
) -> RowsRead:
    """Read every row; each row's steps go to ``on_step(position, step)`` in order.

    A row that fails to parse gives no steps.  On a huge row, steps are handed over while
    the row is read; when the row then turns out unreadable, ``on_discard(n)`` withdraws the
    last ``n`` steps received (a caller without it sees them, followed by the failed row).
    ``share``: a huge row's steps may share their prompt's first messages with the previous
    step (faster; for callers that never modify a step)."""
    out = RowsRead()
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        out.present = issue.kind is not IssueKind.MISSING
        if out.present:
            out.issues.append(issue)
        return out
    assert real is not None
    out.present = True
    name = escape_name(os.path.basename(os.fspath(path)))
    try:
        if size > limits.max_jsonl_bytes:
            out.stats.size = size
            out.issues.append(ReadIssue(IssueKind.TOO_LARGE, f"{name} is over the size cap"))
            return out
        digest = new_digest(limits)
        whole: bytes | None = None  # a small file is read once and its rows sliced from it
        if size <= SMALL_FILE_BYTES:
            whole = read_upto(real, size, SMALL_FILE_BYTES + 1)
            spans = list(_line_spans(io.BytesIO(whole), digest, out.stats))
        else:
            with open(real, "rb", buffering=0) as fh:
                spans = list(_line_spans(fh, digest, out.stats))
        out.stats.sha256 = digest.hexdigest()
        out.stats.read = True
        for lineno, start, end in spans:
            length = end - start
            if length > limits.max_row_bytes:
                msg = f"row of {length} bytes is over the row cap"
                out.rows.append(
                    RowRead(
                        lineno, None, 0, False, [ReadIssue(IssueKind.LINE_TOO_LONG, msg, lineno)]
                    )
                )
                continue
            if length <= limits.max_line_bytes:
                if whole is not None and end <= len(whole):
                    data = whole[start:end]
                else:
                    with open(real, "rb") as fh:
                        fh.seek(start)
                        data = fh.read(length)
                out.rows.append(_parse_small(data, lineno, on_step, limits))
            else:
                out.rows.append(
                    _parse_big(real, start, end, lineno, on_step, limits, on_discard, share)
                )
    except OSError as exc:
        out.issues.append(ReadIssue(IssueKind.IO_ERROR, f"cannot read {name}: {exc.strerror}"))
    return out


def _parse_small(data: bytes, lineno: int, on_step: StepCallback, limits: ReadLimits) -> RowRead:
    value, issues = parse_json_bytes(data.strip(), limits)
    issues = [
        ReadIssue(i.kind, i.message, lineno, data[:160].decode("utf-8", "replace")) for i in issues
    ]
    if not isinstance(value, dict):
        return RowRead(lineno, value, 0, False, issues)
    traj = value.pop("trajectory", None)
    n = 0
    if isinstance(traj, list) and len(traj) > limits.max_row_steps:
        return RowRead(lineno, None, 0, True, [_too_many_steps(limits, lineno)])
    if isinstance(traj, list):
        for n, step in enumerate(traj, start=1):
            on_step(n - 1, step)
    else:
        value["trajectory"] = traj  # keep a non-list value for the shape check
    return RowRead(lineno, value, n, isinstance(traj, list), issues)


def _parse_big(
    real: str,
    start: int,
    end: int,
    lineno: int,
    on_step: StepCallback,
    limits: ReadLimits,
    on_discard: DiscardCallback | None,
    share: bool = False,
) -> RowRead:
    """A row over the line cap: the fast split first, the exact parse when the split gives
    up (steps already handed over are not handed over again)."""
    emitted = 0

    def counted(pos: int, step: Any) -> None:
        nonlocal emitted
        on_step(pos, step)
        emitted += 1

    try:
        with open(real, "rb") as fh:
            fh.seek(start)
            top, n = split_row(fh, end - start, counted, limits, share=share)
        return RowRead(lineno, top, n, True, [])
    except GiveUp:
        pass
    row = _parse_streaming(real, start, end, lineno, counted, limits, skip=emitted)
    if emitted and not isinstance(row.top, dict) and on_discard is not None:
        on_discard(emitted)
    return row


# --------------------------------------------------------------------------- exact parse

TEXT_BLOCK = MiB
_JSON_WS = re.compile(r"[ \t\n\r]*")
_END_WS = re.compile(r"[ \t\n\r\x0b\x0c]*\Z")
# Errors ``raw_decode`` gives for a value cut short by the end of the text read so far.
_TRUNCATED = ("Unterminated string", "Invalid \\uXXXX escape", "Invalid \\escape")


class _Bad(Exception):
    def __init__(self, issue: ReadIssue) -> None:
        self.issue = issue


class _Text:
    """Text of bytes ``[start, end)`` of a file, decoded as it is needed.  ``text[pos:]`` is
    what is not consumed; invalid UTF-8 is replaced (as the small path does) and noted."""

    __slots__ = ("fh", "left", "text", "pos", "decoder", "replaced")

    def __init__(self, fh: IO[bytes], length: int) -> None:
        self.fh = fh
        self.left = length
        self.text = ""
        self.pos = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.replaced = False

    @property
    def eof(self) -> bool:
        return self.left <= 0

    def more(self, want: int = TEXT_BLOCK) -> bool:
        """Decode at least ``want`` more bytes (the consumed text is dropped first)."""
        if self.left <= 0:
            return False
        data = self.fh.read(min(self.left, max(want, TEXT_BLOCK)))
        self.left = self.left - len(data) if data else 0
        try:
            text = self.decoder.decode(data, self.left <= 0)
        except UnicodeDecodeError:
            self.decoder.errors = "replace"  # read at each call; the failed call left no state
            self.replaced = True
            text = self.decoder.decode(data, self.left <= 0)
        self.text = self.text[self.pos :] + text
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character after JSON whitespace ("" at the end); the whitespace is
        consumed (and a run of it longer than the text read is dropped, never held)."""
        while True:
            self.pos = _JSON_WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            self.text, self.pos = "", 0
            if not self.more():
                return ""


class _Decoder(json.JSONDecoder):
    """``json`` as orjson reads values: NaN/Infinity counted and read as null, a float that
    overflows to infinity refused."""

    def __init__(self) -> None:
        self.nonfinite = 0
        super().__init__(parse_constant=self._constant, parse_float=_finite_float)

    def _constant(self, name: str) -> None:
        self.nonfinite += 1
        return None


def _finite_float(text: str) -> float:
    f = float(text)
    if f in (float("inf"), float("-inf")):
        raise ValueError(f"number is infinity when parsed as double: {text[:40]}")
    return f


def _value(tx: _Text, dec: _Decoder, limits: ReadLimits, level: int, lineno: int) -> Any:
    """Parse the value at ``tx.pos`` (reading on until it is whole) and check its depth."""
    while True:
        text, pos = tx.text, tx.pos
        seen = dec.nonfinite  # a retry must not count the same literals twice
        try:
            value, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            dec.nonfinite = seen
            cut = exc.pos >= len(text) - 12 or exc.msg.startswith(_TRUNCATED)
            if cut and _grow(tx, lineno):
                continue
            raise _Bad(_invalid_text(tx, f"not valid JSON: {exc}", lineno)) from None
        except RecursionError:
            raise _Bad(_too_deep(limits, lineno)) from None
        except ValueError as exc:  # a float overflow, an integer of too many digits
            raise _Bad(_invalid_text(tx, f"not valid JSON: {exc}", lineno)) from None
        if end >= len(text) and _grow(tx, lineno):
            dec.nonfinite = seen
            continue  # a number (or literal) may go on in the next block
        # json, unlike orjson, reads integers past 64 bits and lone surrogates: one orjson
        # write (C speed) checks those and the depth together.
        bad = value_issue(value, limits, level)
        if bad is not None:
            raise _Bad(ReadIssue(bad.kind, bad.message, lineno))
        tx.pos = end
        return value


def _grow(tx: _Text, lineno: int) -> bool:
    """Read more for the value being parsed (doubling: linear in its size); False at the
    end of the row.  A value over the cap is refused, never built."""
    pending = len(tx.text) - tx.pos
    if tx.eof:
        return False
    if pending > STEP_CAP:
        msg = f"a value of the row is over the {STEP_CAP // MiB} MiB value cap"
        raise _Bad(ReadIssue(IssueKind.LINE_TOO_LONG, msg, lineno))
    # The text grows fourfold (re-parsing costs at most 4/3 of the value), never much
    # past the cap.
    return tx.more(min(3 * pending, STEP_CAP + TEXT_BLOCK - pending))


def _invalid_text(tx: _Text, message: str, lineno: int) -> ReadIssue:
    if tx.replaced:
        return ReadIssue(IssueKind.INVALID_UTF8, "invalid UTF-8 prevents parsing", lineno)
    return ReadIssue(IssueKind.INVALID_JSON, message, lineno)


def _expect(tx: _Text, chars: str, what: str, lineno: int) -> str:
    c = tx.peek()
    if not c or c not in chars:
        raise _Bad(_invalid_text(tx, f"not valid JSON: expected {what}", lineno))
    tx.pos += 1
    return c


def _parse_streaming(
    real: str,
    start: int,
    end: int,
    lineno: int,
    on_step: StepCallback,
    limits: ReadLimits,
    *,
    skip: int = 0,
) -> RowRead:
    """Exact parse of one huge row: top-level values built, steps handed off one by one
    (the first ``skip`` parsed but not handed over: the fast path already did)."""
    top: dict[str, Any] = {}
    state = {"n": 0, "list": False}
    dec = _Decoder()
    with open(real, "rb") as fh:
        fh.seek(start)
        tx = _Text(fh, end - start)
        try:
            _walk_row(tx, dec, top, state, on_step, limits, lineno, skip)
        except _Bad as bad:
            return RowRead(lineno, None, state["n"], state["list"], [bad.issue])
    issues: list[ReadIssue] = []
    if tx.replaced:
        issues.append(
            ReadIssue(IssueKind.REPLACED_UTF8, "invalid UTF-8 bytes were replaced", lineno)
        )
    if dec.nonfinite:
        msg = f"{dec.nonfinite} NaN/Infinity literal(s) read as null"
        issues.append(ReadIssue(IssueKind.NONFINITE, msg, lineno))
    if not state["list"] and "trajectory" not in top:
        top["trajectory"] = None
    return RowRead(lineno, top, state["n"], state["list"], issues)


def _walk_row(
    tx: _Text,
    dec: _Decoder,
    top: dict[str, Any],
    state: dict[str, Any],
    on_step: StepCallback,
    limits: ReadLimits,
    lineno: int,
    skip: int,
) -> None:
    if tx.peek() != "{":
        raise _Bad(ReadIssue(IssueKind.INVALID_JSON, "row is not a JSON object", lineno))
    tx.pos += 1
    closer = "}" if tx.peek() == "}" else ""
    if closer:
        tx.pos += 1
    while not closer:
        if tx.peek() != '"':
            raise _Bad(_invalid_text(tx, "not valid JSON: expected a key", lineno))
        key = _value(tx, dec, limits, 2, lineno)
        _expect(tx, ":", "':'", lineno)
        if key == "trajectory" and tx.peek() == "[":
            if state["list"]:
                msg = "the row has two trajectory lists"
                raise _Bad(ReadIssue(IssueKind.INVALID_JSON, msg, lineno))
            state["list"] = True
            top.pop("trajectory", None)
            tx.pos += 1
            if tx.peek() == "]":
                tx.pos += 1
            else:
                _walk_steps(tx, dec, state, on_step, limits, lineno, skip)
        else:
            tx.peek()
            top[key] = _value(tx, dec, limits, 2, lineno)
            if key == "trajectory" and state["list"]:
                msg = "the row has two trajectory keys"
                raise _Bad(ReadIssue(IssueKind.INVALID_JSON, msg, lineno))
        closer = "}" if _expect(tx, ",}", "',' or '}'", lineno) == "}" else ""
    # nothing but whitespace may follow the object
    while True:
        if _END_WS.match(tx.text, tx.pos) is None:
            msg = "extra data after the row object"
            raise _Bad(ReadIssue(IssueKind.INVALID_JSON, msg, lineno))
        tx.text, tx.pos = "", 0
        if not tx.more():
            return


BATCH_CHARS = 256 * 1024  # small steps are parsed this much at a time
SMALL_STEP_CHARS = 4096


def _walk_steps(
    tx: _Text,
    dec: _Decoder,
    state: dict[str, Any],
    on_step: StepCallback,
    limits: ReadLimits,
    lineno: int,
    skip: int,
) -> None:
    """The steps of the trajectory list (its ``[`` consumed), up to and with its ``]``.

    Small steps are parsed many at a time: the text up to the last ``},`` of the next
    :data:`BATCH_CHARS` is parsed as one list, which succeeds only when that ``}`` ends a
    step (a JSON value cut anywhere else does not parse), so the steps are the ones parsed
    one by one.  When it does not parse, steps go one at a time for a while (doubling)."""
    last = SMALL_STEP_CHARS  # size of the last step parsed alone
    wait = 0  # single steps to go before the next batch attempt
    backoff = 1
    while True:
        if state["n"] >= limits.max_row_steps:  # the rest is not read: the row is refused
            raise _Bad(_too_many_steps(limits, lineno))
        tx.peek()
        if last < SMALL_STEP_CHARS and wait <= 0:
            steps = _batch(tx, dec, limits)
            if steps is None:
                wait, backoff = backoff, backoff * 2
            else:
                backoff = 1
                for step in steps:
                    if state["n"] >= limits.max_row_steps:
                        raise _Bad(_too_many_steps(limits, lineno))
                    if state["n"] >= skip:
                        on_step(state["n"], step)
                    state["n"] += 1
                del steps
                if _expect(tx, ",]", "',' or ']'", lineno) == "]":
                    return
                continue
        wait -= 1
        start = tx.pos
        step = _value(tx, dec, limits, 3, lineno)
        last = tx.pos - start if tx.pos >= start else SMALL_STEP_CHARS
        if state["n"] >= skip:
            on_step(state["n"], step)
        state["n"] += 1
        del step
        if _expect(tx, ",]", "',' or ']'", lineno) == "]":
            return


def _batch(tx: _Text, dec: _Decoder, limits: ReadLimits) -> list[Any] | None:
    """Several whole steps from ``tx.pos`` (consumed), or None (nothing consumed)."""
    if len(tx.text) - tx.pos < BATCH_CHARS and not tx.eof:
        tx.more()
    text, pos = tx.text, tx.pos
    cut = text.rfind("},", pos, pos + BATCH_CHARS)
    if cut < 0:
        return None
    seen = dec.nonfinite
    try:
        steps = dec.decode("[" + text[pos : cut + 1] + "]")
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        dec.nonfinite = seen
        return None
    if value_issue(steps, limits, 2) is not None:
        dec.nonfinite = seen
        return None  # one at a time: the step at fault is reported as such
    tx.pos = cut + 1
    return steps  # type: ignore[no-any-return]


def _too_many_steps(limits: ReadLimits, lineno: int) -> ReadIssue:
    msg = f"the row holds more than {limits.max_row_steps} steps (the step cap)"
    return ReadIssue(IssueKind.TOO_LARGE, msg, lineno)


def _too_deep(limits: ReadLimits, lineno: int) -> ReadIssue:
    return ReadIssue(IssueKind.TOO_DEEP, f"nesting deeper than {depth_cap(limits)} levels", lineno)
