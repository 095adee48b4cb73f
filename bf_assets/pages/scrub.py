"""What a page may show: trial values cleaned the way the export cleans them, or raw.

Parsed values go through :func:`bf_assets.redact.clean.clean_value` as they are (banned keys
dropped, secret fields masked, secrets redacted, host paths replaced).  A page also shows raw
file lines that cannot be parsed on their own (a line of a pretty-printed ``result.json``,
the clipped head of a 100 MB JSONL line): before ``clean_value`` cleans such a fragment as
text, :func:`mask_keys` applies the key rules to it (the value of a banned, host-path or
secret-named key is replaced, and a fragment is cut where a banned key opens an object or
list whose end it does not hold) and removes private reasoning parts: an object whose
``type`` names a reasoning part (``thinking``, ``reasoning``, ``summary_text``…) or that says
``"thought": true`` is removed from its opening brace (or the fragment's start, when it
opened before) to its closing one (or the fragment's end).  A fragment cannot show the
evidence keys the export's rule also asks of a ``reasoning`` part, so a page removes more
than the export would, never less.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple

from bf_assets.pages.cleaner import PageCleaner
from bf_assets.redact import PLACEHOLDER, default_rules, is_secret_key
from bf_assets.redact.clean import (
    BANNED_KEYS,
    HOST_PATH_KEYS,
    HOST_PATH_PLACEHOLDER,
    REASONING_PART_TYPES,
)

REMOVED = "[removed]"
AHEAD = 64 * 1024  # what a clipped fragment's line holds after it, searched for part marks
_KEY = re.compile(r'"([A-Za-z0-9_.\-]{1,80})"\s*:\s*')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)
# what a bracket scan looks at: JSON string delimiters, escapes and brackets
_TOKEN = re.compile(r'[\\"{}\[\]]')
# a key-value pair that makes its object a reasoning part, wherever it is in a fragment
_REASONING_MARK = re.compile(
    r'"type"\s*:\s*"(?:'
    + "|".join(re.escape(t) for t in sorted(REASONING_PART_TYPES, key=len, reverse=True))
    + r')"|"thought"\s*:\s*true\b'
)


def _string_end(text: str, start: int) -> int:
    m = _STRING.match(text, start)
    return m.end() if m else len(text)


def mask_keys(text: str, ahead: str = "") -> tuple[str, int]:
    """``text`` with the key rules applied and reasoning parts removed, and how many
    brackets the removed value left open (0: none): the fragment was cut there, and the
    lines that follow belong to that value until as many close.  ``ahead``: the text that
    follows in the line, looked at for the marks of parts that begin in ``text``."""
    text, still_open = _drop_reasoning(text, ahead)
    masked, opened = _mask_pairs(text)
    return masked, max(still_open.depth if still_open else 0, opened)


class OpenPart(NamedTuple):
    """Where a text ends inside a reasoning part: the brackets still open, and whether it
    ends inside a JSON string (just after a backslash)."""

    depth: int
    in_str: bool
    esc: bool


def open_reasoning_at_end(text: str) -> OpenPart | None:
    """Whether ``text`` (bytes before a window into a long line) ends inside a reasoning part
    (its ``type`` mark is in ``text``), and how: :func:`after_open_part` removes the part's
    rest from the window."""
    return _drop_reasoning(text)[1]


def after_open_part(text: str, part: OpenPart) -> str:
    """``text`` (a window that starts inside the reasoning part ``part`` describes) without
    the part's rest: a removal marker, then what follows the part's closing brace."""
    end, _ = _close_of(text, 0, part)
    return f'"{REMOVED}"' + ("" if end is None else text[end:])


def _mask_pairs(text: str) -> tuple[str, int]:
    out: list[str] = []
    pos = 0
    for m in _KEY.finditer(text):
        if m.start() < pos:
            continue
        key, v = m.group(1), m.end()
        if v >= len(text):
            break
        first = text[v]
        replacement: str | None = None
        if key in BANNED_KEYS:
            if first in "{[":
                out.append(text[pos:v])
                out.append(f'"{REMOVED}"')
                return "".join(out), max(0, bracket_depth(text[v:]))
            if first == '"':
                replacement = f'"{REMOVED}"'
        elif first == '"':
            end = _string_end(text, v)
            inner = text[v + 1 : end - 1] if end - v >= 2 else ""
            if key in HOST_PATH_KEYS and inner.startswith(("/", "~")):
                replacement = f'"{HOST_PATH_PLACEHOLDER}"'
            elif is_secret_key(key) and inner and "REDACTED" not in inner:
                replacement = '"' + PLACEHOLDER.format(kind="secret_field") + '"'
        if replacement is None:
            continue
        end = _string_end(text, v)
        out.append(text[pos:v])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out), 0


def _drop_reasoning(text: str, ahead: str = "") -> tuple[str, OpenPart | None]:
    """``text`` without the objects :data:`_REASONING_MARK` says are reasoning parts, and
    how ``text`` ends inside the last one when that runs past its end (else None).
    ``ahead``: what follows ``text`` in its line (not shown), where the mark of a part that
    begins in ``text`` may be (a Gemini thought says ``"thought": true`` after its text)."""
    full = text + ahead if ahead else text
    if _REASONING_MARK.search(full) is None:  # nearly every fragment
        return text, None
    n = len(text)
    out: list[str] = []
    pos = cursor = 0
    still_open: OpenPart | None = None
    while pos < n:
        m = _REASONING_MARK.search(full, cursor)
        if m is None:
            break
        opens = _open_brackets(full, pos, m.start())
        brace = bool(opens) and full[opens[-1]] == "{"
        # the part begins at its brace; after a list's bracket (not JSON) or where the
        # fragment's unshown part ended, when it opened before
        begin = opens[-1] + (0 if brace else 1) if opens else pos
        if begin >= n:  # a part after the fragment: nothing of it is shown
            cursor = m.end()
            continue
        end, _ = _close_of(full, m.end(), OpenPart(1, False, False))
        out.append(text[pos:begin])
        out.append(f'"{REMOVED}"')
        if end is None or end > n:
            # how ``text`` ends inside the part, scanned from just after its mark (outside
            # any string, wherever ``text`` began), or from its brace when the mark is ahead
            after = m.end() if m.end() <= n else begin + 1 if brace else begin
            _, still_open = _close_of(text, after, OpenPart(1, False, False))
            pos = n
            break
        pos = cursor = end
    out.append(text[pos:])
    return "".join(out), still_open


class _Brackets:
    """The brackets of a text outside its JSON strings, found by looking only at quotes,
    backslashes and brackets (a long text is mostly inside strings); the string state is
    kept from one call to the next, so a text can be scanned in pieces."""

    __slots__ = ("in_str", "escaped")

    def __init__(self, in_str: bool = False, escaped: int = -1) -> None:
        self.in_str = in_str
        self.escaped = escaped  # the position a backslash in a string escapes

    def positions(self, text: str, start: int, stop: int) -> Iterator[int]:
        for m in _TOKEN.finditer(text, start, stop):
            i = m.start()
            if i == self.escaped:
                continue
            ch = text[i]
            if self.in_str:
                if ch == "\\":
                    self.escaped = i + 1
                elif ch == '"':
                    self.in_str = False
            elif ch == '"':
                self.in_str = True
            else:
                yield i


def _open_brackets(text: str, start: int, stop: int) -> list[int]:
    """Positions of the brackets opened in ``text[start:stop]`` and not closed there
    (outside JSON strings), innermost last."""
    stack: list[int] = []
    for i in _Brackets().positions(text, start, stop):
        if text[i] in "{[":
            stack.append(i)
        elif stack:
            stack.pop()
    return stack


def _close_of(text: str, start: int, part: OpenPart) -> tuple[int | None, OpenPart | None]:
    """Where the object ``part`` describes (open at ``start``) ends, just past its closing
    brace, or ``None`` and how it is still open at the end of ``text``."""
    scan = _Brackets(part.in_str, start if part.esc else -1)
    depth = part.depth
    for i in scan.positions(text, start, len(text)):
        if text[i] in "{[":
            depth += 1
            continue
        depth -= 1
        if depth == 0:
            return i + 1, None
    return None, OpenPart(depth, scan.in_str, scan.escaped == len(text))


def bracket_depth(text: str) -> int:
    """Net ``{[`` minus ``}]`` outside JSON strings."""
    return sum(1 if text[i] in "{[" else -1 for i in _Brackets().positions(text, 0, len(text)))


class Scrub:
    """The cleaning of one page or of several (``clean=False``: the raw values, for local use
    only).  Its cleaner (:class:`bf_assets.pages.cleaner.PageCleaner`) remembers the text it
    cleaned: give the pages of a batch one ``Scrub`` and the text they repeat (system
    prompts, tool definitions, the history every step's request carries, task and model
    names, labels) is cleaned once.  A remembered result is exactly what cleaning the string
    again would give, and the memo is bounded by bytes."""

    __slots__ = ("clean", "_cleaner")

    def __init__(self, clean: bool = True) -> None:
        self.clean = clean
        self._cleaner = PageCleaner(default_rules()) if clean else None

    def value(self, value: Any) -> Any:
        if self._cleaner is None:
            return value
        if isinstance(value, str):
            return self._cleaner.text(value)
        return self._cleaner.value(value)

    def remember(self, key: Hashable, make: Callable[[], str]) -> str:
        """``make()``, remembered under ``key`` for every page cleaned with this ``Scrub``:
        ``make`` must depend on ``key`` alone (and on the rules)."""
        if self._cleaner is None:
            return make()
        memo = self._cleaner.derived
        hit = memo.get(key)
        if hit is None:
            hit = make()
            memo.put(key, hit, sys.getsizeof(key) + sys.getsizeof(hit))
        return hit

    def text(self, text: str) -> str:
        if self._cleaner is None:
            return text
        if isinstance(text, str):  # Cleaner.value of a string is Cleaner.text of it
            return self._cleaner.text(text)
        return self._cleaner.value(text)

    def fragment(self, text: str, ahead: str = "") -> tuple[str, int]:
        """A raw line (or a clipped piece of one, followed in its line by ``ahead``) cleaned
        as text after the key rules, and the brackets a removed value left open
        (:func:`mask_keys`)."""
        if not self.clean:
            return text, 0
        masked, opened = mask_keys(text, ahead)
        return self.text(masked), opened
