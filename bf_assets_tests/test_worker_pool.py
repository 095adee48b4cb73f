"""The one worker pool (``bf_assets.corpus.pool``): results in order, errors where they belong,
and a worker that ends unasked (the OOM killer, ``kill -9``, a signal) stops its pool's work
with a clear error at once; nothing waits for it for ever.  A review told to stop (Ctrl-C,
SIGTERM) stops, and a parent killed outright takes its workers along."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest
from prockit import alive, children_of_killed, running
from trialkit import build_trial

from bf_assets.corpus.pool import WorkerLost
from bf_assets.corpus.run import PARALLEL_MIN_TRIALS, pooled_in_order, worker_pool

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="forked workers, POSIX signals"
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


def _terminated() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(WAIT_S)


def _die_mid_result() -> None:
    """Write the head of a result (its length) and a few bytes of it on the result pipe,
    holding its lock, then end: what a worker killed while sending a large result leaves."""
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_process_worker":
        frame = frame.f_back
    assert frame is not None, "not called by a pool worker"
    results = frame.f_locals["result_queue"]
    results._wlock.acquire()
    os.write(results._writer.fileno(), struct.pack("!i", 1 << 20) + b"\x80\x05partial")
    os.kill(os.getpid(), signal.SIGKILL)


def _big(n: int) -> bytes:
    return bytes(range(256)) * (n // 256)


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(running(p) for p in pids)


def test_results_and_errors_come_back_and_the_pool_goes_on() -> None:
    with worker_pool(2) as pool:
        squares = [pool.submit(_square, i) for i in range(50)]
        failed = pool.submit(_fail, 7)
        after = pool.submit(_square, 9)
        assert [pool.result(f) for f in squares] == [i * i for i in range(50)]
        with pytest.raises(ValueError, match="bad 7") as info:
            pool.result(failed)
        assert "_fail" in str(info.value.__cause__)  # the worker's traceback comes along
        assert pool.result(after) == 81
        # what cannot be pickled fails its own call, either way, and the pool goes on
        with pytest.raises(Exception, match="pickle"):
            pool.result(pool.submit(_unpicklable))
        with pytest.raises(Exception, match="pickle"):
            pool.result(pool.submit(_square, lambda: None))
        assert pool.result(pool.submit(_square, 5)) == 25
        big = pool.submit(_big, 64 << 20)  # larger than any pipe buffer, both ways
        assert pool.result(big) == _big(64 << 20)
        assert pool.result(pool.submit(len, _big(32 << 20))) == 32 << 20


def _sleep_then(x: int) -> int:
    time.sleep(0.05 * (x % 3))
    return x


def test_results_come_in_order_and_both_workers_are_used() -> None:
    assert list(pooled_in_order(2, _sleep_then, ((i,) for i in range(40)))) == list(range(40))
    with worker_pool(2) as pool:
        pids = [pool.result(f) for f in [pool.submit(_pid_after, 0.3) for _ in range(4)]]
    assert len(set(pids)) == 2 and os.getpid() not in pids


@pytest.mark.parametrize(
    "how, why",
    [(_die, "killed by SIGKILL"), (_die_mid_result, "killed by SIGKILL"), (_terminated, "SIGTERM")],
    ids=["killed", "killed-mid-result", "terminated"],
)
def test_a_lost_worker_fails_every_call_left_and_leaves_no_worker(how, why: str) -> None:
    pool = worker_pool(2)
    workers = {pool.result(f) for f in [pool.submit(_pid_after, 0.3) for _ in range(4)]}
    assert len(workers) == 2
    slow = [pool.submit(_pid_after, 0.2) for _ in range(6)]
    doomed = pool.submit(how)
    queued = [pool.submit(_pid_after, 0.01) for _ in range(2000)]
    with pytest.raises(WorkerLost) as info:
        pool.result(doomed)
    message = str(info.value)
    assert message.startswith("worker process ") and "ended unexpectedly" in message
    assert why in message and how.__name__ in message
    assert int(message.split()[2]) in workers
    # every call is answered or fails: none is left waiting
    errors = [f.exception(WAIT_S) for f in queued]
    assert sum(e is not None for e in errors) > 1000
    assert all(f.done() for f in slow)
    with pytest.raises(WorkerLost, match="ended unexpectedly"):
        pool.submit(_square, 1)
    stopper = threading.Thread(target=pool.shutdown, daemon=True)
    stopper.start()
    stopper.join(WAIT_S)
    assert not stopper.is_alive(), "the pool's shutdown waits for ever"
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
            break  # the rest is cancelled; only the calls under way are waited for
    assert got == [0, 1, 2]
    ran = Path(log).read_text().split()
    # what was given out ran to its end; nothing else did (of 200 calls)
    assert len(ran) <= 3 + 2 * 2 + 2 + 1, ran


def test_cancelled_calls_are_never_run() -> None:
    pool = worker_pool(1)
    first = pool.submit(_pid_after, 0.5)
    deadline = time.monotonic() + WAIT_S
    while not first.running() and time.monotonic() < deadline:
        time.sleep(0.005)  # given out to the worker
    rest = [pool.submit(_square, i) for i in range(10)]
    pool.shutdown(wait=True, cancel_futures=True)
    assert pool.result(first) in pool.pids
    cancelled = [f for f in rest if f.cancelled()]
    assert cancelled  # all but the one queued for the worker behind the running call
    for f in cancelled:
        with pytest.raises(CancelledError):
            f.result(0)
    assert _gone(pool.pids)


def test_shutdown_stops_every_worker() -> None:
    pool = worker_pool(2)
    assert pool.result(pool.submit(_square, 3)) == 9
    pids = list(pool.pids)
    assert len(pids) == 2 and all(running(p) for p in pids)
    pool.shutdown(wait=True)
    assert _gone(pids)


PARENT_KILLED = textwrap.dedent(
    """
    import os, time
    from bf_assets.corpus.run import worker_pool

    def pid(_):
        time.sleep(0.3)  # long enough for both workers to take one
        return os.getpid()

    pool = worker_pool(2)
    print(" ".join(str(p) for p in sorted(set(pool.map(pid, range(4))))), flush=True)
    time.sleep(60)
    """
)


def test_a_parent_killed_outright_takes_its_workers_along() -> None:
    started, left = children_of_killed(PARENT_KILLED)
    assert started and not left


# ------------------------------------------------------------------- bf-assets review

REVIEW = textwrap.dedent(
    """
    import os, signal, sys, time
    import bf_assets.corpus.run as run

    review = run._spill_chunk
    how, mark = sys.argv[2], sys.argv[3]

    def chunk(refs, opts):
        if how == "kill":  # one review worker killed outright (the OOM killer, kill -9)
            try:
                os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:  # the other worker goes on reviewing
                return review(refs, opts)
            os.kill(os.getpid(), signal.SIGKILL)
        with open(mark, "a") as fh:  # a slow review: the test stops it while it works
            fh.write(f"{os.getpid()}\\n")
        time.sleep(0.5)
        return review(refs, opts)

    run._spill_chunk = chunk
    from bf_assets.cli.main import main
    sys.exit(main(["review", "--workers", "2", sys.argv[1]]))
    """
)


def _review(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], Path]:
    """A ``bf-assets review --workers 2`` of enough trials to be spread over workers, in a
    process group of its own, whose review chunks are as ``how`` says (``kill``: the first
    kills its worker; ``slow``: each writes its worker's pid to the mark file and sleeps)."""
    first = build_trial(tmp_path / "jobs").path
    task = first.name.split("__")[0]
    for i in range(PARALLEL_MIN_TRIALS * 4):
        shutil.copytree(first, first.parent / f"{task}__{i:08x}")
    mark = tmp_path / "mark"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", REVIEW, str(tmp_path / "jobs"), how, str(mark)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    return proc, mark


def _ended(proc: subprocess.Popen[str]) -> str:
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 30
    while alive(proc.pid, group=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(proc.pid, group=True), "a process of the review was left"
    return err


def test_the_cli_stops_with_a_clear_error_when_a_review_worker_is_killed(tmp_path: Path) -> None:
    proc, mark = _review(tmp_path, "kill")
    err = _ended(proc)
    assert mark.exists(), err
    assert proc.returncode == 2, err
    assert err.startswith("bf-assets: stopped: worker process "), err
    assert "killed by SIGKILL" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "sig, group, code",
    [
        (signal.SIGINT, True, 2),  # Ctrl-C in a terminal: the whole process group
        (signal.SIGINT, False, 2),
        (signal.SIGTERM, True, -signal.SIGTERM),  # the default action, as before
        (signal.SIGTERM, False, -signal.SIGTERM),
    ],
    ids=["ctrl-c", "sigint-pid", "sigterm-group", "sigterm-pid"],
)
def test_a_review_told_to_stop_stops(tmp_path: Path, sig: int, group: bool, code: int) -> None:
    proc, mark = _review(tmp_path, "slow")
    deadline = time.monotonic() + 60
    while len(set(_lines(mark))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)  # both workers are reviewing
    assert proc.poll() is None, proc.communicate()[1]
    (os.killpg if group else os.kill)(proc.pid, sig)
    err = _ended(proc)
    assert proc.returncode == code, err
    if code == 2:
        assert err.endswith("bf-assets: interrupted\n"), err
    assert "Traceback" not in err, err


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except FileNotFoundError:
        return []
