"""Parse the bytes of one ``trajectory[]`` step, reusing what the previous step shared.

Step k's prompt repeats step k-1's prompt and adds a few messages, so parsing every step
whole parses the conversation once per step.  :class:`StepParser` remembers, for the last
step, the byte offset just after its prompt's last item (``end``) and the parsed items.
When the next step's bytes start with the same ``end`` bytes, those bytes hold the same
items, and the parser is then in the same state as after ``[null`` in ``{"prompt": [null``
(``null`` rather than a number, so that bytes continuing the last item's token, as ``.5``
would continue ``2``, make the stand-in invalid instead of silently different); so only the
rest is parsed:

1. the new items, ``[[[[null`` + ``piece[end:J]`` + ``]]]]`` where ``J`` is a ``]`` followed by
   ``,`` and the key that followed the prompt last time; this parses only when ``J`` is the
   ``]`` that closes the prompt (a list continuation is balanced only up to its own close);
2. the rest of the step after ``J``, as ``[[{"prompt":null`` + rest + ``]]`` and again with
   ``0`` for ``null``: the two agree on ``prompt`` unless a later duplicate ``prompt`` key
   overrides it (then the whole step is parsed instead).

Each part is nested as deep as it sits in the row and checked against the row's depth cap
(:func:`depth_ok`).  A step read this way equals the one parsed whole, but its first prompt items are the previous
step's objects: only callers that do not modify steps may ask for it (``share=True``).
"""

from __future__ import annotations

from typing import Any

import orjson

from bf_assets.ingest.readers import ReadLimits, value_issue

WS = b" \t\r\n"
MAX_TRIES = 8
MAX_RESTARTS = 8  # times a row may re-learn the prompt's layout after a break in the chain
_PROMPT = b'"prompt"'
# Digits mapped to "0", everything else to a space: a long run is then a plain substring.
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


class GiveUp(Exception):
    """The fast path cannot vouch for this row; the exact parser must read it."""


def has_long_digit_run(data: bytes | memoryview) -> bool:
    """True when ``data`` holds 19 consecutive ASCII digits (a possible 64-bit overflow:
    orjson reads such an integer as a float; the exact parser decides)."""
    return _LONG_RUN in bytes(data).translate(_DIGITS)


def depth_ok(value: Any, piece: bytes | memoryview, limits: ReadLimits, level: int) -> bool:
    """True when ``value``, parsed by orjson at its own level in the row (``level``: 1 for the
    row, 3 for a step), stays within the depth cap of the row (and can be written back)."""
    return value_issue(value, limits, level, piece) is None


def shared_prefix(data: bytes, prev: bytes) -> int:
    """A length ``n`` with ``data[:n] == prev[:n]`` (0 when none is found cheaply).  Steps
    repeat the previous step's prompt, so the shared part is most of ``prev``: try cutting
    1 KiB, 2 KiB, 4 KiB ... off its end."""
    cut = 1024
    while cut < len(prev):
        n = len(prev) - cut
        if data.startswith(memoryview(prev)[:n]):
            return n
        cut *= 2
    return 0


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def single(outer: Any, levels: int) -> Any:
    """``outer`` unwrapped ``levels`` times when each wrapper holds exactly one value."""
    for _ in range(levels):
        if not isinstance(outer, list) or len(outer) != 1:
            return None
        outer = outer[0]
    return outer


class _Memo:
    __slots__ = ("piece", "open", "end", "items", "key2")

    def __init__(self, piece: bytes, open_: int, end: int, items: list[Any], key2: bytes) -> None:
        self.piece = piece  # the previous step's bytes
        self.open = open_  # index just after its prompt's "["
        self.end = end  # index just after its prompt's last item
        self.items = items  # its prompt's items, parsed
        self.key2 = key2  # the key after the prompt, as written ('"completion"')


class StepParser:
    """Parses successive step pieces of one row (see the module doc)."""

    __slots__ = ("limits", "share", "_checked", "_memo", "_restarts")

    def __init__(self, limits: ReadLimits, *, share: bool = False) -> None:
        self.limits = limits
        self.share = share
        self._checked = b""  # the last piece found free of long digit runs
        self._memo: _Memo | None = None
        self._restarts = 0

    def parse(self, piece: bytes) -> Any:
        """The step when ``piece`` is exactly one JSON value (None when not: a wrong
        candidate end).  Raises :class:`GiveUp` when the exact parser must decide."""
        self._check_digits(piece)
        memo = self._memo
        if memo is not None and piece.startswith(memoryview(memo.piece)[: memo.end]):
            found = self._continue(piece, memo)
            if found is not None:
                return found[0]
        outer = _loads(b"[[" + piece + b"]]")
        step = single(outer, 2)
        if step is None:
            return None
        if not depth_ok(step, piece, self.limits, 3):
            raise GiveUp("too deep")
        if self.share and self._restarts < MAX_RESTARTS:
            self._restarts += 1
            self._memo = _learn(piece, step)
        return step

    def shared_start(self, buf: bytes, s: int) -> int:
        """How many bytes of the step starting at ``buf[s]`` are known to repeat the previous
        step's unfinished prompt (0 when not known): its end lies beyond them."""
        memo = self._memo
        if memo is None or not buf.startswith(memoryview(memo.piece)[: memo.end], s):
            return 0
        return memo.end

    def wanted(self) -> int:
        """Bytes :meth:`shared_start` needs to see."""
        return self._memo.end if self._memo is not None else 0

    def _check_digits(self, piece: bytes) -> None:
        n = shared_prefix(piece, self._checked) if self._checked else 0
        if has_long_digit_run(memoryview(piece)[max(0, n - 18) :] if n else piece):
            raise GiveUp("long integer")
        self._checked = piece

    def _continue(self, piece: bytes, memo: _Memo) -> tuple[Any] | None:
        """``(step,)`` read from what the previous step left; None to parse it whole."""
        close = prompt_close(piece, memo.end, memo.key2, self._new_items_ok(piece, memo))
        if close is None:
            return None
        j, new = close
        rest = memoryview(piece)[j + 1 :]
        first = single(_loads(b'[[{"prompt":null' + rest + b"]]"), 2)
        if not isinstance(first, dict):
            return (None,)  # not one value: a wrong candidate end (or invalid)
        second = single(_loads(b'[[{"prompt":0' + rest + b"]]"), 2)
        if not isinstance(second, dict) or first["prompt"] is not None or second["prompt"] != 0:
            return None  # a later duplicate "prompt" key: parse the step whole
        if not depth_ok(first, rest, self.limits, 3):
            raise GiveUp("too deep")
        items = memo.items + new
        first["prompt"] = list(items)  # the caller's own list; the items are shared
        end = j
        while piece[end - 1] in WS:
            end -= 1
        self._memo = _Memo(piece, memo.open, end, items, memo.key2)
        return (first,)

    def _new_items_ok(self, piece: bytes, memo: _Memo) -> Any:
        def check(j: int) -> list[Any] | None:
            region = memoryview(piece)[memo.end : j]
            new = single(_loads(b"[[[[null" + region + b"]]]]"), 3)
            if not isinstance(new, list) or new[0] is not None:
                return None
            if not depth_ok(new, region, self.limits, 4):
                raise GiveUp("too deep")
            return new[1:]

        return check


def prompt_close(piece: bytes, start: int, key2: bytes, check: Any) -> tuple[int, Any] | None:
    """``(J, new items)``: the ``]`` closing the prompt (found before ``, key2`` and checked
    by ``check``), or None."""
    k = piece.find(key2, start)
    tries = 0
    while k >= 0 and tries < MAX_TRIES:
        j = closer_before(piece, k, 0x5D)  # "]"
        if j >= start:
            tries += 1
            new = check(j)
            if new is not None:
                return j, new
        k = piece.find(key2, k + 1)
    return None


def closer_before(buf: bytes, k: int, closer: int) -> int:
    """Index of the ``closer`` byte in ``<closer><ws>,<ws>`` right before ``k``, else -1."""
    i = k - 1
    while i >= 0 and buf[i] in WS:
        i -= 1
    if i < 0 or buf[i] != 0x2C:  # ","
        return -1
    i -= 1
    while i >= 0 and buf[i] in WS:
        i -= 1
    return i if i >= 0 and buf[i] == closer else -1


def _learn(piece: bytes, step: Any) -> _Memo | None:
    """Where this step's prompt items end in ``piece`` (one extra parse of the prompt), when
    the step starts ``{"prompt": [item, ...], "<key>": ...``."""
    if not isinstance(step, dict) or len(step) < 2:
        return None
    keys = iter(step)
    if next(keys) != "prompt" or not isinstance(step["prompt"], list) or not step["prompt"]:
        return None
    i = skip_ws(piece, 1)
    if not piece.startswith(_PROMPT, i):
        return None
    i = skip_ws(piece, i + len(_PROMPT))
    if i >= len(piece) or piece[i] != 0x3A:  # ":"
        return None
    i = skip_ws(piece, i + 1)
    if i >= len(piece) or piece[i] != 0x5B:  # "["
        return None
    open_ = i + 1
    key2 = orjson.dumps(next(keys))

    def check(j: int) -> list[Any] | None:
        items = single(_loads(b"[[[[" + memoryview(piece)[open_:j] + b"]]]]"), 3)
        return items if isinstance(items, list) else None

    close = prompt_close(piece, open_, key2, check)
    if close is None:
        return None
    end = close[0]
    while piece[end - 1] in WS:
        end -= 1
    return _Memo(piece, open_, end, list(step["prompt"]), key2)


def skip_ws(piece: bytes, i: int) -> int:
    while i < len(piece) and piece[i] in WS:
        i += 1
    return i
