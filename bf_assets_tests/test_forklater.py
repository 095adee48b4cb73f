"""A call made later in a process forked now (``bf_assets.batch.forklater``), and the release
job of ``bf-assets release`` run that way: it starts from the heap of before the ingest runs."""

from __future__ import annotations

import gc
import os
import signal
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from bf_assets.batch.forklater import ForkedCall, ForkedCallError, can_fork
from bf_assets_tests.prockit import alive, children_of_killed
from bf_assets_tests.releasekit import isolated_release
from bf_sample.generator import generate_corpus

linux_only = pytest.mark.skipif(not can_fork(), reason="the call is forked on Linux only")


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def _hwm_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@linux_only
def test_the_call_runs_in_the_forked_process_and_sees_the_state_of_the_fork() -> None:
    seen = ["before"]
    with ForkedCall(lambda: (os.getpid(), list(seen))) as later:
        seen.append("after")  # made after the fork: never reaches the child
        pid, got = later.call()
    assert pid == later.pid and pid != os.getpid()
    assert got == ["before"]
    assert _gone(pid)


@linux_only
def test_what_the_parent_allocates_after_the_fork_is_not_in_the_child() -> None:
    big: list[bytearray] = []
    with ForkedCall(_hwm_mb) as later:
        big.append(bytearray(300 * 1024 * 1024))  # touched: resident in this process only
        big[0][::4096] = b"x" * len(range(0, len(big[0]), 4096))
        child_peak = later.call()
    assert child_peak < _hwm_mb() - 250


@linux_only
def test_an_error_in_the_call_is_raised_with_its_traceback() -> None:
    def boom() -> None:
        raise ValueError("no tables for job-7")

    with pytest.raises(ForkedCallError, match=r"ValueError: no tables for job-7") as err:
        ForkedCall(boom).call()
    assert "Traceback" in str(err.value) and "boom" in str(err.value)


@linux_only
def test_a_child_that_dies_without_a_result_is_an_error() -> None:
    with pytest.raises(ForkedCallError, match=r"exit 3\) without a result"):
        ForkedCall(lambda: os._exit(3)).call()
    with pytest.raises(ForkedCallError, match="could not be sent"):
        ForkedCall(lambda: threading.Lock()).call()  # not picklable


@linux_only
def test_a_call_not_made_ends_its_child_and_a_call_is_made_once() -> None:
    ran = []
    with ForkedCall(lambda: ran.append(1)) as later:
        pid = later.pid
        assert pid is not None and alive(pid)
    assert _gone(pid) and later.pid == pid
    with pytest.raises(RuntimeError, match="already"):
        later.call()
    once = ForkedCall(lambda: 5)
    assert once.call() == 5
    with pytest.raises(RuntimeError, match="already"):
        once.call()


def test_without_fork_the_call_is_made_here_when_asked() -> None:
    seen = ["before"]
    later = ForkedCall(lambda: (os.getpid(), list(seen)), fork=False)
    assert later.pid is None
    seen.append("after")
    assert later.call() == (os.getpid(), ["before", "after"])
    with pytest.raises(RuntimeError, match="already"):
        later.call()


def _wait_for_interrupt() -> str:
    try:
        time.sleep(30)
    except KeyboardInterrupt:
        return "interrupted"
    return "not interrupted"


@linux_only
@pytest.mark.parametrize(
    ("sig", "caller_handler"),
    [
        # Ctrl-C as a terminal's user has it, whatever an earlier test in this process left
        # installed (the child inherits the handler at the fork)
        (signal.SIGINT, signal.default_int_handler),
        # ``kill PID`` of a caller whose own SIGTERM handler would not stop it (here ignored;
        # in a release, Dagster's deferred one)
        (signal.SIGTERM, signal.SIG_IGN),
    ],
    ids=["ctrl-c", "sigterm-to-the-caller"],
)
def test_an_interrupt_of_the_caller_reaches_the_call(sig: int, caller_handler: Any) -> None:
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    previous_own = signal.signal(sig, caller_handler)
    later = ForkedCall(_wait_for_interrupt)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), sig))
    timer.start()
    try:
        assert later.call() == "interrupted"
        assert signal.getsignal(sig) is caller_handler  # the caller's handler is back
    finally:
        timer.cancel()
        later.cancel()
        signal.signal(sig, previous_own)
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)


DRIVER = textwrap.dedent(
    """
    import sys, time
    from bf_assets.batch.forklater import ForkedCall
    later = ForkedCall(lambda: time.sleep(60))
    print(later.pid, flush=True)
    later.call()
    """
)


@linux_only
@pytest.mark.parametrize("sigterm_ignored", [False, True], ids=["default", "sigterm-ignored"])
def test_a_caller_killed_outright_takes_its_child_along(sigterm_ignored: bool) -> None:
    """Also when the caller was started with SIGTERM ignored (a release started by a process
    that ignores it; in a test run, Dagster's mapping of SIGTERM onto an ignored SIGINT left
    it so for the tests that followed), which its child would inherit."""
    started, left = children_of_killed(DRIVER, sigterm_ignored=sigterm_ignored)
    assert len(started) == 1 and not left


@linux_only
def test_the_release_job_runs_in_a_process_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 12, seed=5)
    out = tmp_path / "out"
    code = isolated_release(monkeypatch, tmp_path, corpus / "jobs", corpus / "tasks", out)
    assert code == 0 and (out / "report" / "review.md").is_file()
    with dg.DagsterInstance.get() as inst:
        pids = {}
        for job in ("ingest_job", "release_job"):
            (run,) = inst.get_run_records(dg.RunsFilter(job_name=job))
            assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
            events = inst.all_logs(run.dagster_run.run_id)
            pids[job] = {
                e.dagster_event.pid for e in events if e.dagster_event and e.dagster_event.pid
            }
    assert pids["ingest_job"] == {os.getpid()}
    (child,) = pids["release_job"]
    assert child != os.getpid() and not alive(child)


@linux_only
def test_a_release_makes_its_instance_once_and_its_job_runs_on_a_frozen_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release job's process uses the instance the release made before forking it (no
    second instance: its storage imports and database checks cost about a second), and runs
    with what was alive at the fork left out of the collector's passes."""
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 12, seed=5)
    made = tmp_path / "instances.txt"
    real_get = dg.DagsterInstance.get

    def counting_get() -> dg.DagsterInstance:
        with made.open("a") as fh:
            fh.write(f"{os.getpid()}\n")
        return real_get()

    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(counting_get))
    import bf_assets.cli.release as release_cli

    real_job = release_cli._release_job
    frozen: list[int] = []

    def spying_job(*args: object) -> dict[str, object]:
        out = real_job(*args)  # type: ignore[arg-type]
        out["frozen"] = gc.get_freeze_count()
        return out

    real_outcome = release_cli._ingest_then_release

    def keep_outcome(*args: object) -> object:
        job = args[2]
        real_call = job.call  # type: ignore[attr-defined]

        def call() -> dict[str, object]:
            res = real_call()
            frozen.append(int(res.pop("frozen")))
            return res

        job.call = call  # type: ignore[attr-defined]
        return real_outcome(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(release_cli, "_release_job", spying_job)
    monkeypatch.setattr(release_cli, "_ingest_then_release", keep_outcome)
    out = tmp_path / "out"
    before = gc.get_freeze_count()
    code = isolated_release(monkeypatch, tmp_path, corpus / "jobs", corpus / "tasks", out)
    assert code == 0 and (out / "report" / "review.md").is_file()
    assert made.read_text().split() == [str(os.getpid())]  # one instance, made here
    assert frozen and frozen[0] > 10_000  # Dagster and the definitions, at least
    assert gc.get_freeze_count() == before  # handed back to the collector afterwards


@linux_only
def test_a_call_not_made_ends_its_child_while_later_forks_hold_the_pipe() -> None:
    """Processes forked after the call (a review's workers) hold copies of its pipe, so the
    child is told to leave, not left to see the pipe close: it ends on its own (exit 0),
    not stopped."""
    import multiprocessing

    later = ForkedCall(lambda: "never")
    sleeper = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
    sleeper.start()
    try:
        later.cancel()
        assert later._proc.exitcode == 0
    finally:
        sleeper.kill()
        sleeper.join()


@linux_only
def test_a_release_job_process_that_fails_is_a_release_error_that_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bf_assets.cli import release

    def broken(*_args: object) -> dict[str, object]:
        raise RuntimeError("the warehouse tables vanished")

    monkeypatch.setattr(release, "_release_job", broken)
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 4, seed=6)
    out = tmp_path / "out"
    code = isolated_release(monkeypatch, tmp_path, corpus / "jobs", corpus / "tasks", out)
    printed = capsys.readouterr()
    assert code == 2
    assert "RuntimeError: the warehouse tables vanished" in printed.out + printed.err
    assert "internal error" not in printed.out + printed.err  # an outcome, not a crash
    assert not out.exists()  # nothing published
