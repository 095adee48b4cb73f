"""What the tests of process lifetimes share (the UI's supervisor, the background render, a
stopped release)."""

from __future__ import annotations

import os


def alive(pid: int, *, group: bool = False) -> bool:
    """Whether a process ``pid`` exists (a zombie not yet waited for counts); ``group``:
    whether any process of the process group ``pid`` exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    return True
