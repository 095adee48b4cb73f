"""Streaming reader for a rollout ``results.jsonl``.

The row of a long trial is one line of hundreds of MB (every step repeats its prompt), so
the row is never built whole: lines up to the line cap are parsed with orjson; longer ones
are parsed as an event stream, the top-level keys built normally and each
``trajectory[]`` step handed to ``on_step`` and dropped.  Memory is bounded by the largest
single step.
"""

from __future__ import annotations

import hashlib
import io
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
    check_file,
    parse_json_bytes,
)

StepCallback = Callable[[int, Any], None]


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
    fh: io.BufferedReader, digest: Any, stats: FileStats
) -> Iterator[tuple[int, int, int, bool]]:
    """Yield ``(lineno, start, end, blank)`` for each physical line, hashing as it goes."""
    pos = 0
    start = 0
    lineno = 0
    blank = True
    while chunk := fh.read(4 * MiB):
        digest.update(chunk)
        i = 0
        while True:
            j = chunk.find(b"\n", i)
            seg = chunk[i : j if j >= 0 else len(chunk)]
            if seg.strip():
                blank = False
            if j < 0:
                break
            lineno += 1
            yield lineno, start, pos + j, blank
            start = pos + j + 1
            blank = True
            i = j + 1
        pos += len(chunk)
    stats.size = pos
    if pos > start:
        lineno += 1
        yield lineno, start, pos, blank
    stats.lines = lineno


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
    path: Path, root: Path, on_step: StepCallback, limits: ReadLimits = DEFAULT_LIMITS
) -> RowsRead:
    out = RowsRead()
    real, issue = check_file(path, root)
    if issue is not None:
        out.present = issue.kind is not IssueKind.MISSING
        if out.present:
            out.issues.append(issue)
        return out
    assert real is not None
    out.present = True
    try:
        size = real.stat().st_size
        if size > limits.max_jsonl_bytes:
            out.stats.size = size
            out.issues.append(ReadIssue(IssueKind.TOO_LARGE, f"{path.name} is over the size cap"))
            return out
        digest = hashlib.sha256()
        with open(real, "rb") as fh:
            spans = [s for s in _line_spans(fh, digest, out.stats) if not s[3]]
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
                with open(real, "rb") as fh:
                    fh.seek(start)
                    data = fh.read(length)
                out.rows.append(_parse_small(data, lineno, on_step, limits))
            else:
                out.rows.append(_parse_streaming(real, start, end, lineno, on_step, limits))
    except OSError as exc:
        out.issues.append(ReadIssue(IssueKind.IO_ERROR, f"cannot read {path.name}: {exc.strerror}"))
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


def _parse_streaming(
    real: Path, start: int, end: int, lineno: int, on_step: StepCallback, limits: ReadLimits
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
            n_steps = _emit_steps(real, start, end, on_step)
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


def _emit_steps(real: Path, start: int, end: int, on_step: StepCallback) -> int:
    """Second pass: every ``trajectory[]`` step built by ijson's C backend, one at a time."""
    src = _Range(real, start, end)
    n = 0
    try:
        for step in ijson.items(
            io.BufferedReader(src, buffer_size=MiB), "trajectory.item", use_float=True
        ):
            on_step(n, step)
            n += 1
    finally:
        src.close()
    return n


def _too_deep(limits: ReadLimits, lineno: int) -> ReadIssue:
    return ReadIssue(IssueKind.TOO_DEEP, f"nesting deeper than {limits.max_depth} levels", lineno)
