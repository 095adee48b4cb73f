"""Bounded, streaming readers for the JSON and JSONL files of a trial.

Nothing here raises on bad input: every problem becomes a :class:`ReadIssue` that the
caller turns into a finding on the trial (``GATE_UNREADABLE`` or the file's own gate id).
Memory stays flat whatever the file size: JSONL is read a line at a time with a line cap,
over-long lines are skipped without being held, and whole-document JSON has a size cap.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson

MiB = 1024 * 1024
BIG_BUFFER = MiB


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Caps applied to every read.  The defaults fit real Benchflow output with room to spare."""

    max_document_bytes: int = 64 * MiB  # config.json, result.json, ... (real maximum seen ~1 MB)
    max_jsonl_bytes: int = 16 * 1024 * MiB  # a trajectory file
    max_line_bytes: int = 16 * MiB  # one JSONL line (an LLM exchange; largest real ones < 1 MB)
    max_row_bytes: int = 4 * 1024 * MiB  # the one results.jsonl row, parsed as a stream
    max_depth: int = 1024  # JSON nesting (orjson's own limit; a lower value adds a check pass)


DEFAULT_LIMITS = ReadLimits()


class IssueKind(StrEnum):
    MISSING = "missing"
    SPECIAL_FILE = "special_file"
    LINK_ESCAPE = "link_escape"
    TOO_LARGE = "too_large"
    LINE_TOO_LONG = "line_too_long"
    INVALID_UTF8 = "invalid_utf8"  # could not be parsed even after replacement
    REPLACED_UTF8 = "replaced_utf8"  # invalid bytes replaced, the value parsed
    NONFINITE = "nonfinite"  # NaN / Infinity read as null
    INVALID_JSON = "invalid_json"
    TOO_DEEP = "too_deep"
    IO_ERROR = "io_error"


# Kinds after which the file (or line) could not be used at all.
FATAL_KINDS = frozenset(
    {
        IssueKind.MISSING,
        IssueKind.SPECIAL_FILE,
        IssueKind.LINK_ESCAPE,
        IssueKind.TOO_LARGE,
        IssueKind.IO_ERROR,
    }
)
# Kinds that are about reading safely (GATE_UNREADABLE) rather than about JSON content.
UNREADABLE_KINDS = frozenset(
    {
        IssueKind.SPECIAL_FILE,
        IssueKind.LINK_ESCAPE,
        IssueKind.TOO_LARGE,
        IssueKind.LINE_TOO_LONG,
        IssueKind.INVALID_UTF8,
        IssueKind.TOO_DEEP,
        IssueKind.IO_ERROR,
    }
)


@dataclass(frozen=True, slots=True)
class ReadIssue:
    kind: IssueKind
    message: str
    line: int | None = None
    excerpt: str | None = None


@dataclass(slots=True)
class FileStats:
    """Inventory facts gathered while the file is read (one pass: size, sha256, lines)."""

    size: int = 0
    sha256: str | None = None
    lines: int = 0


# --------------------------------------------------------------------------- file safety


_REAL_DIRS: dict[str, str] = {}
_REAL_DIRS_MAX = 8192


def _real_dir(d: str) -> str:
    """``realpath`` of a directory, cached: files of one trial share their parents, and
    trials share their job's.  A directory that is not a link resolves to its parent's real
    path plus its name: one ``lstat`` for a new trial directory instead of one per component
    (iterative, so any depth is fine)."""
    hit = _REAL_DIRS.get(d)
    if hit is not None:
        return hit
    names: list[str] = []  # plain (non-link) components below the nearest resolved parent
    cur = d
    while True:
        parent, name = os.path.split(cur)
        if not name or parent == cur or not os.path.isabs(cur) or name in (".", ".."):
            base = os.path.realpath(cur)
            break
        try:
            is_link = stat.S_ISLNK(os.lstat(cur).st_mode)
        except OSError:
            is_link = True  # let realpath decide what an unreadable component is
        if is_link:
            base = os.path.realpath(cur)
            break
        names.append(name)
        cached = _REAL_DIRS.get(parent)
        if cached is not None:
            base = cached
            break
        cur = parent
    real = os.path.join(base, *reversed(names)) if names else base
    if len(_REAL_DIRS) >= _REAL_DIRS_MAX:
        _REAL_DIRS.clear()
    _REAL_DIRS[d] = real
    return real


def clear_path_cache() -> None:
    """Forget resolved directories (call before a new review: links may have changed)."""
    _REAL_DIRS.clear()


def _name(path: str | os.PathLike[str]) -> str:
    return os.path.basename(os.fspath(path))


class Resolved(NamedTuple):
    real: str | None  # the real path to open, or None with an issue
    size: int  # its size in bytes (from the same stat call)
    issue: ReadIssue | None


def resolve_file(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Resolved:
    """The real path to open and its size, or an issue: absent, special, or a link leaving
    ``root``.  Strings all the way (the hot path of every read)."""
    sp = os.fspath(path)
    name = os.path.basename(sp)
    try:
        st = os.lstat(sp)
    except FileNotFoundError:
        return Resolved(None, 0, ReadIssue(IssueKind.MISSING, f"{name} is absent"))
    except OSError as exc:
        return Resolved(
            None, 0, ReadIssue(IssueKind.IO_ERROR, f"cannot stat {name}: {exc.strerror}")
        )
    # Resolve the whole path, not only its last component: a linked parent directory
    # (``trajectory -> /elsewhere``) must not carry a read outside the run root.
    link = stat.S_ISLNK(st.st_mode)
    try:
        if link:
            real_s = os.path.realpath(sp)
        else:
            real_s = os.path.join(_real_dir(os.path.dirname(sp)), name)
        real_root = _real_dir(os.fspath(root))
    except OSError as exc:
        return Resolved(None, 0, ReadIssue(IssueKind.IO_ERROR, f"cannot resolve {name}: {exc}"))
    if real_s != real_root and not real_s.startswith(real_root.rstrip(os.sep) + os.sep):
        return Resolved(
            None,
            0,
            ReadIssue(
                IssueKind.LINK_ESCAPE, f"{name} resolves through a link that leaves the run root"
            ),
        )
    if link:
        try:
            st = os.stat(real_s)
        except OSError:
            return Resolved(None, 0, ReadIssue(IssueKind.MISSING, f"{name} is a dangling link"))
    if not stat.S_ISREG(st.st_mode):
        return Resolved(
            None,
            0,
            ReadIssue(IssueKind.SPECIAL_FILE, f"{name} is not a regular file; not opened"),
        )
    return Resolved(real_s, st.st_size, None)


def file_exists(path: Path) -> bool:
    """True when something (even a broken link or special file) sits at ``path``."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------- value parsing


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))
    return False


_ORJSON_DEPTH = 1024


def parse_json_bytes(
    data: bytes, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[Any, list[ReadIssue]]:
    """Parse one JSON value; return ``(value, issues)``.  ``value`` is None when it failed.

    Handles invalid UTF-8 (replaced, with a warning, when the rest parses), NaN/Infinity
    literals (read as null, with a warning) and nesting beyond ``limits.max_depth``.
    """
    # orjson refuses nesting past 1024 itself; a lower cap needs an explicit walk, done only
    # when the line has more opening brackets than the cap (a value cannot nest deeper).
    may_be_deep = (
        limits.max_depth < _ORJSON_DEPTH and data.count(b"[") + data.count(b"{") > limits.max_depth
    )
    try:
        value = orjson.loads(data)
        issues: list[ReadIssue] = []
    except orjson.JSONDecodeError as exc:
        value, issues = _parse_fallback(data, str(exc), limits)
        if value is None:
            return None, issues
    if may_be_deep and _depth_exceeds(value, limits.max_depth):
        return None, [_too_deep(limits)]
    return value, issues


def _too_deep(limits: ReadLimits) -> ReadIssue:
    return ReadIssue(IssueKind.TOO_DEEP, f"nesting deeper than {limits.max_depth} levels")


def _parse_fallback(data: bytes, error: str, limits: ReadLimits) -> tuple[Any, list[ReadIssue]]:
    """Second chance after orjson refused: invalid UTF-8 replaced, NaN/Infinity read as null."""
    if "depth limit" in error or "recursion" in error:
        return None, [_too_deep(limits)]
    issues: list[ReadIssue] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        issues.append(ReadIssue(IssueKind.REPLACED_UTF8, "invalid UTF-8 bytes were replaced"))
        try:
            return orjson.loads(text), issues
        except orjson.JSONDecodeError as exc:
            error = str(exc)
    if "NaN" in text or "Infinity" in text:
        seen: list[str] = []

        def _constant(name: str) -> None:
            seen.append(name)
            return None

        try:
            value = json.loads(text, parse_constant=_constant)
        except RecursionError:
            return None, [_too_deep(limits)]
        except ValueError as exc:
            return None, [_invalid(issues, str(exc))]
        if seen:
            issues.append(
                ReadIssue(IssueKind.NONFINITE, f"{len(seen)} NaN/Infinity literal(s) read as null")
            )
        return value, issues
    return None, [_invalid(issues, error)]


def _invalid(issues: list[ReadIssue], error: str) -> ReadIssue:
    if issues and issues[0].kind is IssueKind.REPLACED_UTF8:
        return ReadIssue(IssueKind.INVALID_UTF8, f"invalid UTF-8 prevents parsing ({error})")
    return ReadIssue(IssueKind.INVALID_JSON, f"not valid JSON: {error}")


# --------------------------------------------------------------------------- documents


@dataclass(slots=True)
class Document:
    """A whole-file JSON document (config.json, result.json, ...)."""

    value: Any = None
    issues: list[ReadIssue] = field(default_factory=list)
    stats: FileStats = field(default_factory=FileStats)
    present: bool = False

    @property
    def ok(self) -> bool:
        """Present and parsed (warnings such as replaced UTF-8 allowed)."""
        return self.present and self.value is not None


def read_document(
    path: str | os.PathLike[str], root: str | os.PathLike[str], limits: ReadLimits = DEFAULT_LIMITS
) -> Document:
    doc = Document()
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        doc.present = issue.kind is not IssueKind.MISSING
        if doc.present:
            doc.issues.append(issue)
        return doc
    doc.present = True
    assert real is not None
    try:
        data = read_upto(real, size, limits.max_document_bytes + 1)
    except OSError as exc:
        doc.issues.append(
            ReadIssue(IssueKind.IO_ERROR, f"cannot read {_name(path)}: {exc.strerror}")
        )
        return doc
    doc.stats = FileStats(
        size=len(data), sha256=hashlib.sha256(data).hexdigest(), lines=_count_lines(data)
    )
    if len(data) > limits.max_document_bytes:
        doc.stats = FileStats(size=size)
        doc.issues.append(
            ReadIssue(
                IssueKind.TOO_LARGE,
                f"{_name(path)} is over the {_cap_text(limits.max_document_bytes)} cap",
            )
        )
        return doc
    if not data.strip():
        doc.issues.append(ReadIssue(IssueKind.INVALID_JSON, f"{_name(path)} is empty"))
        return doc
    doc.value, issues = parse_json_bytes(data, limits)
    doc.issues.extend(issues)
    return doc


def read_upto(real: str, size_hint: int, limit: int) -> bytes:
    """At most ``limit`` bytes of a file, through an unbuffered read sized by ``size_hint``
    (its stat size): no buffer of ``limit`` bytes is allocated for a small file, and a file
    that grew since its stat is still read up to ``limit``."""
    chunks: list[bytes] = []
    got = 0
    want = min(size_hint + 1, limit)
    with open(real, "rb", buffering=0) as fh:
        while got < limit:
            chunk = fh.read(min(want, limit - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            want = MiB  # past the stat size: keep going in 1 MiB reads
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _count_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


# --------------------------------------------------------------------------- JSONL


@dataclass(slots=True)
class JsonlLine:
    line: int  # 1-based physical line number
    value: Any  # parsed value, None when the line failed
    size: int  # bytes of the line
    issues: list[ReadIssue]


@dataclass(slots=True)
class JsonlFile:
    """State of one JSONL read; ``lines`` is a generator consumed once by the scanner."""

    present: bool = False
    issues: list[ReadIssue] = field(default_factory=list)  # file-level issues
    stats: FileStats = field(default_factory=FileStats)


# JSONL files up to this size are read in one call (lines taken from memory).
SMALL_JSONL = 1024 * 1024

LineParse = Callable[[bytes, ReadLimits], tuple[Any, list[ReadIssue]]]


def iter_jsonl(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    state: JsonlFile,
    limits: ReadLimits = DEFAULT_LIMITS,
    *,
    line_cap: int | None = None,
    parse: LineParse | None = None,
) -> Iterator[JsonlLine]:
    """Yield each non-blank line parsed; fill ``state`` with file issues and inventory stats.

    A line over the cap is consumed in chunks and skipped (never held whole); it yields a
    :class:`JsonlLine` with a ``LINE_TOO_LONG`` issue so the caller can count it.  ``parse``
    replaces :func:`parse_json_bytes` (it must return the same; see ``llmparse``).
    """
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        state.present = issue.kind is not IssueKind.MISSING
        if state.present:
            state.issues.append(issue)
        return
    assert real is not None
    state.present = True
    cap = line_cap or limits.max_line_bytes
    try:
        if size > limits.max_jsonl_bytes:
            state.stats.size = size
            state.issues.append(
                ReadIssue(
                    IssueKind.TOO_LARGE,
                    f"{_name(path)} is over the {_cap_text(limits.max_jsonl_bytes)} cap",
                )
            )
            return
        digest = hashlib.sha256()
        parse = parse or parse_json_bytes
        # A small file is read in one call and its lines taken from memory; a big file reads
        # faster through a big buffer (its long lines are not rebuilt from 8 KiB pieces).
        small = read_upto(real, size, SMALL_JSONL + 1) if size <= SMALL_JSONL else None
        if small is not None and len(small) <= SMALL_JSONL:
            yield from _jsonl_lines(io.BytesIO(small), digest, state, cap, limits, parse)
        else:  # big, or grew past the small size since its stat
            with open(real, "rb", buffering=BIG_BUFFER if size > BIG_BUFFER else -1) as fh:
                yield from _jsonl_lines(fh, digest, state, cap, limits, parse)
        state.stats.sha256 = digest.hexdigest()
    except OSError as exc:
        state.issues.append(
            ReadIssue(IssueKind.IO_ERROR, f"cannot read {_name(path)}: {exc.strerror}")
        )


def _cap_text(cap: int) -> str:
    return f"{cap // MiB} MiB" if cap >= MiB else f"{cap} byte"


def _jsonl_lines(
    fh: IO[bytes], digest: Any, state: JsonlFile, cap: int, limits: ReadLimits, parse: LineParse
) -> Iterator[JsonlLine]:
    """Lines up to ``MiB`` are read in one call (the common case).  A longer line is first
    measured by scanning ahead in 1 MiB chunks, then re-read whole only when it is within the
    cap, so an over-long line never costs more than one chunk of memory."""
    lineno = 0
    total = 0
    step = min(MiB, cap + 1)
    while True:
        start = fh.tell()
        raw = fh.readline(step)
        if not raw:
            break
        lineno += 1
        if raw.endswith(b"\n") or len(raw) < step:
            length = len(raw)
            digest.update(raw)
        else:
            length = len(raw)
            while True:  # measure the line without keeping it
                chunk = fh.readline(MiB)
                if not chunk:
                    break
                length += len(chunk)
                if chunk.endswith(b"\n"):
                    break
            end = fh.tell()
            if length > cap:
                fh.seek(start)
                _hash_range(fh, digest, length)
                fh.seek(end)
                total += length
                msg = f"line of {length} bytes is over the {_cap_text(cap)} line cap"
                yield JsonlLine(
                    lineno, None, length, [ReadIssue(IssueKind.LINE_TOO_LONG, msg, lineno)]
                )
                continue
            fh.seek(start)
            raw = fh.read(length)
            digest.update(raw)
        total += length
        body = raw.strip()
        del raw
        if not body:
            continue
        value, issues = parse(body, limits)
        if issues:
            issues = [ReadIssue(i.kind, i.message, lineno, _excerpt(body)) for i in issues]
        yield JsonlLine(lineno, value, length, issues)
    state.stats.size = total
    state.stats.lines = lineno


def _hash_range(fh: IO[bytes], digest: Any, length: int) -> None:
    left = length
    while left > 0:
        chunk = fh.read(min(MiB, left))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)


def _excerpt(body: bytes, limit: int = 160) -> str:
    return body[:limit].decode("utf-8", errors="replace")


def hash_file(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    *,
    max_bytes: int = 1024 * 1024 * MiB,
) -> tuple[FileStats | None, ReadIssue | None]:
    """Inventory a file we do not parse: size, sha256 and line count, streamed in 1 MiB chunks."""
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        return None, issue
    assert real is not None
    try:
        if size > max_bytes:
            return FileStats(size=size), None
        digest = hashlib.sha256()
        newlines = 0
        last = b""
        with open(real, "rb") as fh:
            while chunk := fh.read(MiB):
                digest.update(chunk)
                newlines += chunk.count(b"\n")
                last = chunk
        lines = newlines + (1 if last and not last.endswith(b"\n") else 0)
        return FileStats(size=size, sha256=digest.hexdigest(), lines=lines), None
    except OSError as exc:
        return None, ReadIssue(IssueKind.IO_ERROR, f"cannot read {_name(path)}: {exc.strerror}")
