"""The one process pool: ``concurrent.futures.ProcessPoolExecutor``, with a worker's death a
clear error and never a wait for ever.

Workers keep the default dispositions of SIGINT and SIGTERM: a Ctrl-C or ``kill`` of the
process group ends them at once, and so does the executor when it breaks.  The executor sees
a worker that ended unasked and fails every call left with ``BrokenProcessPool``, but it
cannot say which worker ended or how, and a worker ended while it was sending a result leaves
half a message that the executor's reader waits on for ever.  A watcher thread covers both:
it waits on the workers and, when one ends unasked, notes its pid and exit status, ends the
others and closes this process's end of the result pipe, so that the reader sees the pipe's
end and the executor breaks the pool.  :meth:`WorkerPool.result` then raises
:class:`WorkerLost`, which says which worker ended and how.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar

from bf_assets.corpus.lifetime import end_with_parent

T = TypeVar("T")

LOOK_S = 1.0  # how often the watcher looks for workers started since (spawned on demand)
REAP_S = 5.0  # how long the watcher waits for the workers it killed to end
NAME_S = 5.0  # how long a caller of a broken pool waits for the watcher to name the worker


class WorkerLost(BrokenProcessPool):
    """A worker process ended without being asked to: the pool's work stops."""


def start_method() -> str:
    """Forked workers on Linux (they share the parent's imports), spawned ones elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


class _Context:
    """One pool's multiprocessing context, keeping every process it starts (the executor
    takes its ``Process``, ``Queue`` and ``SimpleQueue`` from its ``mp_context``)."""

    def __init__(self, method: str) -> None:
        self._base = multiprocessing.get_context(method)
        self.processes: list[BaseProcess] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def Process(self, *args: Any, **kwargs: Any) -> BaseProcess:  # noqa: N802 (the context's)
        proc = self._base.Process(*args, **kwargs)
        self.processes.append(proc)
        return proc


class WorkerPool(Executor):
    """``workers`` processes, each starting with :func:`_worker_start`.  Read a future's
    result with :meth:`result` (a lost worker is then a :class:`WorkerLost`); leaving the
    ``with`` block on an exception cancels the calls not yet given out."""

    def __init__(self, workers: int, method: str | None = None) -> None:
        self.workers = workers
        self._context = _Context(method or start_method())
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=self._context,  # type: ignore[arg-type]  # a context, and its processes
            initializer=_worker_start,
            initargs=(os.getpid(),),
        )
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._names: dict[str, None] = {}  # the functions given to the pool, in order
        self._closing = False
        self._lost: str | None = None  # how the first worker that ended unasked ended
        self._named = threading.Event()
        self._ended_by_watcher = False

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._context.processes if p.pid is not None]

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        self._names.setdefault(_name(fn))
        try:
            fut = self._pool.submit(fn, *args, **kwargs)
        except BrokenProcessPool as exc:
            raise self._explained(exc) from None  # the stdlib error names no worker
        with self._lock:
            if self._watcher is None:  # the workers are started by the first call
                self._watcher = threading.Thread(
                    target=self._watch, name="WorkerPool watcher", daemon=True
                )
                self._watcher.start()
        return fut

    def result(self, fut: Future[T]) -> T:
        """``fut.result()``; a worker lost is a :class:`WorkerLost` naming it."""
        try:
            return fut.result()
        except BrokenProcessPool as exc:
            raise self._explained(exc) from None  # the stdlib error names no worker

    def in_order(
        self, fn: Callable[..., T], calls: Iterable[tuple[Any, ...]], *, ahead: int = 2
    ) -> Iterator[T]:
        """``fn(*args)`` for each ``args`` of ``calls``, in order: at most ``ahead`` calls a
        worker submitted beyond the one awaited (results do not pile up, nor do calls), and
        the calls not yet given out cancelled when the caller stops early."""
        pending: deque[Future[T]] = deque()
        try:
            for args in calls:
                pending.append(self.submit(fn, *args))
                if len(pending) >= ahead * self.workers:
                    yield self.result(pending.popleft())
            while pending:
                yield self.result(pending.popleft())
        finally:
            for fut in pending:
                fut.cancel()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closing = True
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown(wait=True, cancel_futures=exc_type is not None)

    def _explained(self, exc: BrokenProcessPool) -> BrokenProcessPool:
        if isinstance(exc, WorkerLost):
            return exc
        if exc.__cause__ is not None and not self._ended_by_watcher:
            # the executor broke on its own: a result it could not read
            why = str(exc.__cause__).strip().splitlines() or ["?"]
            return WorkerLost(
                f"a worker's result could not be read ({why[-1].strip()}); "
                "the work of its pool stops here"
            )
        self._named.wait(NAME_S)
        return WorkerLost(self._lost) if self._lost is not None else exc

    def _watch(self) -> None:
        """Wait on the workers until each has ended when asked (exit code 0 once the pool is
        shut down); the first that ends otherwise is lost (:meth:`_lose`)."""
        ended: set[int] = set()
        while True:
            watched: dict[Any, BaseProcess] = {}
            for proc in list(self._context.processes):
                if proc.pid is None or proc.pid in ended:
                    continue
                try:
                    watched[proc.sentinel] = proc
                except ValueError:  # being started
                    continue
            if not watched and self._closing:
                return
            lost: list[tuple[BaseProcess, int | None]] = []
            for sentinel in wait(list(watched), timeout=LOOK_S):
                proc = watched[sentinel]
                code = _exit_code(proc)
                if code == 0 and self._closing:
                    ended.add(proc.pid)  # type: ignore[arg-type]  # started: it has one
                else:
                    lost.append((proc, code))
            if lost:  # not one the executor ended with SIGTERM after it, where it can tell
                lost.sort(key=lambda pc: pc[1] == -signal.SIGTERM)
                self._lose(*lost[0])
                return

    def _lose(self, proc: BaseProcess, code: int | None) -> None:
        names = ", ".join(self._names) or "nothing"
        self._lost = (
            f"worker process {proc.pid} ended unexpectedly ({_how(code)}); the work of its "
            f"pool ({names}) stops here"
        )
        self._named.set()
        # The executor ends the other workers too, unless a half-sent result holds its
        # reader: with every worker gone and this process's end of the result pipe closed,
        # the reader sees the pipe's end and the executor breaks the pool.
        procs = [p for p in self._context.processes if p.pid is not None]
        for p in procs:
            p.kill()
        for p in procs:
            p.join(REAP_S)
        self._ended_by_watcher = True
        queue = getattr(self._pool, "_result_queue", None)
        writer = getattr(queue, "_writer", None)
        if writer is not None:
            with contextlib.suppress(OSError):  # the executor may have closed it already
                writer.close()


def _worker_start(parent: int) -> None:
    """In each worker, first: the default dispositions of SIGINT and SIGTERM, whatever the
    parent had (a Ctrl-C or ``kill`` of the process group ends the worker, and so does the
    executor breaking its pool); and the worker ends with its parent (a parent killed
    outright takes its workers along)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    end_with_parent(parent, signal.SIGKILL)


def _exit_code(proc: BaseProcess) -> int | None:
    """A process's exit code once its sentinel is ready.  The executor's thread may reap it
    first: then this thread's wait finds no child, and the code appears once that thread
    has recorded it."""
    deadline = time.monotonic() + REAP_S
    proc.join(REAP_S)
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.exitcode


def _how(code: int | None) -> str:
    if code is None:
        return "its exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (the out-of-memory killer, or kill -9)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def _name(fn: Callable[..., object]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
