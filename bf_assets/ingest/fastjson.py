"""The fast JSON path of a big trial: its repeated conversation parsed once.

The exact reader is :func:`~bf_assets.ingest.readers.parse_json_bytes` for a line and the
exact streaming parse of :mod:`bf_assets.ingest.rowstream` for a row over the line cap.
Everything here gives what the exact reader gives, or hands the bytes back to it.

Two files of a trial repeat their conversation: every ``llm_trajectory.jsonl`` line carries
the whole history in ``request.body.messages``, and every step of the one ``results.jsonl``
row in its ``prompt``.  Parsing each value whole parses the conversation once per request.

**A list that grows** (:class:`GrowingList`).  It remembers where the previous value's list
items lie in its bytes, and the parsed items.  When the next value holds the same item bytes
at its own first ``"<key>": [``, only the rest is parsed:

1. the new items, ``[[[[null`` + bytes + ``]]]]``, up to a ``]`` followed by ``,`` and the
   key that followed the list last time; this parses only when that ``]`` closes the list
   (``null``, not a number, so that bytes continuing the last item's token, as ``.5`` would
   continue ``2``, make the stand-in invalid instead of silently different);
2. the value without its list, ``head + null + tail`` and ``head + 0 + tail``: both must
   parse, with null and 0 at the list's key path, which proves that the list sits exactly
   there (and is not overridden by a later duplicate key).

Each part is parsed nested as deep as it sits in its file and checked against the depth cap
at its own level.  Consecutive values share the repeated items: read-only callers only.

**A huge row cut at its steps** (:func:`split_row`).  A ``results.jsonl`` row over the line
cap is cut instead of read whole:

* the head up to ``"trajectory": [`` is parsed as ``head + null}``, which succeeds only when
  that key sits at the top level of the row;
* each step ends where the next one starts: the next occurrence of the step's opening bytes
  (``{"prompt"`` ...) preceded by ``},`` gives a candidate end, and parsing the candidate
  bytes succeeds only when it is the real end (a JSON value parsed alone ends exactly where
  it ends in the row);
* the tail after the array's ``]`` is parsed as ``{"trajectory":null`` + tail.

Whenever a piece does not parse, looks unusual, or could be read differently by the exact
parser (an integer of 19 digits or more), or the row is made of many small steps (the exact
parser reads those in batches, faster), :func:`split_row` raises :class:`GiveUp` and the
caller runs the exact parser, which reports whatever is wrong.  Memory: one step's bytes (at
most :data:`STEP_CAP`) and one read chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import IO, Any

import orjson

from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    MiB,
    ReadIssue,
    ReadLimits,
    parse_json_bytes,
    value_issue,
)

WS = b" \t\r\n"
MAX_TRIES = 8  # candidate ends tried for one piece
MAX_RESTARTS = 8  # times a file re-learns its list's layout after a break in the chain
_NOT_ONE = object()  # bytes that are not exactly one JSON value


class GiveUp(Exception):
    """The fast path cannot vouch for this row; the exact parser must read it."""


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _single(outer: Any, levels: int) -> Any:
    """``outer`` unwrapped ``levels`` times when each wrapper holds exactly one value."""
    for _ in range(levels):
        if not isinstance(outer, list) or len(outer) != 1:
            return None
        outer = outer[0]
    return outer


def _nested(data: bytes, levels: int) -> Any:
    """``data`` parsed inside ``levels`` one-item lists (as deep as it sits in its file);
    None unless it is exactly one JSON value."""
    if not levels:
        return _loads(data)
    return _single(_loads(b"[" * levels + data + b"]" * levels), levels)


def skip_ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in WS:
        i += 1
    return i


def _before_ws(data: bytes, i: int) -> int:
    """The index just after the last byte before ``i`` that is not whitespace."""
    while data[i - 1] in WS:
        i -= 1
    return i


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


# --------------------------------------------------------------------------- a list that grows


class _Memo:
    __slots__ = ("piece", "open", "end", "items", "key2")

    def __init__(self, piece: bytes, open_: int, end: int, items: list[Any], key2: bytes) -> None:
        self.piece = piece  # the previous value's bytes
        self.open = open_  # index just after its list's "["
        self.end = end  # index just after its list's last item
        self.items = items  # its list's items, parsed
        self.key2 = key2  # the key after the list, as written ('"completion"')


class GrowingList:
    """Successive values whose list at ``path`` repeats the previous value's items and adds
    some (see the module doc).  ``level``: where a value sits in its file (1 for a line,
    3 for a step of a row)."""

    __slots__ = ("path", "level", "limits", "_key", "_memo", "_restarts")

    def __init__(self, path: tuple[str, ...], level: int, limits: ReadLimits) -> None:
        self.path = path
        self.level = level
        self.limits = limits
        self._key = orjson.dumps(path[-1])
        self._memo: _Memo | None = None
        self._restarts = 0

    def reuse(self, piece: bytes) -> Any:
        """``piece`` parsed from what the previous value left: the value, ``_NOT_ONE`` when
        ``piece`` is not one JSON value, or None when it must be parsed whole."""
        memo = self._memo
        if memo is None:
            return None
        open_ = self._open(piece)
        if open_ < 0 or not piece.startswith(memoryview(memo.piece)[memo.open : memo.end], open_):
            return None
        found = self._close(piece, open_ + memo.end - memo.open, memo.key2, continued=True)
        if found is None:
            return None
        close, new = found
        value = self._without_list(piece, open_, close)
        if value is None or value is _NOT_ONE:
            return value
        items = memo.items + new
        self._container(value)[self.path[-1]] = list(items)  # its own list, shared items
        self._memo = _Memo(piece, open_, _before_ws(piece, close), items, memo.key2)
        return value

    def learn(self, piece: bytes, value: Any) -> None:
        """Remember where the list of ``value`` (``piece`` parsed whole) lies, when it is a
        non-empty list followed by another key; a file learns at most MAX_RESTARTS times."""
        self._memo = None
        if self._restarts >= MAX_RESTARTS:
            return
        self._restarts += 1
        body = self._container(value)
        if body is None:
            return
        name = self.path[-1]
        items = body.get(name)
        keys = list(body)
        if not isinstance(items, list) or not items or keys[-1] == name:
            return
        open_ = self._open(piece)
        if open_ < 0:
            return
        key2 = orjson.dumps(keys[keys.index(name) + 1])
        found = self._close(piece, open_, key2, continued=False)
        if found is None or not isinstance(self._without_list(piece, open_, found[0]), dict):
            return
        self._memo = _Memo(piece, open_, _before_ws(piece, found[0]), list(items), key2)

    def forget(self) -> None:
        self._memo = None

    def repeated(self, buf: bytes, s: int) -> int:
        """How many bytes from ``buf[s]`` repeat the previous value up to its list's last
        item (0 when they do not): a value starting at ``s`` ends beyond them."""
        memo = self._memo
        if memo is None or not buf.startswith(memoryview(memo.piece)[: memo.end], s):
            return 0
        return memo.end

    def wanted(self) -> int:
        """Bytes :meth:`repeated` needs to see."""
        return self._memo.end if self._memo is not None else 0

    def _container(self, value: Any) -> dict[str, Any] | None:
        for key in self.path[:-1]:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, dict) else None

    def _open(self, piece: bytes) -> int:
        """Index just after the ``[`` of the first ``"<key>": [`` in ``piece``, or -1."""
        k = piece.find(self._key)
        if k < 0:
            return -1
        i = skip_ws(piece, k + len(self._key))
        if i >= len(piece) or piece[i] != 0x3A:  # ":"
            return -1
        i = skip_ws(piece, i + 1)
        return i + 1 if i < len(piece) and piece[i] == 0x5B else -1  # "["

    def _close(
        self, piece: bytes, start: int, key2: bytes, *, continued: bool
    ) -> tuple[int, list[Any]] | None:
        """``(index of the "]" closing the list, the items from start)``: a ``]`` found
        before ``, key2`` and checked by parsing the items up to it."""
        k = piece.find(key2, start)
        tries = 0
        while k >= 0 and tries < MAX_TRIES:
            j = closer_before(piece, k, 0x5D)  # "]"
            if j >= start:
                tries += 1
                items = self._items(memoryview(piece)[start:j], continued)
                if items is not None:
                    return j, items
            k = piece.find(key2, k + 1)
        return None

    def _items(self, region: memoryview, continued: bool) -> list[Any] | None:
        """The items in ``region`` when they close a list (``continued``: a list whose
        first items came before the region; those new items are checked for depth)."""
        n = self.level + len(self.path)  # the list's level in its file
        start = b"[" * n + b"null" if continued else b"[" * n
        items = _single(_loads(start + region + b"]" * n), n - 1)
        if not isinstance(items, list) or not continued:
            return items
        if not items or items[0] is not None or value_issue(items, self.limits, n, region):
            return None
        return items[1:]

    def _without_list(self, piece: bytes, open_: int, close: int) -> Any:
        """The value parsed with its list ``piece[open_ - 1 : close + 1]`` left out: the value,
        ``_NOT_ONE`` when the rest is not one value, None when the list is not at ``path``
        (checked with two stand-ins, null and 0) or the rest is too deep."""
        head, tail = piece[: open_ - 1], memoryview(piece)[close + 1 :]
        data = head + b"null" + tail
        first = _nested(data, self.level - 1)
        body = self._container(first)
        if body is None:
            return _NOT_ONE if first is None else None
        name = self.path[-1]
        if name not in body or body[name] is not None:
            return None
        second = self._container(_nested(head + b"0" + tail, self.level - 1))
        if second is None or second.get(name) != 0:
            return None
        if value_issue(first, self.limits, self.level, data) is not None:
            return None
        return first


class LineParser:
    """``parse(line, limits)`` -> ``(value, issues)`` exactly as :func:`parse_json_bytes`
    gives them, each ``llm_trajectory.jsonl`` request's repeated messages parsed once."""

    __slots__ = ("_messages",)

    def __init__(self, limits: ReadLimits = DEFAULT_LIMITS) -> None:
        self._messages = GrowingList(("request", "body", "messages"), 1, limits)

    def parse(self, line: bytes, limits: ReadLimits | None = None) -> tuple[Any, list[ReadIssue]]:
        value = self._messages.reuse(line)
        if value is not None and value is not _NOT_ONE:
            return value, []
        value, issues = parse_json_bytes(line, limits or self._messages.limits)
        if issues:
            self._messages.forget()
        else:
            self._messages.learn(line, value)
        return value, issues


# --------------------------------------------------------------------------- a huge row

CHUNK = MiB
STEP_CAP = 64 * MiB  # a step (or head, or tail) longer than this goes to the exact parser
_KEY = b'"trajectory"'
_NOT_WS = re.compile(rb"[^ \t\r\n]")
# Many steps averaging less than this: the exact parser reads them faster (no candidate
# search per step); real steps repeat their prompt and are far bigger.
SMALL_STEP_BYTES = 1024
SMALL_STEP_COUNT = 512
# Digits mapped to "0", everything else to a space: a long run is then a plain substring.
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


def has_long_digit_run(data: bytes | memoryview) -> bool:
    """True when ``data`` holds 19 consecutive ASCII digits (a possible 64-bit overflow:
    orjson reads such an integer as a float; the exact parser decides)."""
    return _LONG_RUN in bytes(data).translate(_DIGITS)


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


def _depth_ok(value: Any, piece: bytes | memoryview, limits: ReadLimits, level: int) -> bool:
    return value_issue(value, limits, level, piece) is None


class _Steps:
    """Parses the step pieces of one row; ``share``: a step's prompt is read from what the
    previous step left (:class:`GrowingList`)."""

    __slots__ = ("limits", "prompts", "_checked")

    def __init__(self, limits: ReadLimits, share: bool) -> None:
        self.limits = limits
        self.prompts = GrowingList(("prompt",), 3, limits) if share else None
        self._checked = b""  # the last piece found free of long digit runs

    def parse(self, piece: bytes) -> Any:
        """The step when ``piece`` is exactly one JSON value (None when not: a wrong
        candidate end).  Raises :class:`GiveUp` when the exact parser must decide."""
        n = shared_prefix(piece, self._checked) if self._checked else 0
        if has_long_digit_run(memoryview(piece)[max(0, n - 18) :] if n else piece):
            raise GiveUp("long integer")
        self._checked = piece
        if self.prompts is not None:
            step = self.prompts.reuse(piece)
            if step is _NOT_ONE:
                return None
            if step is not None:
                return step
        step = _nested(piece, 2)
        if step is None:
            return None
        if not _depth_ok(step, piece, self.limits, 3):
            raise GiveUp("too deep")
        if self.prompts is not None:
            self.prompts.learn(piece, step)
        return step

    def repeated(self, buf: bytes, s: int) -> int:
        return self.prompts.repeated(buf, s) if self.prompts is not None else 0

    def wanted(self) -> int:
        return self.prompts.wanted() if self.prompts is not None else 0


class _Window:
    """Bytes of the row read on demand from an open file: ``buf[base:]`` is what is still
    needed (``drop`` moves ``base``; the bytes before it are released once they are the
    larger part, so dropping costs no copy per step), ``off`` is the row offset of
    ``buf[0]``."""

    __slots__ = ("fh", "left", "buf", "base", "off")

    def __init__(self, fh: IO[bytes], length: int) -> None:
        self.fh = fh
        self.left = length
        self.buf = b""
        self.base = 0
        self.off = 0

    def more(self) -> bool:
        if self.left <= 0:
            return False
        pending = len(self.buf) - self.base
        # Reads grow with the piece being read (linear time for a long one), never past
        # the cap by more than a chunk.
        want = max(CHUNK, min(pending, STEP_CAP + CHUNK - pending))
        chunk = self.fh.read(min(want, self.left))
        if not chunk:
            raise GiveUp("the file ended early")
        self.left -= len(chunk)
        self.buf += chunk
        if len(self.buf) - self.base > STEP_CAP + CHUNK:  # e.g. a long run of whitespace
            raise GiveUp("piece over the cap")
        return True

    def drop(self, i: int) -> int:
        """Forget the bytes before buffer index ``i``; returns the new index of that byte."""
        if i > len(self.buf) // 2:
            self.buf = self.buf[i:]
            self.off += i
            self.base = 0
            return 0
        self.base = i
        return i

    def skip_ws(self, i: int, *, drop: bool = False) -> int:
        """Index of the first non-whitespace byte at or after ``i``, or -1 at the row's end.
        ``drop``: nothing before ``i`` is needed any more (a long run is then never held)."""
        while True:
            m = _NOT_WS.search(self.buf, i)
            if m is not None:
                return m.start()
            i = self.drop(len(self.buf)) if drop else len(self.buf)
            if not self.more():
                return -1

    def check_size(self, start: int) -> None:
        if len(self.buf) - start > STEP_CAP:
            raise GiveUp("piece over the cap")


def _loads_piece(piece: bytes) -> Any:
    if has_long_digit_run(piece):
        raise GiveUp("long integer")
    try:
        return orjson.loads(piece)
    except orjson.JSONDecodeError as exc:
        raise GiveUp(str(exc)) from None


def _head(w: _Window, limits: ReadLimits) -> tuple[dict[str, Any], int]:
    """Top-level keys before ``"trajectory": [`` and the buffer index after the ``[``."""
    i = w.skip_ws(0, drop=True)
    if i < 0 or w.buf[i] != 0x7B:  # "{"
        raise GiveUp("not an object")
    h = w.drop(i)
    start = h
    while True:
        k = w.buf.find(_KEY, start)
        if k >= 0:
            break
        w.check_size(h)
        start = max(h, len(w.buf) - len(_KEY))
        if not w.more():
            raise GiveUp("no trajectory")
    if k == h or w.buf[k - 1] == 0x5C:  # a backslash: inside a string
        raise GiveUp("escaped key")
    c = w.skip_ws(k + len(_KEY))
    if c < 0 or w.buf[c] != 0x3A:  # ":"
        raise GiveUp("not a key")
    b = w.skip_ws(c + 1)
    if b < 0 or w.buf[b] != 0x5B:  # "["
        raise GiveUp("trajectory is not a list")
    piece = w.buf[h:b] + b"null}"
    top = _loads_piece(piece)
    if not isinstance(top, dict) or top.get("trajectory", 0) is not None:
        raise GiveUp("unexpected head")
    if not _depth_ok(top, piece, limits, 1):
        raise GiveUp("too deep")
    del top["trajectory"]
    return top, b + 1


def _step_at(w: _Window, s: int, steps: _Steps) -> tuple[Any, int]:
    """Parse the step whose ``{`` is at buffer index ``s``; return it and the index of its
    closing ``}``.  Raises :class:`GiveUp` when no candidate end checks out."""
    while True:
        q = w.buf.find(b'"', s + 1, s + 256)
        q2 = w.buf.find(b'"', q + 1, s + 256) if q >= 0 else -1
        if q2 >= 0:
            break
        if len(w.buf) - s >= 256 or not w.more():
            raise GiveUp("no opening key")
    sig = w.buf[s : q2 + 1]  # e.g. {"prompt"
    tries = 0
    while len(w.buf) - s < steps.wanted() and w.more():
        pass
    # Bytes repeating the previous step's unfinished prompt cannot hold this step's end.
    start = s + max(1, steps.repeated(w.buf, s))
    while True:
        q = w.buf.find(sig, start)
        if q < 0:
            w.check_size(s)
            start = max(s + 1, len(w.buf) - len(sig))
            if not w.more():
                return _last_step(w, s, steps)
            continue
        start = q + 1
        e = closer_before(w.buf, q, 0x7D)  # "}"
        if e < 0:
            continue
        tries += 1
        if tries > MAX_TRIES:
            raise GiveUp("too many candidate ends")
        step = steps.parse(w.buf[s : e + 1])
        if step is not None:
            return step, e


def _last_step(w: _Window, s: int, steps: _Steps) -> tuple[Any, int]:
    """The last step: the whole rest of the row is buffered; its end is before some ``]``."""
    r = len(w.buf)
    for _ in range(MAX_TRIES):
        r = w.buf.rfind(b"]", s, r)
        if r < 0:
            break
        e = s + len(w.buf[s:r].rstrip(WS)) - 1  # the last byte before the ws and "]"
        if e < s or w.buf[e] != 0x7D:  # "}"
            continue
        step = steps.parse(w.buf[s : e + 1])
        if step is not None:
            return step, e
    raise GiveUp("no end for the last step")


def _tail(w: _Window, i: int, limits: ReadLimits) -> dict[str, Any]:
    """Top-level keys after the array (``i``: index after its ``]``)."""
    while w.more():
        w.check_size(i)
    tail = w.buf[i:]
    if _KEY in tail:
        raise GiveUp("another trajectory key")
    piece = b'{"trajectory":null' + tail
    rest = _loads_piece(piece)
    if not isinstance(rest, dict) or not _depth_ok(rest, piece, limits, 1):
        raise GiveUp("unexpected tail")
    del rest["trajectory"]
    return rest


def split_row(
    fh: IO[bytes],
    length: int,
    on_step: Callable[[int, Any], None],
    limits: ReadLimits,
    *,
    share: bool = False,
) -> tuple[dict[str, Any], int]:
    """Read one row of ``length`` bytes from ``fh`` (positioned at its start).

    Returns ``(top, n_steps)`` exactly as the exact parse would, steps handed to
    ``on_step`` as they are found.  Raises :class:`GiveUp` when the row needs the exact
    parser; steps handed over until then are the same as the exact parser's first ones.
    ``share``: steps may share their prompt's first messages with the previous step's;
    only for callers that never modify a step.
    """
    if limits.max_depth < 8:
        raise GiveUp("depth cap too low for the fast path")
    w = _Window(fh, length)
    top, i = _head(w, limits)
    n = 0
    steps = _Steps(limits, share)
    while True:
        i = w.skip_ws(i, drop=True)
        if i < 0:
            raise GiveUp("row ends inside the trajectory")
        c = w.buf[i]
        if c == 0x5D:  # "]": end of the array
            break
        if n:
            if c != 0x2C:  # ","
                raise GiveUp("no separator")
            i = w.skip_ws(i + 1, drop=True)
            if i < 0:
                raise GiveUp("row ends inside the trajectory")
            c = w.buf[i]
        if c != 0x7B:  # "{": only object steps here
            raise GiveUp("step is not an object")
        if n >= SMALL_STEP_COUNT and w.off + i < n * SMALL_STEP_BYTES:
            raise GiveUp("many small steps")
        if n >= limits.max_row_steps:
            raise GiveUp("over the step cap")  # the exact parser reports it
        s = w.drop(i)
        step, e = _step_at(w, s, steps)
        on_step(n, step)
        del step
        n += 1
        i = e + 1
    i = w.drop(i + 1)
    for k, v in _tail(w, i, limits).items():
        top[k] = v
    return top, n
