"""Streaming reader for a rollout ``results.jsonl``.

The row of a long trial is one line of hundreds of MB (every step repeats its prompt), so
the row is never built whole: lines up to the line cap are parsed with orjson; longer ones
are cut at their steps and each step parsed with orjson (:mod:`bf_assets.ingest.rowsplit`),
or, when that fast path cannot vouch for the row, parsed as an event stream, the top-level
keys built normally and each ``trajectory[]`` step handed to ``on_step`` and dropped.  Both
give the same result; memory is bounded by the largest single step.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson

from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    FileStats,
    IssueKind,
    MiB,
    ReadIssue,
    ReadLimits,
    parse_json_bytes,
    read_upto,
    resolve_file,
)
from bf_assets.ingest.rowsplit import GiveUp, split_row

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


def _line_spans(
    fh: io.BufferedIOBase, digest: Any, stats: FileStats, size: int
) -> Iterator[tuple[int, int, int, bool]]:
    """Yield ``(lineno, start, end, blank)`` for each physical line, hashing as it goes.

    One reused buffer (no fresh pages per chunk); a line's bytes are looked at only until
    something other than whitespace shows up."""
    pos = 0
    start = 0
    lineno = 0
    blank = True
    buf = bytearray(max(1, min(4 * MiB, size + 1)))  # a small file: a small buffer
    view = memoryview(buf)
    while n := fh.readinto(buf):
        digest.update(view[:n])
        i = 0
        while True:
            j = buf.find(b"\n", i, n)
            end = j if j >= 0 else n
            if blank and _has_content(buf, i, end):
                blank = False
            if j < 0:
                break
            lineno += 1
            yield lineno, start, pos + j, blank
            start = pos + j + 1
            blank = True
            i = j + 1
        pos += n
    stats.size = pos
    if pos > start:
        lineno += 1
        yield lineno, start, pos, blank
    stats.lines = lineno


def _has_content(buf: bytearray, i: int, end: int) -> bool:
    """True when ``buf[i:end]`` holds a byte ``bytes.strip`` would keep (first 64 bytes
    first: a JSON line shows one at once)."""
    k = min(end, i + 64)
    return bool(buf[i:k].strip()) or (k < end and bool(buf[k:end].strip()))


# results.jsonl up to this size is read into memory once (rows sliced from it).
SMALL_FILE_BYTES = 4 * 1024 * 1024


class _Range(io.RawIOBase):
    """A read-only view of ``[start, end)`` of an open file."""

    def __init__(self, path: Path, start: int, end: int) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._fh.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._left <= 0:
            return 0
        n = self._fh.readinto(memoryview(b)[: min(len(b), self._left)])
        self._left -= n or 0
        return n or 0

    def close(self) -> None:
        self._fh.close()
        super().close()


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

    A row that fails to parse gives no steps.  On a huge row, the fast path may have handed
    over some steps before finding out it cannot vouch for the row; when the exact parse
    then fails, ``on_discard(n)`` withdraws the last ``n`` steps received (a caller without
    it sees them, followed by the failed row).  ``share``: a huge row's steps may share
    their prompt's first messages with the previous step (faster; for callers that never
    modify a step)."""
    out = RowsRead()
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        out.present = issue.kind is not IssueKind.MISSING
        if out.present:
            out.issues.append(issue)
        return out
    assert real is not None
    out.present = True
    try:
        if size > limits.max_jsonl_bytes:
            out.stats.size = size
            out.issues.append(
                ReadIssue(
                    IssueKind.TOO_LARGE, f"{os.path.basename(os.fspath(path))} is over the size cap"
                )
            )
            return out
        digest = hashlib.sha256()
        whole: bytes | None = None  # a small file is read once and its rows sliced from it
        if size <= SMALL_FILE_BYTES:
            whole = read_upto(real, size, SMALL_FILE_BYTES + 1)
            spans = [s for s in _line_spans(io.BytesIO(whole), digest, out.stats, size) if not s[3]]
        else:
            with open(real, "rb") as fh:
                spans = [s for s in _line_spans(fh, digest, out.stats, size) if not s[3]]
        out.stats.sha256 = digest.hexdigest()
        for lineno, start, end, _ in spans:
            length = end - start
            if length > limits.max_row_bytes:
                out.rows.append(
                    RowRead(
                        lineno,
                        None,
                        0,
                        False,
                        [
                            ReadIssue(
                                IssueKind.LINE_TOO_LONG,
                                f"row of {length} bytes is over the row cap",
                                lineno,
                            )
                        ],
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
        out.issues.append(
            ReadIssue(
                IssueKind.IO_ERROR,
                f"cannot read {os.path.basename(os.fspath(path))}: {exc.strerror}",
            )
        )
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
    """A row over the line cap: the fast split first, the exact event-stream parse when the
    split gives up (steps already handed over are not handed over again)."""
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
    row = _parse_streaming(real, start, end, lineno, on_step, limits, skip=emitted)
    if emitted and not isinstance(row.top, dict) and on_discard is not None:
        on_discard(emitted)
    return row


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
    """Event-stream parse of one huge row: top-level keys built, steps handed off one by one."""
    top: dict[str, Any] = {}
    n_steps = 0
    traj_is_list = False
    issues: list[ReadIssue] = []
    src = _Range(real, start, end)
    try:
        events = ijson.parse(io.BufferedReader(src, buffer_size=MiB), use_float=True)
        first = next(events, None)
        if first is None or first[1] != "start_map":
            return RowRead(
                lineno,
                None,
                0,
                False,
                [ReadIssue(IssueKind.INVALID_JSON, "row is not a JSON object", lineno)],
            )
        key: str | None = None
        depth = 1
        builder: ijson.ObjectBuilder | None = None
        target: str | None = None  # "value" for a top-level value, "step" for a trajectory item
        base_depth = 0
        for prefix, event, value in events:
            if event in ("start_map", "start_array"):
                depth += 1
                if depth > limits.max_depth:
                    return RowRead(lineno, None, 0, False, [_too_deep(limits, lineno)])
            elif event in ("end_map", "end_array"):
                depth -= 1
            if builder is not None:
                builder.event(event, value)
                if depth == base_depth:
                    if target == "step":
                        on_step(n_steps, builder.value)
                        n_steps += 1
                    else:
                        top[key or ""] = builder.value
                    builder = None
                continue
            if depth == 1 and event == "map_key":
                key = value
                continue
            if depth == 0:
                break  # end of the row object
            if key == "trajectory" and prefix == "trajectory" and event == "start_array":
                # Skip the steps here (structure and depth still checked); they are built by
                # the C parser in a second pass once the whole row is known to be sound.
                traj_is_list = True
                for _p, ev, _v in events:
                    if ev == "start_map" or ev == "start_array":
                        depth += 1
                        if depth > limits.max_depth:
                            return RowRead(lineno, None, 0, False, [_too_deep(limits, lineno)])
                    elif ev == "end_map" or ev == "end_array":
                        depth -= 1
                        if depth == 1:
                            break
                continue
            # a top-level value
            if event in ("start_map", "start_array"):
                builder, target, base_depth = ijson.ObjectBuilder(), "value", depth - 1
                builder.event(event, value)
            else:
                top[key or ""] = value
        for _ in events:  # anything after the object is an error (two values on one line)
            return RowRead(
                lineno,
                None,
                n_steps,
                traj_is_list,
                [ReadIssue(IssueKind.INVALID_JSON, "extra data after the row object", lineno)],
            )
    except ijson.JSONError as exc:
        return RowRead(
            lineno,
            None,
            n_steps,
            traj_is_list,
            [ReadIssue(IssueKind.INVALID_JSON, f"not valid JSON: {exc}", lineno)],
        )
    except UnicodeDecodeError:
        return RowRead(
            lineno,
            None,
            n_steps,
            traj_is_list,
            [ReadIssue(IssueKind.INVALID_UTF8, "invalid UTF-8 prevents parsing", lineno)],
        )
    finally:
        src.close()
    if traj_is_list:
        try:
            n_steps = _emit_steps(real, start, end, on_step, skip)
        except (ijson.JSONError, UnicodeDecodeError) as exc:  # pragma: no cover - pass 1 parsed it
            return RowRead(
                lineno,
                None,
                0,
                True,
                [ReadIssue(IssueKind.INVALID_JSON, f"not valid JSON: {exc}", lineno)],
            )
    if not traj_is_list and "trajectory" not in top:
        top["trajectory"] = None
    return RowRead(lineno, top, n_steps, traj_is_list, issues)


def _emit_steps(real: str, start: int, end: int, on_step: StepCallback, skip: int = 0) -> int:
    """Second pass: every ``trajectory[]`` step built by ijson's C backend, one at a time
    (the first ``skip`` counted but not handed over: the fast path already did)."""
    src = _Range(real, start, end)
    n = 0
    try:
        for step in ijson.items(
            io.BufferedReader(src, buffer_size=MiB), "trajectory.item", use_float=True
        ):
            if n >= skip:
                on_step(n, step)
            n += 1
    finally:
        src.close()
    return n


def _too_deep(limits: ReadLimits, lineno: int) -> ReadIssue:
    return ReadIssue(IssueKind.TOO_DEEP, f"nesting deeper than {limits.max_depth} levels", lineno)
