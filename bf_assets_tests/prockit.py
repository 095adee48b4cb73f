"""What the tests of process lifetimes share (the UI's supervisor, the background render, a
stopped release)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def alive(pid: int, *, group: bool = False) -> bool:
    """Whether a process ``pid`` exists (a zombie not yet waited for counts); ``group``:
    whether any process of the process group ``pid`` exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running(pid: int) -> bool:
    """Whether a process ``pid`` exists and has not exited: an orphan's zombie (it ended,
    and whoever adopted it has not waited for it yet; this sandbox's init takes seconds)
    does not count."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:
        return alive(pid)
    return state != b"Z"


def children_of_killed(
    driver: str, *, sigterm_ignored: bool = False
) -> tuple[list[int], list[int]]:
    """Run the Python source ``driver`` (which prints the ids of the processes it starts on
    its first line, then waits), kill it outright (SIGKILL), and give those ids and, of
    them, the ones still running 10 s later (their parent gone, they are orphans: a zombie
    one has ended).  ``sigterm_ignored``: the driver starts with SIGTERM ignored, as a
    process started by one that ignores it does."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ignore = (lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if sigterm_ignored else None
    proc = subprocess.Popen(
        [sys.executable, "-c", driver], stdout=subprocess.PIPE, env=env, preexec_fn=ignore
    )
    try:
        assert proc.stdout is not None
        started = [int(p) for p in proc.stdout.readline().split()]
        assert started and all(alive(p) for p in started)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(running(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        return started, [p for p in started if running(p)]
    finally:
        proc.kill()
