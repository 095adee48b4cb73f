"""Bounded access to the lines of a trial's files.

A page needs a few lines of each file: the lines findings cite and a few around them, the
first and last steps of a trajectory.  :class:`TrialFiles` collects what every part of the
page wants, then reads each file once as a stream (``readline`` in 1 MiB pieces: a 150 MB
single-line file costs one piece of memory), remembering only the byte spans of the wanted
lines; the lines are then read back by span, each up to a byte limit.  Files are opened only
through :func:`bf_assets.ingest.readers.resolve_file` (no special files, no link out of the
run root), and only paths inside the trial directory are accepted.
"""

from __future__ import annotations

import errno
import os
import stat
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from bf_assets.ingest.readers import resolve_file

MiB = 1024 * 1024
PIECE = MiB
# Files up to this size keep the span of every line (a finding without a line is located
# in them by its evidence); bigger files keep only the spans that were asked for.
SMALL_FILE = 8 * MiB
MAX_ALL_SPANS = 500_000  # a small file of more lines keeps only the wanted spans too
# Files up to this size are read in one piece and their lines served from memory (most
# trajectories and documents of a trial); bigger ones are streamed.
WHOLE_FILE = 256 * 1024
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


@dataclass(frozen=True, slots=True)
class Span:
    start: int  # byte offset of the line
    length: int  # bytes, newline included


@dataclass(slots=True)
class FileScan:
    rel: str
    problem: str | None = None  # why the file cannot be shown ("absent", a link escape, ...)
    size: int = 0
    lines: int = 0
    spans: dict[int, Span] = field(default_factory=dict)
    all_spans: array[int] | None = None  # line starts of a small file (index = line - 1)
    found: dict[bytes, int] = field(default_factory=dict)  # needle -> first line holding it
    data: bytes | None = None  # the whole file, when it is at most WHOLE_FILE bytes

    def span(self, line: int) -> Span | None:
        hit = self.spans.get(line)
        if hit is not None or self.all_spans is None:
            return hit
        if not 1 <= line <= len(self.all_spans):
            return None
        start = self.all_spans[line - 1]
        end = self.all_spans[line] if line < len(self.all_spans) else self.size
        return Span(start, end - start)


@dataclass(slots=True)
class _Want:
    lines: set[int] = field(default_factory=set)
    head: int = 0
    tail: int = 0
    needles: set[bytes] = field(default_factory=set)


def safe_rel(rel: str) -> str | None:
    """``rel`` as a posix path inside the trial directory, or None (absolute, ``..``)."""
    p = PurePosixPath(rel.replace("\\", "/"))
    parts = [x for x in p.parts if x not in ("", ".")]
    if p.is_absolute() or not parts or ".." in parts:
        return None
    return "/".join(parts)


class TrialFiles:
    """The wanted lines of one trial's files: ``want`` from every part of the page, then
    ``scan`` once, then ``read`` lines by number."""

    def __init__(self, trial_dir: str, root: str) -> None:
        self.trial_dir = trial_dir
        self.root = root
        self._want: dict[str, _Want] = {}
        self._scans: dict[str, FileScan] = {}
        self._handles: dict[str, IO[bytes]] = {}

    def want(
        self,
        rel: str,
        lines: Iterable[int] = (),
        *,
        head: int = 0,
        tail: int = 0,
        needles: Iterable[bytes] = (),
    ) -> None:
        w = self._want.setdefault(rel, _Want())
        w.lines.update(n for n in lines if n > 0)
        w.head = max(w.head, head)
        w.tail = max(w.tail, tail)
        w.needles.update(n for n in needles if n)

    def path(self, rel: str) -> str:
        return os.path.join(self.trial_dir, *rel.split("/"))

    def scan(self, rel: str) -> FileScan:
        hit = self._scans.get(rel)
        if hit is None:
            hit = self._scans[rel] = self._scan(rel, self._want.get(rel, _Want()))
        return hit

    def _scan(self, rel: str, w: _Want) -> FileScan:
        out = FileScan(rel)
        full = self.path(rel)
        try:
            is_dir = stat.S_ISDIR(os.lstat(full).st_mode)  # a directory, not a link to one
        except OSError as exc:
            if exc.errno not in _ABSENT:  # what Path.is_dir does not swallow either
                raise
            is_dir = False
        if is_dir:
            out.problem = "a directory"
            return out
        real, size, issue = resolve_file(full, self.root)
        if issue is not None:
            out.problem = issue.message
            return out
        assert real is not None
        out.size = size
        if size <= WHOLE_FILE:
            with open(real, "rb", buffering=0) as fh:
                data = fh.read(WHOLE_FILE + 1)
            if len(data) <= WHOLE_FILE:
                return self._scan_bytes(out, w, data)
        small = size <= SMALL_FILE
        starts: array[int] | None = array("q") if small else None
        needles = sorted(w.needles) if small else []
        overlap = max((len(n) for n in needles), default=1) - 1
        tail: deque[tuple[int, Span]] = deque(maxlen=max(w.tail, 0) or None)
        keep_tail = w.tail > 0
        lineno = pos = 0
        with open(real, "rb", buffering=PIECE) as fh:
            while True:
                piece = fh.readline(PIECE)
                if not piece:
                    break
                lineno += 1
                start, length = pos, len(piece)
                if needles:
                    self._look(out, needles, piece, lineno)
                while not piece.endswith(b"\n"):
                    more = fh.readline(PIECE)
                    if not more:
                        break
                    if needles:
                        self._look(
                            out, needles, piece[-overlap:] + more if overlap else more, lineno
                        )
                    length += len(more)
                    piece = more
                pos += length
                if starts is not None:
                    starts.append(start)
                    if len(starts) > MAX_ALL_SPANS:
                        starts = None
                span = Span(start, length)
                if lineno <= w.head or lineno in w.lines:
                    out.spans[lineno] = span
                if keep_tail:
                    tail.append((lineno, span))
        out.lines = lineno
        out.size = pos
        for n, span in tail:
            out.spans[n] = span
        out.all_spans = starts
        return out

    @staticmethod
    def _scan_bytes(out: FileScan, w: _Want, data: bytes) -> FileScan:
        """What :meth:`_scan` finds, from the whole file in memory (the same lines, spans
        and needles: a needle counts where it lies inside one line, its newline included)."""
        starts = array("q")
        pos, n = 0, len(data)
        find = data.find
        while pos < n:
            starts.append(pos)
            nl = find(b"\n", pos)
            pos = n if nl < 0 else nl + 1
        lines = len(starts)

        def span(line: int) -> Span:
            start = starts[line - 1]
            end = starts[line] if line < lines else n
            return Span(start, end - start)

        for line in range(1, min(w.head, lines) + 1):
            out.spans[line] = span(line)
        for line in sorted(w.lines):
            if w.head < line <= lines:
                out.spans[line] = span(line)
        if w.tail > 0:
            for line in range(max(1, lines - w.tail + 1), lines + 1):
                out.spans[line] = span(line)
        for needle in sorted(w.needles):
            if b"\n" in needle[:-1]:
                continue  # crosses a line end: in no one line
            at = find(needle)
            if at >= 0:
                out.found[needle] = bisect_right(starts, at)
        out.lines = lines
        out.size = n
        out.all_spans = starts if lines <= MAX_ALL_SPANS else None
        out.data = data
        return out

    @staticmethod
    def _look(out: FileScan, needles: list[bytes], data: bytes, lineno: int) -> None:
        for n in needles:
            if n not in out.found and n in data:
                out.found[n] = lineno

    def _handle(self, rel: str) -> IO[bytes] | None:
        fh = self._handles.get(rel)
        if fh is None:
            real, _, issue = resolve_file(self.path(rel), self.root)
            if issue is not None or real is None:
                return None
            fh = self._handles[rel] = open(real, "rb")  # noqa: SIM115 (closed by close())
        return fh

    def read(self, rel: str, line: int, limit: int) -> tuple[bytes, int] | None:
        """Up to ``limit`` bytes of a line (its newline dropped) and the bytes left out; None
        when the line was not scanned."""
        scan = self.scan(rel)
        span = scan.span(line)
        if span is not None and scan.data is not None:
            return _read_span(scan.data, span, limit)
        fh = self._handle(rel) if span is not None else None
        if span is None or fh is None:
            return None
        body = span.length
        fh.seek(span.start)
        data = fh.read(min(limit, body))
        if len(data) == body:  # the whole line: drop its line end
            data = data.rstrip(b"\r\n")
            return data, 0
        omitted = body - len(data)
        # the bytes left out, less the line end, when the line ends in one
        fh.seek(span.start + body - 1)
        if fh.read(1) == b"\n":
            omitted -= 1
        return data, max(omitted, 0)

    def find_in_line(self, rel: str, line: int, needle: bytes) -> int | None:
        """Offset of ``needle`` inside a line, streamed in pieces (any line length)."""
        scan = self.scan(rel)
        span = scan.span(line)
        if span is not None and scan.data is not None and needle:
            at = scan.data.find(needle, span.start, span.start + span.length)
            return None if at < 0 else at - span.start
        fh = self._handle(rel) if span is not None else None
        if span is None or fh is None or not needle:
            return None
        fh.seek(span.start)
        done = 0
        carry = b""
        while done < span.length:
            chunk = fh.read(min(PIECE, span.length - done))
            if not chunk:
                break
            data = carry + chunk
            i = data.find(needle)
            if i >= 0:
                return done - len(carry) + i
            carry = data[-(len(needle) - 1) :] if len(needle) > 1 else b""
            done += len(chunk)
        return None

    def read_at(self, rel: str, line: int, offset: int, limit: int) -> bytes:
        scan = self.scan(rel)
        span = scan.span(line)
        if span is not None and scan.data is not None:
            offset = max(0, min(offset, span.length))
            start = span.start + offset
            return scan.data[start : start + max(0, min(limit, span.length - offset))]
        fh = self._handle(rel) if span is not None else None
        if span is None or fh is None:
            return b""
        offset = max(0, min(offset, span.length))
        fh.seek(span.start + offset)
        return fh.read(max(0, min(limit, span.length - offset)))

    def close(self) -> None:
        for fh in self._handles.values():
            fh.close()
        self._handles.clear()

    def __enter__(self) -> TrialFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_span(data: bytes, span: Span, limit: int) -> tuple[bytes, int]:
    """:meth:`TrialFiles.read` of a line of a file held in memory."""
    body = span.length
    got = data[span.start : span.start + min(limit, body)]
    if len(got) == body:  # the whole line: drop its line end
        return got.rstrip(b"\r\n"), 0
    omitted = body - len(got)
    if data[span.start + body - 1 : span.start + body] == b"\n":
        omitted -= 1
    return got, max(omitted, 0)


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
