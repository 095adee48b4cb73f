"""Handing freed memory back to the system after a large structure is let go.

A dataset review of a large corpus is built from many short-lived objects (one partition's
table and whole reviews at a time) interleaved with the few it keeps; once those are freed,
glibc keeps the free pages inside its heap (and the mmap threshold raised by
``bf_assets.ingest.heap`` keeps more of it there), so the process's resident size stays at
its high-water mark.  :func:`trim` collects cyclic garbage and asks glibc
(``malloc_trim``) and pyarrow's memory pool to return what is free.  Nothing computed
changes; on another C library it only collects garbage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        lib = ctypes.CDLL(name)
        lib.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return lib


def trim() -> bool:
    """Collect garbage and return free heap pages to the system; True when glibc did."""
    gc.collect()
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except (ImportError, AttributeError):
        pass
    lib = _libc()
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True
