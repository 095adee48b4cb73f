"""The worker pools (review, pages, curation, the publish gate) are stopped by their parent.

A signal meant for the whole process group (Ctrl-C, ``kill -- -PID``) must not end a worker
in the middle of sending its result: the parent's pool then waited for the rest of it for
ever (a release stopped during curation hung so).  And a parent killed outright must take
its workers along.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time

import pytest
from prockit import children_of_killed

from bf_assets.batch.run import fork_pool

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers are forked on Linux only"
)


def _signalled_then_pid() -> int:
    """A task that receives the signals a process group's Ctrl-C or ``kill`` sends, then
    finishes its work."""
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    return os.getpid()


@linux_only
def test_a_signal_to_the_workers_does_not_cut_their_work_short() -> None:
    with fork_pool(2) as pool:
        pids = [f.result(timeout=60) for f in [pool.submit(_signalled_then_pid) for _ in range(4)]]
    assert os.getpid() not in pids and len(set(pids)) >= 1


DRIVER = textwrap.dedent(
    """
    import os, time
    from bf_assets.batch.run import fork_pool

    def pid(_):
        time.sleep(0.3)  # long enough for both workers to take one
        return os.getpid()

    pool = fork_pool(2)
    print(" ".join(str(p) for p in sorted(set(pool.map(pid, range(4))))), flush=True)
    time.sleep(60)
    """
)


@linux_only
def test_a_parent_killed_outright_takes_its_workers_along() -> None:
    started, left = children_of_killed(DRIVER)
    assert started and not left
