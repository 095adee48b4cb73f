"""A memo bounded by the bytes it holds.

The page cleaner remembers what every string it met cleans to, and how a raw JSONL line is
shown; curation and the publish scan remember what they made of repeated objects
(:class:`CountingMemo`, which also counts its hits).  Counting characters under-counts what a memo costs: a non-ASCII string takes up to
4 bytes a character, and every entry carries object headers and a slot of the table.
:class:`BytesMemo` charges each entry its cost in bytes (by default ``sys.getsizeof`` of the
key and of the value, the value only when it is another object, plus a fixed cost per
entry), refuses an entry over ``max_entry`` bytes, and starts afresh when adding one would
pass ``max_bytes`` (a memo's results are exact whatever it forgets).
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from typing import Any

ENTRY_OVERHEAD = 64  # bytes of the table slot and hash of one entry, roughly


class BytesMemo:
    """``get`` / ``put``, at most ``max_bytes`` held in all."""

    __slots__ = ("max_bytes", "max_entry", "_data", "_bytes", "clears", "get")

    def __init__(self, max_bytes: int, max_entry: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry = max_entry
        self._data: dict[Hashable, Any] = {}
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

    def put(self, key: Hashable, value: Any, cost: int | None = None) -> None:
        """Remember ``key → value`` (``cost``: its bytes, when the caller knows better) unless
        the entry alone is over ``max_entry`` bytes."""
        if cost is None:
            cost = sys.getsizeof(key) + (0 if value is key else sys.getsizeof(value))
        cost += ENTRY_OVERHEAD
        if cost > self.max_entry or key in self._data:
            return
        if self._bytes + cost > self.max_bytes:
            self._data.clear()
            self._bytes = 0
            self.clears += 1
        self._data[key] = value
        self._bytes += cost


class CountingMemo(BytesMemo):
    """:class:`BytesMemo` whose ``get`` counts the results it finds in ``hits`` (for tests
    and benchmarks)."""

    __slots__ = ("hits",)

    def __init__(self, max_bytes: int, max_entry: int) -> None:
        super().__init__(max_bytes, max_entry)
        self.hits = 0
        self.get = self._counted_get

    def _counted_get(self, key: Hashable) -> Any:
        hit = self._data.get(key)
        if hit is not None:
            self.hits += 1
        return hit
