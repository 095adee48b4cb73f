"""Bounded, streaming readers for the JSON and JSONL files of a trial.

Nothing here raises on bad input: every problem becomes a :class:`ReadIssue` that the
caller turns into a finding on the trial (``GATE_UNREADABLE`` or the file's own gate id).
Memory stays flat whatever the file size: JSONL is read in big blocks with a line cap,
over-long lines are skipped without being held, runs of blank lines are skipped at the
speed of a byte search, and whole-document JSON has a size cap.

Every value a reader returns can be written back as JSON by orjson: it nests at most
``ReadLimits.max_depth`` levels (orjson writes no more than 254), its integers fit 64 bits
and its strings are valid Unicode (:func:`value_issue`).  File names that are not UTF-8
are shown through :func:`escape_name` in every message.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import IO, Any, NamedTuple

import orjson

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Caps applied to every read.  The defaults fit real Benchflow output with room to spare."""

    max_document_bytes: int = 64 * MiB  # config.json, result.json, ... (real maximum seen ~1 MB)
    max_jsonl_bytes: int = 16 * 1024 * MiB  # a trajectory file
    max_line_bytes: int = 16 * MiB  # one JSONL line (an LLM exchange; largest real ones < 1 MB)
    max_row_bytes: int = 4 * 1024 * MiB  # the one results.jsonl row, parsed as a stream
    max_row_steps: int = 100_000  # trajectory steps of one row (one per LLM exchange)
    # JSON nesting, in containers (a real row nests < 30).  At most ENCODE_DEPTH: a value
    # must stay writable by orjson (curation, the cache and the review output write it).
    max_depth: int = 128
    # sha256 of every file read (the inventory's digests).  Off only where no one keeps
    # them (see :data:`AUDIT_LIMITS`); no check reads a digest.  Not in the repr, which
    # keys the review cache.
    digests: bool = field(default=True, repr=False)
    # The inventory's figures no check reads: the sizes of the files not parsed (one
    # ``stat`` each) and the line counts of the documents (a pass over their bytes).  Off
    # only where no one keeps the inventory (see :func:`for_review_only`); not in the repr.
    sizes: bool = field(default=True, repr=False)


DEFAULT_LIMITS = ReadLimits()


# An audit's own read of a file (``rewards.jsonl``, a later request): the default caps,
# no digest (nothing keeps the stats of such a read).
AUDIT_LIMITS = ReadLimits(digests=False)


def for_review_only(limits: ReadLimits) -> ReadLimits:
    """``limits`` for a review whose file inventory no one keeps (its JSON and slim form hold
    none): no digests, the files no check reads listed without their sizes, the documents
    without their line counts.  The findings and verdicts are those of ``limits``."""
    if not (limits.digests or limits.sizes):
        return limits
    return replace(limits, digests=False, sizes=False)


class _NoDigest:
    """Stands in for a ``hashlib`` hash when digests are off."""

    __slots__ = ()

    def update(self, data: Any) -> None:
        return None

    def hexdigest(self) -> None:
        return None


NO_DIGEST = _NoDigest()


def new_digest(limits: ReadLimits) -> Any:
    """A sha256 to feed a file's bytes to, or :data:`NO_DIGEST` when digests are off."""
    return hashlib.sha256() if limits.digests else NO_DIGEST


def digest_of(data: bytes, limits: ReadLimits) -> str | None:
    """sha256 of a whole file's bytes, or None when digests are off."""
    return hashlib.sha256(data).hexdigest() if limits.digests else None


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
    read: bool = False  # the whole file was read (its sha256 is set, when digests are on)


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
    # plain (non-link) directories below the nearest resolved parent, with their names
    below: list[tuple[str, str]] = []
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
        below.append((cur, name))
        cached = _REAL_DIRS.get(parent)
        if cached is not None:
            base = cached
            break
        cur = parent
    if len(_REAL_DIRS) + len(below) + 1 > _REAL_DIRS_MAX:
        _REAL_DIRS.clear()
    real = base
    if not below:
        _REAL_DIRS[d] = real
    for path, name in reversed(below):  # each one resolved on the way is kept too (the
        real = os.path.join(real, name)  # job directory of the next trial, say)
        _REAL_DIRS[path] = real
    return real


_GENERATION = [0]


def clear_path_cache() -> None:
    """Forget resolved directories (call before a new review: links may have changed).
    Also starts a new :func:`path_generation` (digests kept per batch are taken again)."""
    _REAL_DIRS.clear()
    _ROOTS.clear()
    _GENERATION[0] += 1


def path_generation() -> int:
    """Changes at every :func:`clear_path_cache`: what was derived from the file system
    before it (``cache.tree_digest``) is stale after it."""
    return _GENERATION[0]


# --------------------------------------------------------------------------- names

# Characters a name is shown with as is: anything but a backslash, a control character or a
# surrogate (on POSIX, ``os`` gives the bytes of a name that are not UTF-8 as surrogates
# U+DC80..U+DCFF).
_PLAIN_NAME = re.compile(r"[^\\\x00-\x1f\x7f\ud800-\udfff]*\Z")
_UNDECODABLE = re.compile(r"[\udc80-\udcff]")
_ESCAPED = re.compile(r"\\(?:\\|x([0-9a-f]{2})|u([0-9a-f]{4}))")


def escape_name(name: str) -> str:
    """A file or directory name (or a path of them) as text any output can hold, reversibly.

    A name of printable UTF-8 without a backslash is returned as is (every real Benchflow
    name).  Otherwise a backslash becomes ``\\\\``, a byte that is not UTF-8 ``\\xHH``,
    a control character ``\\xHH`` and any other surrogate ``\\uHHHH``: deterministic, and
    :func:`unescape_name` gives the original back (two names never share an escaped form).
    """
    if (name.isascii() and name.isprintable() and "\\" not in name) or _PLAIN_NAME.match(name):
        return name  # printable ASCII (0x20..0x7e) without a backslash: plain, no regex
    out = []
    for ch in name:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return "".join(out)


def unescape_name(text: str) -> str:
    """The name :func:`escape_name` was given (bytes that are not UTF-8 as surrogates)."""

    def _one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            o = int(m.group(1), 16)
            return chr(o) if o < 0x80 else chr(0xDC00 + o)
        if m.group(2) is not None:
            return chr(int(m.group(2), 16))
        return "\\"

    return _ESCAPED.sub(_one, text) if "\\" in text else text


def undecodable(name: str) -> bool:
    """True when ``name`` (as ``os`` gives it) holds bytes that are not UTF-8."""
    return _UNDECODABLE.search(name) is not None


def _name(path: str | os.PathLike[str]) -> str:
    return escape_name(os.path.basename(os.fspath(path)))


class Resolved(NamedTuple):
    real: str | None  # the real path to open, or None with an issue
    size: int  # its size in bytes (from the same stat call)
    issue: ReadIssue | None


def resolve_file(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Resolved:
    """The real path to open and its size, or an issue: absent, special, or a link leaving
    ``root``.  Strings all the way (the hot path of every read)."""
    sp = os.fspath(path)
    cut = sp.rfind("/") + 1  # posixpath.split, inlined (every read of a trial comes here)
    name = escape_name(sp[cut:])
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
            head = sp[:cut]
            if head and head != "/" * len(head):
                head = head.rstrip("/")
            real_d = _real_dir(head)  # ``os.path.join(real_d, name)``: name holds no "/"
            real_s = real_d + name if real_d.endswith("/") else real_d + "/" + name
        real_root, inside = _root_of(root)
    except OSError as exc:
        return Resolved(None, 0, ReadIssue(IssueKind.IO_ERROR, f"cannot resolve {name}: {exc}"))
    if real_s != real_root and not real_s.startswith(inside):
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


_ROOTS: dict[str | os.PathLike[str], tuple[str, str]] = {}


def _root_of(root: str | os.PathLike[str]) -> tuple[str, str]:
    """``(real path, what every path inside it starts with)`` of a run root, kept until
    :func:`clear_path_cache` (every read of a batch asks for the same root)."""
    hit = _ROOTS.get(root)
    if hit is None:
        real_root = _real_dir(os.fspath(root))
        if len(_ROOTS) >= _REAL_DIRS_MAX:
            _ROOTS.clear()
        hit = _ROOTS[root] = (real_root, _inside(real_root))
    return hit


_INSIDE: dict[str, str] = {}


def _inside(real_root: str) -> str:
    """What every path inside ``real_root`` starts with (kept per root)."""
    prefix = _INSIDE.get(real_root)
    if prefix is None:
        if len(_INSIDE) >= _REAL_DIRS_MAX:
            _INSIDE.clear()
        prefix = _INSIDE[real_root] = real_root.rstrip(os.sep) + os.sep
    return prefix


# --------------------------------------------------------------------------- value parsing


ENCODE_DEPTH = 254  # containers orjson writes nested at most ("Recursion limit reached")


def depth_cap(limits: ReadLimits) -> int:
    """The nesting cap actually applied: ``limits.max_depth``, at most :data:`ENCODE_DEPTH`."""
    return max(1, min(limits.max_depth, ENCODE_DEPTH))


def encode_problem(value: Any, room: int) -> str | None:
    """Why orjson cannot write ``value`` when it may nest only ``room`` containers deep
    (``"Recursion limit reached"``, a surrogate in a string, an integer past 64 bits), or None.

    One ``orjson.dumps`` (C speed, no Python walk): the value is wrapped in enough one-item
    lists that orjson's own limit falls exactly ``room`` levels below the wrappers."""
    wrappers = ENCODE_DEPTH - max(0, min(room, ENCODE_DEPTH))
    if not wrappers:
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError as exc:
            return str(exc)
        return None
    chain = _CHAINS.get(wrappers)
    if chain is None:
        bottom: list[Any] = [None]
        outer = bottom
        for _ in range(wrappers - 1):
            outer = [outer]
        chain = _CHAINS[wrappers] = (outer, bottom)
    outer, bottom = chain
    bottom[0] = value
    try:
        orjson.dumps(outer)
    except orjson.JSONEncodeError as exc:
        return str(exc)
    finally:
        bottom[0] = None
    return None


_CHAINS: dict[int, tuple[list[Any], list[Any]]] = {}  # wrappers -> (outermost, innermost)
# Every byte but the brackets (``bytes.translate`` deletes them, leaving the brackets).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{")


def value_issue(
    value: Any, limits: ReadLimits = DEFAULT_LIMITS, level: int = 1, data: Any = None
) -> ReadIssue | None:
    """``TOO_DEEP`` when ``value``, sitting at ``level`` of its file (1: the whole line or
    document; a row's step is at level 3), nests past the cap; ``INVALID_JSON`` when orjson
    could not write it back; else None.  ``data``: the bytes it was parsed from, when only
    its depth is in doubt (a value holds no more containers than those bytes hold brackets,
    plus at most one it was parsed into, so a piece with few brackets needs no look)."""
    room = depth_cap(limits) - level + 1
    if data is not None:
        # ``value`` may be one container more than ``data`` (a step parsed from the rest of
        # its bytes after ``{"prompt":null``): then the brackets may not reach ``room``.
        if len(data) < room:  # fewer bytes than that, so fewer brackets
            return None
        raw = data if isinstance(data, bytes | bytearray) else bytes(data)
        # The brackets counted in one pass (``count`` twice reads every byte twice); a big
        # piece is counted in place (translate's copy of its brackets could be big too).
        if len(raw) <= MiB:
            brackets = len(raw.translate(None, _NOT_BRACKETS))
        else:
            brackets = raw.count(b"[") + raw.count(b"{")
        if brackets < room:
            return None
    problem = encode_problem(value, room)
    if problem is None:
        return None
    if "Recursion" in problem:
        return _too_deep(limits)
    return ReadIssue(IssueKind.INVALID_JSON, f"the value cannot be written back as JSON: {problem}")


def _big_int(digits: str) -> int | float:
    """An integer literal as orjson reads it: an int within 64 bits, else a float."""
    if len(digits) <= 20:
        n = int(digits)
        if -(2**63) <= n < 2**64:
            return n
    return _float(digits)


def _float(text: str) -> float:
    f = float(text)
    if math.isinf(f):
        raise ValueError(f"number is infinity when parsed as double: {text[:40]}")
    return f


def parse_json_bytes(
    data: bytes, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[Any, list[ReadIssue]]:
    """Parse one JSON value; return ``(value, issues)``.  ``value`` is None when it failed.

    Handles invalid UTF-8 (replaced, with a warning, when the rest parses), NaN/Infinity
    literals (read as null, with a warning) and nesting beyond the depth cap.  The value is
    always one orjson can write back (:func:`value_issue`).
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        value, issues = _parse_fallback(data, str(exc), limits)
        if value is None:
            return None, issues
        # The fallback parser (json) can give what orjson never does: lone surrogates.
        bad = value_issue(value, limits)
        return (None, [bad]) if bad is not None else (value, issues)
    # orjson gives valid strings and 64-bit integers: only the depth can be in doubt.
    bad = value_issue(value, limits, data=data)
    return (None, [bad]) if bad is not None else (value, [])


def _too_deep(limits: ReadLimits) -> ReadIssue:
    return ReadIssue(IssueKind.TOO_DEEP, f"nesting deeper than {depth_cap(limits)} levels")


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
            if "depth limit" in error:
                return None, [_invalid(issues, error)]
    if "NaN" in text or "Infinity" in text:
        seen: list[str] = []

        def _constant(name: str) -> None:
            seen.append(name)
            return None

        try:
            value = json.loads(
                text, parse_constant=_constant, parse_int=_big_int, parse_float=_float
            )
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


RAW_KEEP_MAX_BYTES = 1024 * 1024  # a document's bytes kept for line citations


@dataclass(slots=True)
class Document:
    """A whole-file JSON document (config.json, result.json, ...)."""

    value: Any = None
    issues: list[ReadIssue] = field(default_factory=list)
    stats: FileStats = field(default_factory=FileStats)
    present: bool = False
    # The bytes of a small document (at most RAW_KEEP_MAX_BYTES), kept so a finding can
    # cite the line of a key (bf_assets.ingest.jsonpos); None for a bigger one.
    raw: bytes | None = field(default=None, repr=False, compare=False)

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
    lines = _count_lines(data) if limits.sizes else 0
    doc.stats = FileStats(len(data), digest_of(data, limits), lines, read=True)
    if len(data) > limits.max_document_bytes:
        doc.stats = FileStats(size=size)
        doc.issues.append(
            ReadIssue(
                IssueKind.TOO_LARGE,
                f"{_name(path)} is over the {_cap_text(limits.max_document_bytes)} cap",
            )
        )
        return doc
    if CONTENT.search(data) is None:  # ``not data.strip()``, without the copy
        doc.issues.append(ReadIssue(IssueKind.INVALID_JSON, f"{_name(path)} is empty"))
        return doc
    if len(data) <= RAW_KEEP_MAX_BYTES:
        doc.raw = data
    doc.value, issues = parse_json_bytes(data, limits)
    doc.issues.extend(issues)
    return doc


# How a file is opened to be read: a descriptor (no file object), closed on exec.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def read_upto(real: str, size_hint: int, limit: int) -> bytes:
    """At most ``limit`` bytes of a file, through an unbuffered read sized by ``size_hint``
    (its stat size): no buffer of ``limit`` bytes is allocated for a small file, and a file
    that grew since its stat is still read up to ``limit``."""
    chunks: list[bytes] = []
    got = 0
    want = min(size_hint + 1, limit)
    fd = os.open(real, READ_FLAGS)  # a descriptor, no file object: the hot path of a read
    try:
        while got < limit:
            ask = min(want, limit - got)
            chunk = os.read(fd, ask)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if len(chunk) < ask:  # a short read of a regular file: its end
                break
            want = MiB  # past the stat size: keep going in 1 MiB reads
    finally:
        os.close(fd)
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
    replaces :func:`parse_json_bytes` (it must return the same; see ``fastjson``).
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
        digest = new_digest(limits)
        parse = parse or parse_json_bytes
        # A small file is read in one call and its lines taken from memory; a big file is
        # read in BLOCK-sized calls.
        small = read_upto(real, size, SMALL_JSONL + 1) if size <= SMALL_JSONL else None
        if small is not None and len(small) <= SMALL_JSONL:
            yield from _memory_lines(small, digest, state, cap, limits, parse)
        else:  # big, or grew past the small size since its stat
            with open(real, "rb", buffering=0) as fh:
                yield from _jsonl_lines(fh, digest, state, cap, limits, parse)
        state.stats.sha256 = digest.hexdigest()
        state.stats.read = True
    except OSError as exc:
        state.issues.append(
            ReadIssue(IssueKind.IO_ERROR, f"cannot read {_name(path)}: {exc.strerror}")
        )


def _cap_text(cap: int) -> str:
    return f"{cap // MiB} MiB" if cap >= MiB else f"{cap} byte"


# A byte ``bytes.strip`` keeps: where a line's content starts.
CONTENT = re.compile(rb"[^ \t\n\r\x0b\x0c]")
BLOCK = MiB  # one read call


def _jsonl_lines(
    fh: IO[bytes], digest: Any, state: JsonlFile, cap: int, limits: ReadLimits, parse: LineParse
) -> Iterator[JsonlLine]:
    """The file is read in :data:`BLOCK` calls; runs of blank or whitespace-only lines are
    skipped with one regex search and one newline count per block (never a Python step per
    line).  A content line that ends in the block is taken from it; a longer one is first
    measured by reading on without keeping what was read, then re-read whole only when it
    is within the cap, so an over-long line never costs more than one block of memory."""
    lineno = 0  # physical lines finished
    buf = b""  # bytes read and not consumed; buf[0] sits at file offset `base`
    base = 0
    pos = 0
    line_start = 0  # file offset where the current physical line starts
    eof = False
    while True:
        m = CONTENT.search(buf, pos)
        if m is None:  # the rest of the block is whitespace
            n = buf.count(b"\n", pos)
            if n:
                lineno += n
                line_start = base + buf.rfind(b"\n", pos) + 1
            if eof:
                break
            base += len(buf)
            buf, pos = fh.read(BLOCK), 0
            digest.update(buf)
            eof = not buf
            continue
        j = m.start()
        n = buf.count(b"\n", pos, j)
        if n:
            lineno += n
            line_start = base + buf.rfind(b"\n", pos, j) + 1
        lineno += 1
        e = buf.find(b"\n", j)
        raw: bytes | None
        if e >= 0 or eof:  # the line ends in the block
            end = e if e >= 0 else len(buf)
            nl = int(e >= 0)
            length = base + end + nl - line_start
            raw = buf[j:end] if length <= cap else None
            pos = end + nl
        else:  # the line goes on past the block: measure it first, keeping nothing
            body_at = base + j
            end_at, nl, rest = _measure_line(fh, digest)
            eof = rest is None
            length = end_at + nl - line_start
            raw = None
            if length <= cap:
                fh.seek(body_at)
                raw = fh.read(end_at - body_at)
            fh.seek(end_at + nl + len(rest or b""))
            buf, base, pos = rest or b"", end_at + nl, 0
        line_start = base + pos
        if raw is None:
            msg = f"line of {length} bytes is over the {_cap_text(cap)} line cap"
            yield JsonlLine(lineno, None, length, [ReadIssue(IssueKind.LINE_TOO_LONG, msg, lineno)])
            continue
        body = raw.rstrip()
        del raw
        value, issues = parse(body, limits)
        if issues:
            issues = [ReadIssue(i.kind, i.message, lineno, _excerpt(body)) for i in issues]
        yield JsonlLine(lineno, value, length, issues)
    state.stats.size = base + len(buf)
    state.stats.lines = lineno + (line_start < base + len(buf))


def _memory_lines(
    data: bytes, digest: Any, state: JsonlFile, cap: int, limits: ReadLimits, parse: LineParse
) -> Iterator[JsonlLine]:
    """:func:`_jsonl_lines` for a file read whole (at most one :data:`BLOCK`): the same
    lines, line numbers, lengths, issues, digest and stats, taken from ``data``."""
    digest.update(data)
    size = len(data)
    lineno = 0  # physical lines finished
    pos = 0
    line_start = 0  # where the current physical line starts
    while True:
        m = CONTENT.search(data, pos)
        if m is None:  # the rest is whitespace
            n = data.count(b"\n", pos)
            if n:
                lineno += n
                line_start = data.rfind(b"\n", pos) + 1
            break
        j = m.start()
        n = data.count(b"\n", pos, j)
        if n:
            lineno += n
            line_start = data.rfind(b"\n", pos, j) + 1
        lineno += 1
        e = data.find(b"\n", j)
        end, nl = (e, 1) if e >= 0 else (size, 0)
        length = end + nl - line_start
        pos = line_start = end + nl
        if length > cap:
            msg = f"line of {length} bytes is over the {_cap_text(cap)} line cap"
            yield JsonlLine(lineno, None, length, [ReadIssue(IssueKind.LINE_TOO_LONG, msg, lineno)])
            continue
        body = data[j:end].rstrip()
        value, issues = parse(body, limits)
        if issues:
            issues = [ReadIssue(i.kind, i.message, lineno, _excerpt(body)) for i in issues]
        yield JsonlLine(lineno, value, length, issues)
    state.stats.size = size
    state.stats.lines = lineno + (line_start < size)


def _measure_line(fh: IO[bytes], digest: Any) -> tuple[int, int, bytes | None]:
    """Read on (hashing, keeping nothing) to the end of the current line: ``(offset of its
    end, 1 when a newline ends it, the bytes read after that newline or None at EOF)``."""
    while True:
        chunk = fh.read(BLOCK)
        digest.update(chunk)
        if not chunk:
            return fh.tell(), 0, None
        k = chunk.find(b"\n")
        if k >= 0:
            at = fh.tell() - len(chunk)
            return at + k, 1, chunk[k + 1 :]


def _excerpt(body: bytes, limit: int = 160) -> str:
    return body[:limit].decode("utf-8", errors="replace")


def hash_file(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    *,
    max_bytes: int = 1024 * 1024 * MiB,
) -> tuple[FileStats | None, ReadIssue | None]:
    """Inventory a file we do not parse: size, sha256 and line count, streamed.  The first
    read is sized by the file's stat size (most inventoried files are a few KB: no 1 MiB
    buffer per file), later ones take 1 MiB each, to the file's end even when it grew since
    its stat; the size reported is the bytes hashed."""
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        return None, issue
    assert real is not None
    try:
        if size > max_bytes:
            return FileStats(size=size), None
        digest = hashlib.sha256()
        newlines = hashed = 0
        last = b""
        fd = os.open(real, READ_FLAGS)  # a descriptor, no file object (as read_upto)
        try:
            ask = min(size + 1, MiB)  # one read reaches the end of a file under 1 MiB
            while chunk := os.read(fd, ask):
                digest.update(chunk)
                newlines += chunk.count(b"\n")
                hashed += len(chunk)
                last = chunk
                ask = MiB
        finally:
            os.close(fd)
        lines = newlines + (1 if last and not last.endswith(b"\n") else 0)
        return FileStats(hashed, digest.hexdigest(), lines, read=True), None
    except OSError as exc:
        return None, ReadIssue(IssueKind.IO_ERROR, f"cannot read {_name(path)}: {exc.strerror}")
