"""Trial pages rendered while the rest of a one-process release goes on.

In ``bf-assets release`` every step of the release job runs in one process, one after the
other; the trial pages need only the dataset review, yet would wait for curation and the
publish checks, which keep one core busy and leave the other idle.  Inside
:func:`pages_alongside` the first dataset review persisted by the warehouse IO manager
(:func:`offer`) starts :func:`bf_assets.pages.site.write_pages` in a forked process of its own
(which spreads the pages over its workers as usual); the ``trial_pages`` step then collects
that result (:func:`collect`) instead of rendering the pages again.  Outside it (the UI, a
schedule: every step its own process) nothing starts in the background and ``trial_pages``
renders the pages itself.  A background render that failed, or was for another review or
folder, is never used: the step renders itself and reports what it did.

A review persisted to a local file is rendered by a new interpreter that reads that file
(``python -m bf_assets.pages.early``), not by a fork of the release: a fork starts with the
whole release process resident (Dagster, the dataset review, what ingest left).  A review
only in memory is rendered by a fork.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bf_assets.batch.lifetime import end_with_parent
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import load_parted
from bf_assets.ingest.treebook import TreeBook
from bf_assets.pages.site import PagesSummary, write_pages

log = logging.getLogger("bf_assets.pages")


@dataclass(slots=True)
class _Target:
    out: Path
    report: Path
    # the tree book of the release (bf_assets.ingest.treebook): not part of what is rendered
    trees: Path | None = field(default=None, compare=False)


@dataclass(slots=True)
class _Render:
    review: int  # id() of the dataset review it renders
    target: _Target
    proc: Any  # multiprocessing.Process
    conn: Connection


_TARGET: list[_Target] = []
_RUNNING: list[_Render] = []


@contextmanager
def pages_alongside(
    out_dir: str | os.PathLike[str],
    report: str | os.PathLike[str],
    trees: str | os.PathLike[str] | None = None,
) -> Iterator[None]:
    """Within the block, the pages of the dataset review (into ``out_dir``, linking the
    report ``report`` when it exists) start as soon as the review is persisted; a render
    nobody collected is stopped on exit.  ``trees``: the release's tree book (the trials'
    tree digests, taken before they were read), so the pages do not walk the trials again."""
    _TARGET[:] = [_Target(Path(out_dir), Path(report), Path(trees) if trees else None)]
    try:
        yield
    finally:
        _TARGET.clear()
        _stop()


def offer(ds: Any, source: str | os.PathLike[str] | None = None) -> bool:
    """Start the pages of ``ds`` in the background when a release allows it and none is
    running; True when started.  ``source``, the local file ``ds`` was just written to
    (:func:`~bf_assets.dataset.common.dump_parted`, its store beside it), is read by a new
    process; without it a fork renders ``ds``."""
    if not _TARGET or _RUNNING or not isinstance(ds, DatasetReview):
        return False
    target = _TARGET[0]
    if source is not None:
        proc, conn = _spawn(Path(source), target)
        _RUNNING.append(_Render(id(ds), target, proc, conn))
        return True
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_forked, args=(ds, target, child, os.getpid()), daemon=False)
    proc.start()
    child.close()
    _RUNNING.append(_Render(id(ds), target, proc, parent))
    return True


class _Spawned:
    """A rendering interpreter, with the few ``multiprocessing.Process`` methods used here."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def terminate(self) -> None:
        self._popen.terminate()

    def join(self) -> None:
        self._popen.wait()


def _spawn(source: Path, target: _Target) -> tuple[_Spawned, Connection]:
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-m", __name__, str(write_fd), str(os.getpid())]
    cmd += [str(source), str(target.out), str(target.report), str(target.trees or "")]
    try:
        # its own process group: its page workers go with it when it is stopped
        popen = subprocess.Popen(cmd, pass_fds=(write_fd,), process_group=0)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return _Spawned(popen), Connection(read_fd, writable=False)


def _forked(ds: DatasetReview, target: _Target, conn: Connection, parent: int) -> None:
    os.setpgid(0, 0)  # its page workers go with it when it is stopped
    _render(lambda: ds, target, conn, parent)


def _render(review: Any, target: _Target, conn: Connection, parent: int) -> None:
    """In the render's process: the pages of ``review()`` into the target, the result (or
    why there is none) sent to the release."""
    # a release killed outright (no _stop runs) takes the render and its workers with it
    signal.signal(signal.SIGTERM, _end_group)
    end_with_parent(parent)
    try:
        ds = review()
        report = target.report if target.report.is_file() else None
        trees = TreeBook.read(target.trees)
        res: tuple[str, Any] = (
            "ok",
            write_pages(ds, target.out, report=report, trees=trees).summary(),
        )
    except BaseException as exc:  # noqa: BLE001 (told to the collector, who renders itself)
        res = ("error", f"{type(exc).__name__}: {exc}")
    conn.send(res)
    conn.close()


def read_review(source: Path) -> DatasetReview:
    """The dataset review persisted at ``source``, its store (beside it) attached."""
    with source.open("rb") as fh:
        ds = load_parted(fh)
    if not isinstance(ds, DatasetReview):
        raise TypeError(f"{source} does not hold a dataset review")
    if ds.store is not None:
        ds.store.attach(source)
    return ds


def main(argv: Sequence[str]) -> None:
    """``python -m bf_assets.pages.early FD PARENT REVIEW OUT REPORT TREES``: the background
    render of a review on disk (started by :func:`offer`; the result goes to the pipe ``FD``;
    ``TREES``, the release's tree book or empty)."""
    fd, parent, source, out, report, trees = argv
    conn = Connection(int(fd), readable=False)
    target = _Target(Path(out), Path(report), Path(trees) if trees else None)
    _render(lambda: read_review(Path(source)), target, conn, int(parent))


def _end_group(signo: int, _frame: object) -> None:
    """SIGTERM of the render: its whole process group (its page workers) ends with it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.killpg(0, signal.SIGTERM)


def collect(
    ds: Any, out_dir: str | os.PathLike[str], report: str | os.PathLike[str]
) -> PagesSummary | None:
    """The background pages of ``ds`` into ``out_dir``, once written (what the render did,
    not its page map); None when there are none (or they were for another review or folder,
    or failed): then render them.  Why a started render was not used is logged
    (``bf_assets.pages``)."""
    if not _RUNNING:
        return None
    run = _RUNNING[0]
    if run.review != id(ds) or run.target != _Target(Path(out_dir), Path(report)):
        _stop()
        log.warning("background trial pages were for another review or folder: not used")
        return None
    _RUNNING.clear()
    try:
        status, value = run.conn.recv()
    except (EOFError, OSError):
        status, value = "error", "the background render ended without a result"
    finally:
        run.conn.close()
        run.proc.join()
    if status != "ok":
        log.warning("background trial pages failed (%s): the step renders them", value)
        return None
    return value


def _stop() -> None:
    """Stop a background render nobody will collect (its page workers too)."""
    while _RUNNING:
        run = _RUNNING.pop()
        run.conn.close()
        if run.proc.is_alive():
            try:
                os.killpg(run.proc.pid, signal.SIGTERM)
            except OSError:
                run.proc.terminate()
        run.proc.join()


if __name__ == "__main__":
    main(sys.argv[1:])
