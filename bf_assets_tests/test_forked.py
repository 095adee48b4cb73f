"""A function run in a forked child: its result comes back, a failed child's result is
computed in the caller, and no child is left behind."""

from __future__ import annotations

import os

from bf_assets.ingest import forked


def _no_children() -> bool:
    try:
        return os.waitpid(-1, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def test_forked_returns_the_childs_result_and_reaps_it() -> None:
    job = forked.start_forked(lambda: {"pid": os.getpid(), "data": list(range(5))})
    assert job is not None
    out = job.result()
    assert out["data"] == [0, 1, 2, 3, 4] and out["pid"] != os.getpid()
    assert _no_children()


def test_forked_child_failure_is_recomputed_here() -> None:
    parent = os.getpid()

    def flaky() -> str:
        if os.getpid() != parent:
            raise RuntimeError("child only")
        return "computed here"

    job = forked.start_forked(flaky)
    assert job is not None and job.result() == "computed here"

    def killed() -> str:
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return "after a signal"

    job = forked.start_forked(killed)
    assert job is not None and job.result() == "after a signal"
    assert _no_children()


def test_forked_cancel_leaves_no_child() -> None:
    job = forked.start_forked(lambda: b"x" * (1 << 22))  # more than a pipe holds
    assert job is not None
    job.cancel()
    assert _no_children()
