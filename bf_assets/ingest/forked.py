"""Run one function in a forked child while the caller works on something else.

Used to walk the two halves of a run root on two cores (``bf_assets.batch.runcache``).  The child
computes ``fn()``, pickles the result into a pipe and leaves with ``os._exit`` (no atexit
handlers, no stdio flush).  :meth:`Forked.result` reads the pipe, always reaps the child
(no zombies) and, when the child failed in any way (an exception, a signal, a result that
does not unpickle), runs ``fn()`` again in the caller: the outcome is then exactly the
serial one, including the issues ``fn`` itself turns errors into.

Forking is refused (``start_forked`` returns None) where it is unsafe: no ``os.fork``, or
other threads running (a forked child gets only the calling thread, and locks held by the
others stay locked in it).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Forked(Generic[T]):
    """A child process computing ``fn()``; collect with :meth:`result` or drop with
    :meth:`cancel` (one of them must be called)."""

    __slots__ = ("_fn", "_pid", "_fd")

    def __init__(self, fn: Callable[[], T], pid: int, fd: int) -> None:
        self._fn = fn
        self._pid = pid
        self._fd = fd

    def result(self) -> T:
        try:
            data = self._read()
        except BaseException:
            self._reap(kill=True)
            raise
        status = self._reap(kill=False)
        if status == 0 and data:
            try:
                ok, value = pickle.loads(data)
            except Exception:  # a truncated or garbled result: compute it here instead
                ok, value = False, None
            if ok:
                return value  # type: ignore[no-any-return]
        return self._fn()

    def cancel(self) -> None:
        """Stop the child without its result (the caller is failing)."""
        if self._pid:
            os.close(self._fd)
            self._reap(kill=True)

    def _read(self) -> bytes:
        chunks: list[bytes] = []
        with os.fdopen(self._fd, "rb") as fh:
            while chunk := fh.read(1 << 20):
                chunks.append(chunk)
        return b"".join(chunks)

    def _reap(self, *, kill: bool) -> int:
        pid, self._pid = self._pid, 0
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        return status


def can_fork() -> bool:
    """Forking is safe with no other thread than the main one, except threads that declare
    themselves fork-safe (``thread.fork_safe = True``: they hold no lock a child could need
    across a fork, e.g. the instance's SQLite checkpointer, ``defs.storage``)."""
    if not hasattr(os, "fork"):
        return False
    main = threading.main_thread()
    return all(t is main or getattr(t, "fork_safe", False) for t in threading.enumerate())


def start_forked(fn: Callable[[], T]) -> Forked[T] | None:
    """Start ``fn()`` in a child process; None when forking is not safe here."""
    if not can_fork():
        return None
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: never returns
        _child(fn, r, w)
    os.close(w)
    return Forked(fn, pid, r)


def _child(fn: Callable[[], object], r: int, w: int) -> None:
    code = 1
    try:
        os.close(r)
        try:
            payload = pickle.dumps((True, fn()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - reported as a failure; the parent recomputes
            payload = pickle.dumps((False, None))
        with os.fdopen(w, "wb") as fh:
            fh.write(payload)
        code = 0
    finally:
        os._exit(code)
