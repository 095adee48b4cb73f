"""The page cleaner: :class:`bf_assets.redact.clean.Cleaner` with remembered strings.

Its results are exactly ``Cleaner.value`` and ``Cleaner.text``: the walk is the cleaner's
own; every string's cleaned text is remembered (:class:`bf_assets.redact.memo.BytesMemo`,
bounded by bytes), so the text pages repeat (system prompts, tool definitions, the history
every step's request carries, names and labels) is cleaned once per process.
"""

from __future__ import annotations

from bf_assets.redact.clean import CACHE_MIN_CHARS, Cleaner, CleanStats
from bf_assets.redact.memo import BytesMemo

MEMO_BYTES = 8 * 1024 * 1024  # all the remembered strings of one process
MEMO_ENTRY = 256 * 1024  # a string (with its result) over this is cleaned every time
DERIVED_BYTES = 4 * 1024 * 1024  # what pages derive from raw lines (Scrub.remember)
DERIVED_ENTRY = 1024 * 1024


class PageCleaner(Cleaner):
    """:class:`Cleaner` with every string's result remembered (pages keep no counts)."""

    def __init__(self, rules: object = None) -> None:
        super().__init__(CleanStats())
        self.rules = rules  # what the remembered results were cleaned with
        self.memo = BytesMemo(MEMO_BYTES, MEMO_ENTRY)
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
