"""A string → string memo bounded by the bytes it holds.

The page cleaner remembers what every string it met cleans to.  Counting characters
under-counts what a memo costs: a non-ASCII string takes up to 4 bytes a character, and
every entry carries two string headers and a slot of the table.  :class:`BytesMemo` counts
``sys.getsizeof`` of the key and of the value (the value only when it is another object)
plus a fixed cost per entry, refuses entries over ``max_entry`` bytes, and starts afresh
when adding one would pass ``max_bytes`` (a memo's results are exact whatever it forgets).
"""

from __future__ import annotations

import sys

ENTRY_OVERHEAD = 64  # bytes of the table slot and hash of one entry, roughly


def str_bytes(text: str) -> int:
    """What a string object takes in memory (header included)."""
    return sys.getsizeof(text)


class BytesMemo:
    """``get`` / ``put`` of cleaned strings, at most ``max_bytes`` held in all."""

    __slots__ = ("max_bytes", "max_entry", "_data", "_bytes", "clears", "get")

    def __init__(self, max_bytes: int, max_entry: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry = max_entry
        self._data: dict[str, str] = {}
        self._bytes = 0
        self.clears = 0  # times the memo started afresh (for tests and benchmarks)
        # ``get(key)``: the remembered result or None (the table's own lookup: the table is
        # cleared in place, never replaced)
        self.get = self._data.get

    def __len__(self) -> int:
        return len(self._data)

    @property
    def bytes(self) -> int:
        return self._bytes

    def put(self, key: str, value: str) -> None:
        """Remember ``key → value`` unless the entry alone is over ``max_entry`` bytes."""
        cost = str_bytes(key) + ENTRY_OVERHEAD
        if value is not key:
            cost += str_bytes(value)
        if cost > self.max_entry or key in self._data:
            return
        if self._bytes + cost > self.max_bytes:
            self._data.clear()
            self._bytes = 0
            self.clears += 1
        self._data[key] = value
        self._bytes += cost
