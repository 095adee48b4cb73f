"""What the tests of process lifetimes share (the UI's supervisor, the background render)."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie not yet waited for counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
