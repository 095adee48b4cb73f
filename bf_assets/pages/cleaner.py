"""The page cleaner: :class:`bf_assets.curate.clean.Cleaner` with remembered strings and a
copy-on-write walk.

Its results are exactly ``Cleaner.value`` and ``Cleaner.text``: the same rules, applied in
the same order, by the same functions; only the bookkeeping is cheaper.

* Every string's cleaned text is remembered (:class:`bf_assets.curate.memo.BytesMemo`,
  bounded by bytes): the text pages repeat (system prompts, tool definitions, the history
  every step's request carries, names and labels) is cleaned once per process.
* A parsed value is walked once, in place: a container nothing in which changes is returned
  as it is (no copy), a changed one is copied from its first change on.  The key rules are
  looked up once per distinct key (most keys, ``role``, ``content``, ``text``…, are never
  banned, reasoning, host-path or secret-named: they take no rule call at all); a key that
  any rule may apply to goes through ``Cleaner._on_key`` itself.
* What the walk does not do itself goes to ``Cleaner.value`` whole: a key that cleaning
  changes into another key of the same object, a dict or list subclass, a value nested
  deeper than :data:`MAX_DEPTH` (the exact walk is iterative).
"""

from __future__ import annotations

from typing import Any

from bf_assets.curate.clean import (
    _KEEP,
    CACHE_MIN_CHARS,
    Cleaner,
    CleanStats,
    key_rules,
    reasoning_kind,
)
from bf_assets.curate.memo import BytesMemo

MEMO_BYTES = 8 * 1024 * 1024  # all the remembered strings of one process
MEMO_ENTRY = 256 * 1024  # a string (with its result) over this is cleaned every time
KEY_CACHE = 1 << 16  # distinct keys remembered with their rule flags
KEY_CHARS = 256  # longer keys are looked up every time
MAX_DEPTH = 100
DERIVED_BYTES = 4 * 1024 * 1024  # what pages derive from raw lines (Scrub.remember)
DERIVED_ENTRY = 1024 * 1024


class _Fallback(Exception):
    """The value needs the exact walk of ``Cleaner.value``."""


def key_is_plain(key: str) -> bool:
    """True when no key rule can apply to ``key`` whatever its value: not banned, not a
    reasoning name, not a host-path key and not secret-named for any value."""
    return not any(key_rules(key))


class PageCleaner(Cleaner):
    """:class:`Cleaner` with every string's result remembered (pages keep no counts)."""

    def __init__(self, rules: object = None) -> None:
        super().__init__(CleanStats())
        self.rules = rules  # what the remembered results were cleaned with
        self.memo = BytesMemo(MEMO_BYTES, MEMO_ENTRY)
        self._keys: dict[str, tuple[bool, str]] = {}  # key -> (plain, cleaned key)
        self._get = self.memo.get
        # what pages derive from a raw line and the rules alone (a JSONL line as shown)
        self.derived = BytesMemo(DERIVED_BYTES, DERIVED_ENTRY)

    def text(self, text: str) -> str:
        hit = self.memo.get(text)
        if hit is not None:
            return hit
        # short strings: the process-wide bounded cache; longer ones: the same result, kept
        # only in the bounded memo (the Cleaner's own cache of them has no size bound)
        out = super().text(text) if len(text) < CACHE_MIN_CHARS else self._clean_text(text)[0]
        self.memo.put(text, out)
        return out

    def value(self, value: Any) -> Any:
        """``Cleaner.value(value)``: the same result (``value`` itself when nothing in it
        changes)."""
        if isinstance(value, str):
            return self.text(value)
        if type(value) is not dict and type(value) is not list:
            if isinstance(value, dict | list):
                return super().value(value)
            return value
        try:
            return self._walk(value, 0)
        except _Fallback:
            return super().value(value)

    def _key(self, key: str) -> tuple[bool, str]:
        hit = self._keys.get(key)
        if hit is None:
            hit = (key_is_plain(key), self.text(key))
            if len(key) <= KEY_CHARS:
                if len(self._keys) >= KEY_CACHE:
                    self._keys.clear()
                self._keys[key] = hit
        return hit

    def _walk(self, src: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Fallback
        if type(src) is dict:
            return self._dict(src, depth)
        return self._list(src, depth)

    def _item(self, v: Any, depth: int) -> Any:
        """A value of a kept key or a kept list item, cleaned (``v`` itself when unchanged)."""
        t = type(v)
        if t is str:
            hit = self._get(v)
            return hit if hit is not None else self.text(v)
        if t is dict or t is list:
            return self._walk(v, depth + 1)
        if isinstance(v, str | dict | list):
            raise _Fallback  # a subclass: the exact walk makes a plain copy of it
        return v

    def _dict(self, src: dict[Any, Any], depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] | None = None
        for i, (k, v) in enumerate(src.items()):
            if type(k) is str:
                plain, nk = self._key(k)
            elif isinstance(k, str):
                raise _Fallback
            else:
                plain, nk = False, k
            if plain and not (type(v) is dict and reasoning_kind(v) is not None):
                nv = self._item(v, depth)
            else:
                keep, repl = self._on_key(src, k, v)
                if not keep:
                    if out is None:
                        out = _head(src, i)
                    continue
                nv = self._item(v, depth) if repl is _KEEP else repl
            if out is None:
                if (nk is k or nk == k) and (nv is v or (type(nv) is str and nv == v)):
                    continue
                out = _head(src, i)
            if nk in out:
                raise _Fallback  # two keys clean to one: the exact walk decides
            out[nk] = nv
        return src if out is None else out

    def _list(self, src: list[Any], depth: int) -> list[Any]:
        out: list[Any] | None = None
        for i, v in enumerate(src):
            if type(v) is dict and self._drop_item(v):
                if out is None:
                    out = src[:i]
                continue
            nv = self._item(v, depth)
            if out is None:
                if nv is v or (type(nv) is str and nv == v):
                    continue
                out = src[:i]
            out.append(nv)
        return src if out is None else out


def _head(src: dict[Any, Any], n: int) -> dict[Any, Any]:
    """The first ``n`` items of ``src`` (unchanged by cleaning) as a new dict."""
    out: dict[Any, Any] = {}
    for j, (k, v) in enumerate(src.items()):
        if j >= n:
            break
        out[k] = v
    return out
