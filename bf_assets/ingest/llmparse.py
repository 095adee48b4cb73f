"""Parse ``llm_trajectory.jsonl`` lines, reusing the messages the previous request carried.

Every request repeats the conversation, so parsing each line whole parses the conversation
once per request.  :class:`LineParser` remembers where the previous line's
``request.body.messages`` items lie in its bytes and the parsed items.  When the next line
holds the same item bytes at its own first ``"messages": [``, only the rest is parsed
(the same argument as :mod:`bf_assets.ingest.stepparse`):

1. the new items, ``[[[[null`` + bytes + ``]]]]``, up to the ``]`` that precedes ``,`` and the
   key that followed the messages last time; this parses only when that ``]`` closes the list;
2. the line without its messages list, ``head + null + tail`` and ``head + 0 + tail``: both
   must parse, with ``request.body.messages`` null and 0 respectively, which proves that the
   list sits exactly there (and is not overridden by a later duplicate key).

Each part is nested as deep as it is in the line and checked against the depth cap at its
own level.  The value is then the one :func:`parse_json_bytes` gives for the whole line (no
issues: every part parsed with orjson); anything else (a part that fails or nests too deep,
an unusual layout) parses the line whole.  The messages of consecutive values are shared objects, so
only read-only callers may use this.
"""

from __future__ import annotations

from typing import Any

import orjson

from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    ReadIssue,
    ReadLimits,
    parse_json_bytes,
    value_issue,
)
from bf_assets.ingest.stepparse import WS, prompt_close, single, skip_ws

_MESSAGES = b'"messages"'
MAX_RESTARTS = 8


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _body(value: Any) -> Any:
    req = value.get("request") if isinstance(value, dict) else None
    return req.get("body") if isinstance(req, dict) else None


class _Memo:
    __slots__ = ("line", "open", "end", "items", "key2")

    def __init__(self, line: bytes, open_: int, end: int, items: list[Any], key2: bytes) -> None:
        self.line = line  # the previous line's bytes
        self.open = open_  # index just after its messages' "["
        self.end = end  # index just after its last message
        self.items = items  # its messages, parsed
        self.key2 = key2  # the key after the messages, as written ('"tools"')


class LineParser:
    """``parse(line)`` -> ``(value, issues)`` like :func:`parse_json_bytes`, faster on the
    growing conversations of an LLM trajectory (see the module doc)."""

    __slots__ = ("limits", "_memo", "_restarts")

    def __init__(self, limits: ReadLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._memo: _Memo | None = None
        self._restarts = 0

    def parse(self, line: bytes, limits: ReadLimits | None = None) -> tuple[Any, list[ReadIssue]]:
        limits = limits or self.limits
        memo = self._memo
        if memo is not None:
            value = self._continue(line, memo, limits)
            if value is not None:
                return value, []
        value, issues = parse_json_bytes(line, limits)
        self._memo = None
        if not issues and self._restarts < MAX_RESTARTS:
            self._restarts += 1
            self._memo = _learn(line, value)
        return value, issues

    def _continue(self, line: bytes, memo: _Memo, limits: ReadLimits) -> Any:
        open_ = _messages_open(line)
        size = memo.end - memo.open
        if open_ < 0 or not line.startswith(memoryview(memo.line)[memo.open : memo.end], open_):
            return None
        start = open_ + size

        def check(j: int) -> list[Any] | None:
            region = memoryview(line)[start:j]
            new = single(_loads(b"[[[[null" + region + b"]]]]"), 3)
            if not isinstance(new, list) or new[0] is not None:
                return None
            # the new messages sit at level 5 of the line (line, request, body, messages)
            return new[1:] if value_issue(new, limits, 4, region) is None else None

        close = prompt_close(line, start, memo.key2, check)
        if close is None:
            return None
        j, new = close
        value = _without_list(line, open_, j)
        if value is None or value_issue(value, limits) is not None:
            return None
        items = memo.items + new
        _body(value)["messages"] = list(items)
        end = j
        while line[end - 1] in WS:
            end -= 1
        self._memo = _Memo(line, open_, end, items, memo.key2)
        return value


def _messages_open(line: bytes) -> int:
    """Index just after the ``[`` of the first ``"messages": [`` in ``line``, or -1."""
    k = line.find(_MESSAGES)
    if k < 0:
        return -1
    i = skip_ws(line, k + len(_MESSAGES))
    if i >= len(line) or line[i] != 0x3A:  # ":"
        return -1
    i = skip_ws(line, i + 1)
    return i + 1 if i < len(line) and line[i] == 0x5B else -1  # "["


def _without_list(line: bytes, open_: int, close: int) -> Any:
    """The line parsed with the list ``[open_ - 1, close]`` left out; None unless that list
    is ``request.body.messages`` (checked with two stand-ins, null and 0)."""
    head, tail = memoryview(line)[: open_ - 1], memoryview(line)[close + 1 :]
    first = _loads(bytes(head) + b"null" + tail)
    body = _body(first)
    if not isinstance(body, dict) or "messages" not in body or body["messages"] is not None:
        return None
    second = _body(_loads(bytes(head) + b"0" + tail))
    if not isinstance(second, dict) or second.get("messages") != 0:
        return None
    return first


def _learn(line: bytes, value: Any) -> _Memo | None:
    """Where this line's messages lie in its bytes (one extra parse of them), when its
    ``request.body`` has a non-empty ``messages`` list followed by another key."""
    body = _body(value)
    if not isinstance(body, dict):
        return None
    items = body.get("messages")
    keys = list(body)
    if not isinstance(items, list) or not items or keys[-1] == "messages":
        return None
    open_ = _messages_open(line)
    if open_ < 0:
        return None
    key2 = orjson.dumps(keys[keys.index("messages") + 1])

    def check(j: int) -> list[Any] | None:
        got = single(_loads(b"[[[[" + memoryview(line)[open_:j] + b"]]]]"), 3)
        return got if isinstance(got, list) else None

    close = prompt_close(line, open_, key2, check)
    if close is None or _without_list(line, open_, close[0]) is None:
        return None
    end = close[0]
    while line[end - 1] in WS:
        end -= 1
    return _Memo(line, open_, end, list(items), key2)
