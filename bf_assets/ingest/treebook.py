"""The tree digests a release took of its trials, kept for the trial pages.

``bf-assets release`` walks every trial once before anything reads it
(:func:`bf_assets.ingest.discovery.trial_fingerprint`, for the ingest state and the sensor).  The
trial pages need the same digest (a page whose inputs are unchanged is not rendered again)
and walked every trial again for it: some 13 % of the pages' CPU at 20,000 trials.  The
release writes the digests it took to a *tree book* and the pages read them from it.

A digest taken before the read is the safe one to keep: a file that changes after it makes
the next digest differ, so that page is rendered again.

Format: fixed records of 48 bytes in key order, the first 16 bytes of
``sha256(root NUL rel_path)`` and the 32-byte digest; a trial without a digest (unlistable,
too big) has no record and its page walks as before.  Read, the book stays those bytes and
is searched by halving (some 17 steps at 100,000 trials): 4.8 MB at 100,000 trials, where a
dict of the records took 16.6 MB in the process that renders the pages.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path

from bf_assets.ingest.discovery import TrialRef

KEY_BYTES = 16
DIGEST_BYTES = 32
RECORD = KEY_BYTES + DIGEST_BYTES
MAX_BOOK_BYTES = 64 * 1024 * 1024  # a larger file is not read (the pages walk)


def book_key(ref: TrialRef) -> bytes:
    text = f"{ref.root}\0{ref.rel_path}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(text).digest()[:KEY_BYTES]


def records(pairs: Iterable[tuple[TrialRef, str | None]]) -> bytes:
    """The book's records of ``(trial, hex tree digest or None)``."""
    out = bytearray()
    for ref, tree in pairs:
        if tree is not None and len(tree) == 2 * DIGEST_BYTES:
            out += book_key(ref) + bytes.fromhex(tree)
    return bytes(out)


def _sorted(data: bytes) -> bytes:
    """The records of ``data`` in key order (a record is never split)."""
    recs = [data[i : i + RECORD] for i in range(0, len(data), RECORD)]
    recs.sort()
    return b"".join(recs)


def write_book(path: Path, chunks: Iterable[bytes]) -> None:
    """Write the records in key order, atomically, readable by this user only; the folder is
    made when missing."""
    from bf_assets.files import write_atomic

    write_atomic(path, _sorted(b"".join(chunks)), mode=0o600)


class TreeBook:
    """The digests of a book, by trial (:meth:`get`: the hex digest, or None)."""

    __slots__ = ("_data", "_n")

    def __init__(self, data: bytes = b"") -> None:
        if len(data) % RECORD:
            raise ValueError(f"a tree book is records of {RECORD} bytes, not {len(data)} bytes")
        n = len(data) // RECORD
        keys = (data[i * RECORD : i * RECORD + KEY_BYTES] for i in range(n))
        prev = b""
        for k in keys:  # a book in another order (not this writer's) is put in order
            if k < prev:
                data = _sorted(data)
                break
            prev = k
        self._data = data
        self._n = n

    @classmethod
    def read(cls, path: str | os.PathLike[str] | None) -> TreeBook:
        """The book at ``path``; an empty one when there is none, it is unreadable, too
        large or malformed (then every page walks its trial)."""
        if path is None:
            return cls()
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_BOOK_BYTES + 1)
            return cls(data) if len(data) <= MAX_BOOK_BYTES else cls()
        except (OSError, ValueError):
            return cls()

    def _key_at(self, i: int) -> bytes:
        return self._data[i * RECORD : i * RECORD + KEY_BYTES]

    def get(self, ref: TrialRef) -> str | None:
        key = book_key(ref)
        i = bisect_left(range(self._n), key, key=self._key_at)
        if i == self._n or self._key_at(i) != key:
            return None
        return self._data[i * RECORD + KEY_BYTES : (i + 1) * RECORD].hex()

    def __len__(self) -> int:
        return self._n
