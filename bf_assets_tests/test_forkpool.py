"""A worker that ends unasked (the OOM killer, ``kill -9``) stops its pool's work with a
clear error at once; nothing waits for it for ever.

With ``concurrent.futures.ProcessPoolExecutor`` a review whose worker was killed hung for
good (its manager asked the other workers to stop with SIGTERM, which ours ignore, and
waited for them), and a worker ended while writing its result left half a message the
manager blocked on.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest
from prockit import running
from trialkit import build_trial

from bf_assets.batch.run import fork_pool, pooled_in_order

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers are forked on Linux only"
)

WAIT_S = 30  # far more than any of these needs; a hang fails instead of blocking the run


def _square(x: int) -> int:
    return x * x


def _fail(x: int) -> int:
    raise ValueError(f"bad {x}")


def _unpicklable() -> object:
    return lambda: None  # a result that cannot be sent back


def _pid_after(delay: float) -> int:
    time.sleep(delay)
    return os.getpid()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _die_mid_result() -> None:
    """Write the head of a result (its length) and a few bytes of it on the worker's socket,
    then end: what a worker killed while sending a large result leaves behind."""
    import struct

    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_serve":
        frame = frame.f_back
    assert frame is not None, "not called by a pool worker's loop"
    sock = frame.f_locals["sock"]
    sock.sendall(struct.pack("!Q", 1 << 20) + b"\x80\x05partial")
    os.kill(os.getpid(), signal.SIGKILL)


def _big(n: int) -> bytes:
    return bytes(range(256)) * (n // 256)


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(running(p) for p in pids)


def test_results_and_errors_come_back_and_the_pool_goes_on() -> None:
    with fork_pool(2) as pool:
        squares = [pool.submit(_square, i) for i in range(50)]
        failed = pool.submit(_fail, 7)
        after = pool.submit(_square, 9)
        assert [f.result(WAIT_S) for f in squares] == [i * i for i in range(50)]
        with pytest.raises(ValueError, match="bad 7") as info:
            failed.result(WAIT_S)
        assert "_fail" in str(info.value.__cause__)  # the worker's traceback comes along
        assert after.result(WAIT_S) == 81
        # what cannot be pickled fails its own call, either way, and the pool goes on
        with pytest.raises(RuntimeError, match="result could not be sent"):
            pool.submit(_unpicklable).result(WAIT_S)
        with pytest.raises(Exception, match="pickle"):
            pool.submit(_square, lambda: None).result(WAIT_S)
        assert pool.submit(_square, 5).result(WAIT_S) == 25
        big = pool.submit(_big, 64 << 20)  # larger than any socket buffer, both ways
        assert big.result(WAIT_S) == _big(64 << 20)
        assert pool.submit(len, _big(32 << 20)).result(WAIT_S) == 32 << 20


@pytest.mark.parametrize("calls", [2, 4, 7])
def test_both_workers_are_used(calls: int) -> None:
    with fork_pool(2) as pool:
        pids = [f.result(WAIT_S) for f in [pool.submit(_pid_after, 0.3) for _ in range(calls)]]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    # never more than one call over an even share: none is parked behind another's
    assert max(pids.count(p) for p in set(pids)) <= (calls + 1) // 2


@pytest.mark.parametrize("how", [_die, _die_mid_result], ids=["killed", "killed-mid-result"])
def test_a_killed_worker_fails_every_call_left_and_leaves_no_worker(how) -> None:
    pool = fork_pool(2)
    workers = {f.result(WAIT_S) for f in [pool.submit(_pid_after, 0.3) for _ in range(4)]}
    assert len(workers) == 2
    t0 = time.monotonic()
    slow = [pool.submit(_pid_after, 0.2) for _ in range(6)]
    doomed = pool.submit(how)
    queued = [pool.submit(_pid_after, 0.01) for _ in range(2000)]
    with pytest.raises(Exception) as info:
        doomed.result(WAIT_S)
    assert type(info.value).__name__ == "WorkerLost"
    assert "killed by SIGKILL" in str(info.value) and how.__name__ in str(info.value)
    # every call is answered or fails with that error: none is left waiting
    errors = [f.exception(WAIT_S) for f in queued]
    assert all(e is None or e is info.value for e in errors)
    assert sum(e is not None for e in errors) > 1000
    assert all(f.done() for f in slow)
    with pytest.raises(Exception, match="ended unexpectedly"):
        pool.submit(_square, 1)
    stopper = threading.Thread(target=pool.shutdown, daemon=True)
    stopper.start()
    stopper.join(WAIT_S)
    assert not stopper.is_alive(), "the pool's shutdown waits for ever"
    assert time.monotonic() - t0 < 2 * WAIT_S
    assert _gone(list(workers))


def _mark(path: str, i: int) -> int:
    with open(path, "a") as fh:
        fh.write(f"{i}\n")
    time.sleep(0.02)
    return i


def test_a_caller_that_stops_early_cancels_what_was_not_given_out(tmp_path: Path) -> None:
    log = str(tmp_path / "calls")
    got = []
    for i in pooled_in_order(2, _mark, ((log, i) for i in range(200)), ahead=2):
        got.append(i)
        if len(got) == 3:
            break  # the generator's finally cancels the rest and waits for those under way
    assert got == [0, 1, 2]
    ran = Path(log).read_text().split()
    # what was given out ran to its end; nothing else did (of 200 calls)
    assert len(ran) <= 3 + 2 * 2 * 2, ran


def test_cancelled_calls_are_never_run() -> None:
    pool = fork_pool(1)
    first = pool.submit(_pid_after, 0.5)
    deadline = time.monotonic() + WAIT_S
    while not first.running() and time.monotonic() < deadline:
        time.sleep(0.005)  # given out to the worker
    rest = [pool.submit(_square, i) for i in range(10)]
    pool.shutdown(wait=True, cancel_futures=True)
    assert first.result(WAIT_S) in pool.pids
    cancelled = [f for f in rest if f.cancelled()]
    assert cancelled  # all but the one the worker holds beside the running call
    for f in cancelled:
        with pytest.raises(CancelledError):
            f.result(0)
    assert _gone(pool.pids)


def test_shutdown_stops_every_worker() -> None:
    pool = fork_pool(2)
    pids = list(pool.pids)
    assert all(running(p) for p in pids)
    pool.shutdown(wait=True)
    assert _gone(pids)


DRIVER = textwrap.dedent(
    """
    import os, signal, sys
    import bf_assets.batch.run as run

    review = run._spill_chunk
    first = sys.argv[2]

    def lost(refs, opts):  # one review worker killed outright (the OOM killer, kill -9)
        try:
            os.close(os.open(first, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:  # the other worker goes on reviewing
            return review(refs, opts)
        os.kill(os.getpid(), signal.SIGKILL)

    run._spill_chunk = lost
    from bf_assets.cli.main import main
    sys.exit(main(["review", "--workers", "2", sys.argv[1]]))
    """
)


def test_the_cli_stops_with_a_clear_error_when_a_review_worker_is_killed(tmp_path: Path) -> None:
    from bf_assets.batch import run as batch_run

    assert hasattr(batch_run, "_spill_chunk")
    first = build_trial(tmp_path / "jobs").path
    task = first.name.split("__")[0]
    for i in range(batch_run.PARALLEL_MIN_TRIALS * 4):  # enough to be spread over workers
        shutil.copytree(first, first.parent / f"{task}__{i:08x}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path / "jobs"), str(tmp_path / "first")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "bf-assets: stopped: worker process" in done.stderr
    assert "killed by SIGKILL" in done.stderr and "Traceback" not in done.stderr
