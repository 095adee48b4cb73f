"""What the publish scan found in a JSON object it has already walked, for the next copy.

Published rows repeat the same objects many times: a trial's messages are in its
``messages``, ``prompt`` and ``completion`` columns and again in its ``trajectory``, each
``trl_sft`` row carries the whole conversation before its turn, and every row of a harness
carries the same tool definitions; each copy is walked once.

:class:`ScanMemo` keeps, for each object that was a list item, the finding *attempts* its
walk made (check, what, evidence; the place is added when a row's findings are made), keyed
by a digest of the object's JSON bytes (16 bytes of BLAKE2b, as the scan's text cache
keys its strings).  Replaying the attempts through the same de-duplication and
per-check cap gives exactly the findings walking the copy would have given: what a walk of
an object attempts depends on the object alone, and an attempt that repeats one earlier in
the same object is always refused, so only the first of each is kept.

Only values made of JSON types (``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
``float``, ``bool``, ``None``) may be scanned with a memo: parsed JSON, and the rows of a
shard with the published schema.  Two such values have the same JSON bytes only when they
are equal and of the same types; a tuple, by contrast, serializes like a list but is never
walked.  An object whose bytes cannot be made (another type), or are over
:data:`MAX_KEY_BYTES`, is walked every time.
"""

from __future__ import annotations

import hashlib

import orjson

from bf_assets.redact import memo
from bf_assets.redact.memo import CountingMemo

MAX_KEY_BYTES = 256 * 1024  # a larger object is walked every time (it rarely repeats)
MAX_BYTES = 32 * 1024 * 1024  # what the entries hold in all; the memo starts afresh past it
# bytes of a digest, a tuple and their headers, roughly (BytesMemo adds the table slot's
# memo.ENTRY_OVERHEAD: 160 in all)
ENTRY_OVERHEAD = 160 - memo.ENTRY_OVERHEAD
_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
_STRICT |= orjson.OPT_PASSTHROUGH_DATACLASS

Attempt = tuple[str, str, str]  # check, what was found (the message before " in <where>"), evidence


def json_digest(obj: object, max_bytes: int) -> tuple[bytes, int] | None:
    """``(16-byte BLAKE2b digest of obj's JSON bytes, their length)``, or None when ``obj``
    is not made of JSON types alone or its bytes are over ``max_bytes``.  Two such values
    with the same digest are equal and of the same types (``1``, ``1.0`` and ``true``
    differ in JSON)."""
    try:
        data = orjson.dumps(obj, option=_STRICT)
    except TypeError:  # a type JSON has not (a datetime, a subclass, bytes …)
        return None
    if len(data) > max_bytes:
        return None
    return hashlib.blake2b(data, digest_size=16).digest(), len(data)


class ScanMemo(CountingMemo):
    """Attempts of walked objects, bounded by :data:`MAX_BYTES`; share one across the rows
    and shards of a bundle."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(MAX_BYTES, MAX_BYTES)

    @staticmethod
    def key(obj: object) -> bytes | None:
        """The digest of ``obj``'s JSON bytes, or None when it is not to be remembered.  (A
        digest, not the bytes: orjson's bytes hold several times their length.)"""
        found = json_digest(obj, MAX_KEY_BYTES)
        return None if found is None else found[0]

    def remember(self, key: bytes, attempts: list[Attempt]) -> None:
        """Remember the attempts of the object ``key`` (the first of each check and
        evidence, in order)."""
        kept: dict[tuple[str, str], Attempt] = {}
        for a in attempts:
            kept.setdefault((a[0], a[2]), a)
        entry = tuple(kept.values())
        self.put(key, entry, len(key) + ENTRY_OVERHEAD + sum(len(a[1]) + 96 for a in entry))
