"""Fast path for one huge ``results.jsonl`` row: split it at its steps, parse each with orjson.

The exact parse of :mod:`bf_assets.ingest.rowstream` reads every value whole; here the
row's bytes are cut instead, and a step repeating the previous step's prompt is parsed
from its new messages only:

* the head up to ``"trajectory": [`` is parsed as ``head + null}``, which succeeds only when
  that key sits at the top level of the row;
* each step ends where the next one starts: the next occurrence of the step's opening bytes
  (``{"prompt"`` ...) preceded by ``},`` gives a candidate end, and parsing the candidate
  bytes succeeds only when it is the real end (a JSON object parsed alone ends exactly where
  it ends in the row);
* the tail after the array's ``]`` is parsed as ``{"trajectory":null`` + tail.

Every piece is checked against the row's depth cap at the level it sits in the row.
Whenever a piece does not parse, looks unusual, or could be read differently by the exact
parser (an integer of 19 digits or more), or the row is made of many small steps (the exact
parser reads those in batches, faster), :func:`split_row` raises :class:`GiveUp`; the caller
then runs the exact parser, which reports whatever is wrong.  So a result from here is
always the one the exact parse gives.  Steps are parsed by
:class:`~bf_assets.ingest.stepparse.StepParser` (which can also reuse the previous step's
prompt).  Memory: one step's bytes (at most :data:`STEP_CAP`), one read chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import IO, Any

import orjson

from bf_assets.ingest.readers import MiB, ReadLimits
from bf_assets.ingest.stepparse import (
    WS,
    GiveUp,
    StepParser,
    closer_before,
    depth_ok,
    has_long_digit_run,
)

__all__ = ["GiveUp", "has_long_digit_run", "split_row"]

CHUNK = MiB
STEP_CAP = 64 * MiB  # a step (or head, or tail) longer than this goes to the exact parser
MAX_TRIES = 8  # candidate ends tried for one step before giving up
_WS = WS
_KEY = b'"trajectory"'


_NOT_WS = re.compile(rb"[^ \t\r\n]")
# Many steps averaging less than this: the exact parser reads them faster (no candidate
# search per step); real steps repeat their prompt and are far bigger.
SMALL_STEP_BYTES = 1024
SMALL_STEP_COUNT = 512


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


def _loads(piece: bytes) -> Any:
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
    top = _loads(piece)
    if not isinstance(top, dict) or top.get("trajectory", 0) is not None:
        raise GiveUp("unexpected head")
    if not depth_ok(top, piece, limits, 1):
        raise GiveUp("too deep")
    del top["trajectory"]
    return top, b + 1


def _step_at(w: _Window, s: int, steps: StepParser) -> tuple[Any, int]:
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
    start = s + max(1, steps.shared_start(w.buf, s))
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


def _last_step(w: _Window, s: int, steps: StepParser) -> tuple[Any, int]:
    """The last step: the whole rest of the row is buffered; its end is before some ``]``."""
    r = len(w.buf)
    for _ in range(MAX_TRIES):
        r = w.buf.rfind(b"]", s, r)
        if r < 0:
            break
        e = s + len(w.buf[s:r].rstrip(_WS)) - 1  # the last byte before the ws and "]"
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
    rest = _loads(piece)
    if not isinstance(rest, dict) or not depth_ok(rest, piece, limits, 1):
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
    ``share``: steps may share their prompt's first messages with the previous step's
    (:mod:`bf_assets.ingest.stepparse`); only for callers that never modify a step.
    """
    if limits.max_depth < 8:
        raise GiveUp("depth cap too low for the fast path")
    w = _Window(fh, length)
    top, i = _head(w, limits)
    n = 0
    steps = StepParser(limits, share=share)
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
