"""A pool of forked worker processes that never waits for ever on a worker that is gone.

``concurrent.futures.ProcessPoolExecutor`` hung ``bf-assets review`` and ``release`` for good
when one of its workers was killed (the OOM killer, ``kill -9``): its manager thread asks
the other workers to stop with SIGTERM, which ours ignore (a signal meant for the process
group must not cut a result short), and waits for them for ever; and a worker ended while
writing its result leaves the shared result pipe with half a message the manager blocks on.

:class:`ForkPool` gives each worker a socket of its own.  One thread in the parent moves
pickled calls and results over them without ever blocking on one: a worker that ends, at
any moment, is seen (its socket closes, or its process is found ended) and the pool breaks
at once: every call not yet answered fails with :class:`WorkerLost`, which says which
worker ended and how, and the other workers are killed.  A call raising in a worker fails
its future with that exception (the worker's traceback as its cause), as the standard pool
does; the pool goes on.

Calls are given out ``DEPTH`` at a time per worker (the next waits in the worker's socket
while it works), the rest wait in the parent, so a caller that stops early (an error, an
interrupt) cancels them and waits only for those under way.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import Any

_HEAD = struct.Struct("!Q")  # the byte length of the pickle that follows
DEPTH = 2  # calls a worker holds at a time (the one it runs and the next)
POLL_S = 0.5  # how often the workers with work are checked for having ended
JOIN_S = 5.0  # a worker asked to stop that has not after this is killed
READ_CHUNK = 1 << 20


class WorkerLost(BrokenProcessPool):
    """A worker process ended without being asked to: the pool's work stops."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (the ``__cause__`` it arrives with)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def _dumps(obj: Any) -> bytes:
    return bytes(ForkingPickler.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


# ------------------------------------------------------------------------------- the worker


def _recv_exact(sock: socket.socket, n: int) -> bytearray | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            return None
        got += k
    return buf


def _serve(sock: socket.socket) -> None:
    """Run calls until told to stop (``None``) or the parent's socket closes."""
    while True:
        head = _recv_exact(sock, _HEAD.size)
        if head is None:
            return
        body = _recv_exact(sock, _HEAD.unpack(head)[0])
        if body is None:
            return
        call = pickle.loads(body)
        del body
        if call is None:
            return
        fn, args = call
        del call
        try:
            out: tuple[Any, ...] = (True, fn(*args))
        except BaseException as exc:  # the caller gets it, as the standard pool does
            out = (False, exc, traceback.format_exc())
        del args
        try:
            data = _dumps(out)
        except BaseException as exc:  # a result or exception that cannot be pickled
            what = "result" if out[0] else f"exception {type(out[1]).__name__}: {out[1]}"
            data = _dumps(
                (False, RuntimeError(f"a worker's {what} could not be sent: {exc!r}"), "")
            )
        del out
        sock.sendall(_HEAD.pack(len(data)))
        sock.sendall(data)
        del data


def _child(
    sock: socket.socket,
    others: list[socket.socket],
    initializer: Callable[..., object] | None,
    initargs: tuple[Any, ...],
) -> None:
    code = 1
    try:
        for s in others:  # the parent's ends: this process must not keep them open
            s.close()
        if initializer is not None:
            initializer(*initargs)
        _serve(sock)
        code = 0
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


# ------------------------------------------------------------------------------- the parent


@dataclass(eq=False)
class _Worker:
    pid: int
    sock: socket.socket
    inflight: deque[tuple[Future[Any], str]] = field(default_factory=deque)
    out: deque[memoryview] = field(default_factory=deque)
    head: bytearray = field(default_factory=lambda: bytearray(_HEAD.size))
    body: bytearray | None = None
    got: int = 0
    status: int | None = None  # from waitpid, once it has ended
    writing: bool = False

    def ended(self) -> bool:
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.status = 0
                return True
            if pid == 0:
                return False
            self.status = status
        return True

    def wait(self, deadline: float) -> bool:
        """Whether it has ended by ``deadline`` (a ``time.monotonic()`` value)."""
        while not self.ended():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def how(self) -> str:
        if self.status is None:
            return "its connection closed"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            hint = " (the out-of-memory killer, or kill -9)" if sig == signal.SIGKILL else ""
            return f"killed by {name}{hint}"
        return f"exit code {os.WEXITSTATUS(self.status)}"


def _name(fn: Callable[..., object]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class ForkPool(Executor):
    """``workers`` forked processes, each running ``initializer(*initargs)`` first."""

    def __init__(
        self,
        workers: int,
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self._lock = threading.Lock()
        self._queue: deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = deque()
        self._broken: BaseException | None = None
        self._closing = False
        self._workers: list[_Worker] = []
        parent_ends: list[socket.socket] = []
        try:
            for _ in range(workers):
                mine, theirs = socket.socketpair()
                parent_ends.append(mine)
                pid = os.fork()
                if pid == 0:  # the worker; never returns
                    _child(theirs, parent_ends, initializer, initargs)
                theirs.close()
                mine.setblocking(False)
                self._workers.append(_Worker(pid, mine))
        except BaseException:
            for w in self._workers:
                self._kill(w)
            for s in parent_ends:
                s.close()
            raise
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        for w in self._workers:
            self._sel.register(w.sock, selectors.EVENT_READ, w)
        self._thread = threading.Thread(target=self._run, name="ForkPool", daemon=True)
        self._thread.start()

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self._workers]

    # -- the Executor interface ------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if kwargs:
            raise TypeError("ForkPool.submit takes positional arguments only")
        fut: Future[Any] = Future()
        with self._lock:
            if self._broken is not None:  # a new exception: the first keeps its traceback
                raise WorkerLost(str(self._broken))
            if self._closing:
                raise RuntimeError("cannot submit to a pool that was shut down")
            self._queue.append((fut, fn, args))
        self._wake()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closing = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
        self._wake()
        if wait:
            self._thread.join()

    # -- the thread that moves calls and results -------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"\0")

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # never leave a future waiting
            self._break(RuntimeError(f"the worker pool failed: {exc!r}"))
        finally:
            self._stop_workers()
            self._sel.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _loop(self) -> None:
        last_poll = time.monotonic()
        while True:
            self._give_out()
            with self._lock:
                if self._broken is not None:
                    return
                idle = not self._queue and all(not w.inflight for w in self._workers)
                if self._closing and idle:
                    return
            for key, mask in self._sel.select(POLL_S):
                w = key.data
                if w is None:
                    with contextlib.suppress(BlockingIOError, OSError):
                        while os.read(self._wake_r, 4096):
                            pass
                    continue
                if mask & selectors.EVENT_WRITE and not self._write(w):
                    return
                if mask & selectors.EVENT_READ and not self._read(w):
                    return
            now = time.monotonic()
            if now - last_poll >= POLL_S:
                last_poll = now
                for w in self._workers:
                    if (w.inflight or w.out) and w.ended():
                        self._lost(w)
                        return

    def _give_out(self) -> None:
        """One call to each worker without one, then a second to each while enough calls
        wait for every worker to get one (near the end a call is not parked behind a long
        one while another worker has nothing to do)."""
        for depth in range(1, DEPTH + 1):
            for w in self._workers:
                while len(w.inflight) < depth:
                    if not self._give_one(w, depth):
                        return

    def _give_one(self, w: _Worker, depth: int) -> bool:
        """The next call waiting, given to ``w``; False when none is to be given now."""
        while True:
            with self._lock:
                if self._broken is not None or not self._queue:
                    return False
                if depth > 1 and len(self._queue) < len(self._workers):
                    return False
                fut, fn, args = self._queue.popleft()
            if not fut.set_running_or_notify_cancel():
                continue  # cancelled while it waited
            try:
                data = _dumps((fn, args))
            except BaseException as exc:
                fut.set_exception(exc)
                continue
            w.out.append(memoryview(_HEAD.pack(len(data))))
            w.out.append(memoryview(data))
            w.inflight.append((fut, _name(fn)))
            if not w.writing:
                w.writing = True
                self._sel.modify(w.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, w)
            return True

    def _write(self, w: _Worker) -> bool:
        while w.out:
            view = w.out[0]
            try:
                n = w.sock.send(view)
            except BlockingIOError:
                return True
            except OSError:
                self._lost(w)
                return False
            if n < len(view):
                w.out[0] = view[n:]
                return True
            w.out.popleft()
        w.writing = False
        self._sel.modify(w.sock, selectors.EVENT_READ, w)
        return True

    def _read(self, w: _Worker) -> bool:
        while True:
            view = memoryview(w.head if w.body is None else w.body)[w.got :]
            try:
                k = w.sock.recv_into(view, min(len(view), READ_CHUNK))
            except BlockingIOError:
                return True
            except OSError:
                k = 0
            if k == 0:  # the worker's end closed: it has ended (or is ending)
                self._lost(w)
                return False
            w.got += k
            if w.body is None and w.got == _HEAD.size:  # the head: the body's size
                w.body, w.got = bytearray(_HEAD.unpack(w.head)[0]), 0
            if w.body is not None and w.got == len(w.body):  # a whole result
                body, w.body, w.got = w.body, None, 0
                self._answer(w, body)

    def _answer(self, w: _Worker, body: bytearray) -> None:
        fut, name = w.inflight.popleft()
        try:
            msg = pickle.loads(body)
        except BaseException as exc:
            fut.set_exception(RuntimeError(f"the result of {name} could not be read: {exc!r}"))
            return
        if msg[0]:
            fut.set_result(msg[1])
            return
        exc, tb = msg[1], msg[2]
        if tb:
            exc.__cause__ = RemoteTraceback(tb)
        fut.set_exception(exc)

    def _lost(self, w: _Worker) -> None:
        w.wait(time.monotonic() + 1.0)  # for its exit status
        running = ", ".join(sorted({name for _, name in w.inflight})) or "nothing"
        self._break(
            WorkerLost(
                f"worker process {w.pid} ended unexpectedly ({w.how()}) while running "
                f"{running}; the work of its pool stops here"
            )
        )

    def _break(self, exc: BaseException) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = exc
            queued = list(self._queue)
            self._queue.clear()
        for w in self._workers:
            self._kill(w)
        for w in self._workers:
            while w.inflight:
                fut, _ = w.inflight.popleft()
                if not fut.done():
                    fut.set_exception(self._broken)
            w.out.clear()
        for fut, _, _ in queued:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(self._broken)

    @staticmethod
    def _kill(w: _Worker) -> None:
        if w.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)

    def _stop_workers(self) -> None:
        """Ask every worker to stop (``None``, then the socket closes), wait ``JOIN_S`` for
        them all, kill the ones left, and reap every one."""
        stop = _frame_none()
        for w in self._workers:
            if w.status is None and self._broken is None:
                with contextlib.suppress(OSError):
                    w.sock.setblocking(True)
                    w.sock.settimeout(JOIN_S)
                    w.sock.sendall(stop)
            with contextlib.suppress(OSError):
                w.sock.close()
        deadline = time.monotonic() + JOIN_S
        for w in self._workers:
            if not w.wait(deadline):
                self._kill(w)
                with contextlib.suppress(ChildProcessError):
                    _, w.status = os.waitpid(w.pid, 0)


def _frame_none() -> bytes:
    data = _dumps(None)
    return _HEAD.pack(len(data)) + data
