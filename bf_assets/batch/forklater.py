"""A call made later, in a process forked now: a late, large step starts from a small heap.

A long process keeps what its heap once held: the memory of objects it freed stays resident
(Python's allocator and glibc keep it for reuse, and fragments pin what they cannot give
back), so a step that comes after a long one starts from the long one's high-water mark and
adds its own peak on top.  ``bf-assets release`` is such a process: at 100,000 trials its
ingest runs leave it at some 345 MB resident against 220 MB before the first one, under the
release job's dataset review, curation and publish gate.  :class:`ForkedCall` forks while the heap is still small (the imports done, nothing
large made yet); the child waits, and :meth:`ForkedCall.call` later has it call the function
and returns what it returned (pickled back over a pipe), or raises :class:`ForkedCallError`
with the child's traceback.  The child shares the parent's imports and everything the
function needs from before the fork; what the parent does meanwhile never reaches it.

The child ends with the parent (``PR_SET_PDEATHSIG``: a release killed outright takes its
release job along), never runs the parent's exit handlers (it leaves with ``os._exit``), and
ends when it is not called (:meth:`ForkedCall.cancel`, or leaving the ``with`` block).  An
interrupt (Ctrl-C, or SIGTERM to the parent alone) of the parent while the child works is
passed on to the child, whose work then ends the way an interrupted one does there; a second
one stops the child.  Where there
is no ``fork`` (not Linux) the function is called in this process, at the same moment.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

from bf_assets.batch.lifetime import end_with_parent

T = TypeVar("T")

GO, STOP = "go", "stop"
STOP_WAIT_S = 10.0


class ForkedCallError(RuntimeError):
    """The forked call raised (the message holds its traceback) or its process ended without
    a result."""


def can_fork() -> bool:
    return sys.platform.startswith("linux")


class ForkedCall(Generic[T]):
    """``fn`` called later in a process forked at construction (see the module's text)."""

    def __init__(self, fn: Callable[[], T], *, fork: bool | None = None) -> None:
        self._fn: Callable[[], T] | None = fn
        self._proc: Any = None
        self._go: Connection | None = None
        self._back: Connection | None = None
        if not (can_fork() if fork is None else fork):
            return
        ctx = multiprocessing.get_context("fork")
        back_r, back_w = ctx.Pipe(duplex=False)
        go_r, go_w = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_child, args=(fn, go_r, back_w, os.getpid()), name="bf-forked-call"
        )
        proc.start()
        go_r.close()
        back_w.close()
        self._proc, self._go, self._back, self._fn = proc, go_w, back_r, None

    @property
    def pid(self) -> int | None:
        """The waiting process's id; None when the call runs in this process."""
        return None if self._proc is None else self._proc.pid

    def call(self) -> T:
        """Have the child call the function; what it returned.  Once only."""
        if self._proc is None:
            fn, self._fn = self._fn, None
            if fn is None:
                raise RuntimeError("the call was made or cancelled already")
            return fn()
        if self._go is None or self._back is None:
            raise RuntimeError("the call was made or cancelled already")
        go, back = self._go, self._back
        with contextlib.suppress(OSError):  # a child gone: its missing result is said below
            go.send(GO)
        go.close()
        self._go = None
        try:
            msg = self._wait(back)
        finally:
            self.cancel()
        if msg is None:
            code = self._proc.exitcode
            raise ForkedCallError(f"the forked call's process ended (exit {code}) without a result")
        if msg[0] == "ok":
            return msg[1]
        raise ForkedCallError(msg[1])

    def _wait(self, back: Connection) -> tuple[Any, ...] | None:
        with _terminate_as_interrupt():
            return self._wait_for(back)

    def _wait_for(self, back: Connection) -> tuple[Any, ...] | None:
        interrupted = False
        while True:
            try:
                while not back.poll(0.5):
                    if not self._proc.is_alive() and not back.poll(0):
                        return None
                return back.recv()
            except EOFError:
                return None
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                _signal(self._proc.pid, signal.SIGINT)  # the child's work ends its own way

    def cancel(self) -> None:
        """End the child (told to, else stopped); idempotent."""
        self._fn = None
        if self._go is not None:
            # a waiting child reads the word and leaves (the pipe's end alone may not reach
            # it: processes forked since hold copies of this end)
            with contextlib.suppress(OSError):
                self._go.send(STOP)
            self._go.close()
            self._go = None
        if self._back is not None:
            self._back.close()
            self._back = None
        proc = self._proc
        if proc is None or proc.exitcode is not None:
            return
        proc.join(STOP_WAIT_S)
        if proc.exitcode is None:
            proc.terminate()
            proc.join(STOP_WAIT_S)
        if proc.exitcode is None:
            proc.kill()
            proc.join()

    def __enter__(self) -> ForkedCall[T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.cancel()


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the caller waits, SIGTERM is taken as Ctrl-C: passed on to the child, whose work
    ends the way an interrupted one does.  (``kill PID`` reaches the caller alone; whatever
    handler it had, Dagster's deferred one included, would leave the child working.)  Only
    in the main thread, where handlers can be set; the previous handler is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(_signo: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def _child(fn: Callable[[], Any], go: Connection, back: Connection, parent: int) -> None:
    """The forked process: wait for the word, call, send the result, leave at once (the
    parent's exit handlers and buffered output are the parent's)."""
    code = 0
    try:
        end_with_parent(parent)
        try:
            word = go.recv()
        except (EOFError, OSError):
            word = None
        if word == GO:
            try:
                res: tuple[str, Any] = ("ok", fn())
            except BaseException as exc:  # noqa: BLE001 (sent to the caller, who raises)
                res = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            try:
                back.send(res)
            except Exception as exc:  # noqa: BLE001 (a result that cannot be pickled)
                back.send(("error", f"the result could not be sent: {type(exc).__name__}: {exc}"))
    except BaseException:  # noqa: BLE001 (nothing of the parent's code may run here)
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
