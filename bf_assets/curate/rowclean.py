"""A cleaner for many rows of one shape whose nested values repeat.

The review report's trial rows are cleaned like export rows before they leave the machine
(in a release's bundle).  Most of a row is nested values that repeat from row to row: the
skill audit of a harness and task, the findings of a check.

:class:`RowCleaner` decides each top-level key of a row as :class:`Cleaner` does (its
parent is the row, so it is never shared) and cleans each nested value once per distinct
value, its ``repr`` the key: exact for the JSON-like values rows hold (``1``, ``1.0``,
``True``, ``nan`` and ``None`` all differ), where a serialized form would fold some of
them together.  What cleaning a value counted is counted again for every row that holds
it.  A nested value is cleaned on its own exactly as inside its row: the walk into it
depends only on it, once its key is kept.
"""

from __future__ import annotations

from typing import Any

from bf_assets.curate.clean import _KEEP, Cleaner, CleanStats

SHARE_MAX_CHARS = 64 * 1024  # a larger nested value is cleaned in place, not remembered
SHARED_MAX_CHARS = 4 << 20  # the keys remembered, in all (then the memory starts over)


class RowCleaner(Cleaner):
    """:class:`Cleaner` whose :meth:`value` shares the cleaning of repeated nested values."""

    def __init__(self, stats: CleanStats | None = None) -> None:
        super().__init__(stats)
        self._shared: dict[str, tuple[Any, CleanStats | None]] = {}
        self._shared_chars = 0

    def value(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return super().value(value)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            keep, repl = self._on_key(value, k, v)
            if not keep:
                continue
            nk = self.text(k) if isinstance(k, str) else k
            if repl is not _KEEP:
                out[nk] = repl
            elif isinstance(v, dict | list):
                out[nk] = self._nested(v)
            else:
                out[nk] = self.text(v) if isinstance(v, str) else v
        return out

    def _nested(self, v: dict[Any, Any] | list[Any]) -> Any:
        key = repr(v)
        if len(key) > SHARE_MAX_CHARS:
            return super().value(v)
        hit = self._shared.get(key)
        if hit is not None:
            return self.replayed(hit)
        cleaned, counted = self.counted_apart(lambda: super(RowCleaner, self).value(v))
        if self._shared_chars + len(key) > SHARED_MAX_CHARS:
            self._shared.clear()
            self._shared_chars = 0
        self._shared[key] = (cleaned, counted)
        self._shared_chars += len(key)
        return cleaned
