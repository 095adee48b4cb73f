"""Where a key sits in a JSON document: the 1-based line a finding cites.

A finding on a JSON file names the key it is about (``rewards.reward``,
``trials[2].checks.reward_hacking.outcome``); :func:`key_line` finds the line of that key in
the document's bytes without parsing the whole document into positions.  Only small
documents are searched (:data:`KEY_LINE_MAX_BYTES`): trajectories are never re-read for
this.  A key that is absent cites its nearest present parent (a missing ``agent_result``
field cites ``agent_result``; a missing top-level key cites line 1, the document itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

KEY_LINE_MAX_BYTES = 4 * 1024 * 1024  # the documents a finding cites are far smaller
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(rb"[^,\]}\s]+")
_TOKEN = re.compile(rb'["{}\[\]]')
_WS = re.compile(rb"[ \t\r\n]*")
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

KeyPath = Sequence[str | int]


def parse_key_path(dotted: str) -> list[str | int]:
    """``"trials[2].checks.reward_hacking"`` as ``["trials", 2, "checks", "reward_hacking"]``."""
    out: list[str | int] = []
    for name, index in _PART.findall(dotted):
        out.append(int(index) if index else name)
    return out


def _ws(data: bytes, i: int) -> int:
    m = _WS.match(data, i)
    return m.end() if m else i


def _skip(data: bytes, i: int) -> int | None:
    """The offset just past the JSON value starting at ``i``."""
    if i >= len(data):
        return None
    c = data[i : i + 1]
    if c == b'"':
        m = _STRING.match(data, i)
        return m.end() if m else None
    if c in (b"{", b"["):
        depth = 0
        j = i
        while True:
            m = _TOKEN.search(data, j)
            if m is None:
                return None
            t = m.group()
            if t == b'"':
                s = _STRING.match(data, m.start())
                if s is None:
                    return None
                j = s.end()
                continue
            depth += 1 if t in (b"{", b"[") else -1
            j = m.end()
            if depth == 0:
                return j
    m = _SCALAR.match(data, i)
    return m.end() if m else None


def _member(data: bytes, i: int, key: str) -> tuple[int, int] | None:
    """``(key offset, value offset)`` of ``key`` in the object starting at ``i``."""
    if data[i : i + 1] != b"{":
        return None
    i = _ws(data, i + 1)
    while i < len(data) and data[i : i + 1] != b"}":
        m = _STRING.match(data, i)
        if m is None:
            return None
        try:
            name = orjson.loads(m.group())
        except orjson.JSONDecodeError:
            return None
        j = _ws(data, m.end())
        if data[j : j + 1] != b":":
            return None
        value = _ws(data, j + 1)
        if name == key:
            return m.start(), value
        end = _skip(data, value)
        if end is None:
            return None
        i = _ws(data, end)
        if data[i : i + 1] == b",":
            i = _ws(data, i + 1)
    return None


def _element(data: bytes, i: int, index: int) -> int | None:
    """The offset of element ``index`` of the array starting at ``i``."""
    if data[i : i + 1] != b"[":
        return None
    i = _ws(data, i + 1)
    n = 0
    while i < len(data) and data[i : i + 1] != b"]":
        if n == index:
            return i
        end = _skip(data, i)
        if end is None:
            return None
        i = _ws(data, end)
        if data[i : i + 1] == b",":
            i = _ws(data, i + 1)
        n += 1
    return None


def _locate(data: bytes, path: KeyPath) -> tuple[int, int]:
    """``(offset, steps found)``: where the deepest present prefix of ``path`` sits."""
    at = _ws(data, 0)
    cite = at
    found = 0
    for step in path:
        if isinstance(step, int):
            nxt = _element(data, at, step)
            if nxt is None:
                break
            cite = at = nxt
        else:
            hit = _member(data, at, step)
            if hit is None:
                break
            cite, at = hit
        found += 1
    return cite, found


def key_line(data: bytes | None, path: KeyPath | str, *, nearest: bool = True) -> int | None:
    """The 1-based line of ``path`` in the JSON ``data`` (of its key, for an object member).

    With ``nearest`` an absent key cites its deepest present parent (line 1 when nothing
    of the path is present); without, an absent key gives None.  None for a document over
    :data:`KEY_LINE_MAX_BYTES` or not given."""
    if data is None or len(data) > KEY_LINE_MAX_BYTES:
        return None
    steps = parse_key_path(path) if isinstance(path, str) else list(path)
    offset, found = _locate(data, steps)
    if found < len(steps) and not nearest:
        return None
    return data.count(b"\n", 0, offset) + 1


def value_at(value: Any, path: KeyPath | str) -> Any:
    """The parsed value at ``path``, or None."""
    steps = parse_key_path(path) if isinstance(path, str) else list(path)
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not 0 <= step < len(value):
                return None
        elif not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def has_key(value: Any, path: KeyPath | str) -> bool:
    """Whether ``path`` is present in the parsed ``value`` (a null value counts)."""
    steps = parse_key_path(path) if isinstance(path, str) else list(path)
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not 0 <= step < len(value):
                return False
        elif not isinstance(value, dict) or step not in value:
            return False
        value = value[step]
    return bool(steps)
