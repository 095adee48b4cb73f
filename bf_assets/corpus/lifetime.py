"""Child processes that end with the process that started them.

A forked helper (the background trial pages of a release, the webserver and daemon of
``bf-assets ui``) must not outlive its parent when the parent is killed outright (SIGKILL,
the OOM killer): nothing of the parent's runs then, so the kernel has to tell the child.
On Linux ``prctl(PR_SET_PDEATHSIG)`` does; elsewhere these calls do nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int, sig: int = signal.SIGTERM) -> bool:
    """In a freshly started child of ``parent``: have the kernel send ``sig`` to this process
    when its parent ends; if the parent already has, end now.  True when it is in place."""
    if not sys.platform.startswith("linux"):
        return False
    # a signal ignored in the parent stays ignored in its children, across exec too (Dagster
    # maps SIGTERM to whatever SIGINT does, SIG_IGN included): the one that tells this
    # process its parent ended must not be
    if signal.getsignal(sig) == signal.SIG_IGN:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})  # a blocked one is inherited as well
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)
    return ok
