"""A cheap first look before a case-insensitive regex: Python's ``re`` with IGNORECASE over
an alternation tries every branch at every position, so most of an audit's time went into
texts that contain none of the words the pattern needs.

``may_contain`` is exact as a filter: it answers False only for ASCII text that, lowercased,
contains none of the needles (lowercase ASCII words every match of the pattern must
contain).  Non-ASCII text always goes to the regex, because IGNORECASE also matches a few
non-ASCII letters to ASCII ones (``ſ`` to ``s``, ``K`` to ``k``, ``ı`` to ``i``).
"""

from __future__ import annotations

from collections.abc import Iterable

_LOWERED: dict[str, str] = {}  # the texts of the trial under review, lowercased once
_LOWERED_MAX = 256
_KEEP_CHARS = 16_384


def may_contain(text: str, needles: Iterable[str]) -> bool:
    if not text.isascii():
        return True
    # Several audits look at the same texts (an action's command, an observation): each is
    # lowercased once.
    low = _LOWERED.get(text)
    if low is None:
        low = text.lower()
        if len(text) <= _KEEP_CHARS:  # memory stays bounded
            if len(_LOWERED) >= _LOWERED_MAX:
                _LOWERED.clear()
            _LOWERED[text] = low
    for n in needles:  # noqa: SIM110 - a plain loop: no generator per text
        if n in low:
            return True
    return False
