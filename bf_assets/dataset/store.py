"""Full per-trial reviews on disk, slim ones in memory: the dataset review of a corpus of
any size in bounded memory.

The dataset layer (coverage, quarantine, the export decision, the release verdict, the
Markdown report) reads a trial's identity, ref, outcome, health, verdict, reward and its
findings' check, severity, file and line, plus the message of each blocker (the report's
Blockers table shows the first one) and the file inventory when a review has one (sandbox
parity compares them; the release's reviews, rebuilt from the warehouse tables, have none).  A slim review keeps exactly that; every other byte of
a trial's review (finding messages and evidence, the skills block) waits in a
:class:`TrialStore` file as the JSON ``TrialReview.to_json`` gives, and is read back one
trial at a time by whatever renders a whole trial (the report JSON, the trial pages).

A store is a single file of concatenated JSON objects, addressed by the trial's index in
the dataset review.  It pickles as its offsets and its file name, so a dataset review
handed from one Dagster step to another (another process, a later run) reads the same file:
the IO manager that stores the review places the file beside the pickle
(:meth:`TrialStore.persist`) and points the loaded review at it (:meth:`TrialStore.attach`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from bf_assets.contract import Severity
from bf_assets.files import BIG_BUFFER, atomic_writer
from bf_assets.findings import Finding, sort_findings
from bf_assets.ingest.discovery import TrialRef
from bf_assets.review.record import SLIM_VERDICT, SlimMaker, SlimTuple, TrialReview
from bf_assets.review.story import TrialStory

STORE_PREFIX = ".bf-trials-"


class TrialStore:
    """Each trial's review JSON in one append-only file, by index; each trial's verdict as
    it was stored (the dataset review may change it)."""

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, *, unlinked: bool = False
    ) -> None:
        """``unlinked``: the file is removed at once and read through this process's own
        descriptor (nothing is left behind if the process is killed; not to be persisted)."""
        if directory is not None:
            Path(directory).mkdir(parents=True, exist_ok=True)
            _clear_stale(Path(directory))
        fd, name = tempfile.mkstemp(prefix=STORE_PREFIX, suffix=".tmp", dir=directory)
        self.path = Path(name)
        self._temporary = True
        if unlinked:
            with contextlib.suppress(OSError):  # where an open file cannot be removed,
                os.unlink(name)  # it is removed by discard()
        self.token = uuid.uuid4().hex
        self.offset = array("q")
        self.length = array("q")
        self.verdict_code = array("b")
        self.verdicts: list[str] = []
        self._fd: int | None = fd
        self._pid = os.getpid()
        self._end = 0

    def __len__(self) -> int:
        return len(self.offset)

    # -- writing ---------------------------------------------------------------------------

    def append(self, data: bytes, verdict: str) -> int:
        """Store one trial's JSON; its index (trials are stored in dataset-review order)."""
        fd = self._open(write=True)
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, self._end + len(data) - len(view)) :]
        self.offset.append(self._end)
        self.length.append(len(data))
        self._end += len(data)
        try:
            code = self.verdicts.index(verdict)
        except ValueError:
            code = len(self.verdicts)
            self.verdicts.append(sys.intern(verdict))
        self.verdict_code.append(code)
        return len(self.offset) - 1

    # -- reading ---------------------------------------------------------------------------

    def get(self, index: int) -> bytes:
        n = self.length[index]
        fd = self._open(write=False)
        data = os.pread(fd, n, self.offset[index])
        if len(data) != n:
            raise OSError(f"trial store {self.path} is truncated at trial {index}")
        return data

    def reorder(self, order: Sequence[int]) -> None:
        """Index ``i`` becomes what index ``order[i]`` was (trials stored as they were
        reviewed, put in the dataset review's order)."""
        self.offset = array("q", (self.offset[p] for p in order))
        self.length = array("q", (self.length[p] for p in order))
        self.verdict_code = array("b", (self.verdict_code[p] for p in order))

    def stored_verdict(self, index: int) -> str:
        return self.verdicts[self.verdict_code[index]]

    def _open(self, *, write: bool) -> int:
        if self._fd is None or self._pid != os.getpid():
            # a forked child opens its own descriptor (pread keeps no shared offset anyway)
            flags = os.O_RDWR if write else os.O_RDONLY
            self._fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0))
            self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None

    def discard(self) -> None:
        """Close and, while it is still a temporary file, remove the store's file."""
        self.close()
        if self._temporary:
            self.path.unlink(missing_ok=True)

    # -- placing beside a pickle -------------------------------------------------------------

    def file_name(self, base: str) -> str:
        return f"{base}.trials-{self.token}"

    def persist(self, beside: Path) -> Path:
        """Move (or copy) the store file next to ``beside`` (the pickle of the review that
        holds it) under a name unique to this store; the store reads it from there on."""
        dest = beside.parent / self.file_name(beside.name)
        if dest == self.path:
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.close()
        try:
            os.replace(self.path, dest)
        except OSError:  # another filesystem
            with open(self.path, "rb") as src, atomic_writer(dest) as out:
                shutil.copyfileobj(src, out, BIG_BUFFER)
            if self._temporary:
                self.path.unlink(missing_ok=True)
        self.path = dest
        self._temporary = False
        return dest

    def attach(self, beside: Path) -> None:
        """Read from the file :meth:`persist` placed next to ``beside`` (after unpickling)."""
        self.close()
        self.path = beside.parent / self.file_name(beside.name)

    @staticmethod
    def prune(beside: Path, keep: str) -> None:
        """Remove store files of earlier reviews pickled at ``beside`` except ``keep``."""
        for p in beside.parent.glob(f"{beside.name}.trials-*"):
            if p.name != keep:
                p.unlink(missing_ok=True)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "token": self.token,
            "offset": self.offset,
            "length": self.length,
            "verdict_code": self.verdict_code,
            "verdicts": self.verdicts,
            "end": self._end,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = Path(state["path"])
        self.token = state["token"]
        self.offset = state["offset"]
        self.length = state["length"]
        self.verdict_code = state["verdict_code"]
        self.verdicts = state["verdicts"]
        self._end = state["end"]
        self._fd = None
        self._pid = os.getpid()
        self._temporary = False


STALE_SECONDS = 6 * 3600  # a temporary store that old belongs to a killed build


def _clear_stale(directory: Path) -> None:
    now = time.time()
    for p in directory.glob(f"{STORE_PREFIX}*.tmp"):
        try:
            if now - p.stat().st_mtime > STALE_SECONDS:
                p.unlink()
        except OSError:
            pass


class StoreWriter:
    """Keeps slim reviews while their whole JSON goes to a store: of whole reviews
    (:meth:`add`), and of reviews a worker made (:meth:`add_stored`)."""

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, *, unlinked: bool = False
    ) -> None:
        self.store = TrialStore(directory, unlinked=unlinked)
        self.maker = SlimMaker()

    def add(self, t: TrialReview) -> TrialReview:
        ordered = sort_findings(t.findings)
        if ordered != t.findings:  # what the dataset review would make of it anyway
            t = t.replace(findings=ordered)
        self.store.append(orjson.dumps(t.to_json()), t.verdict)
        return self.slim(t)

    def add_all(self, reviews: Iterable[TrialReview]) -> list[TrialReview]:
        return [self.add(t) for t in reviews]

    def add_stored(self, data: bytes, s: SlimTuple, ref: TrialRef) -> tuple[int, TrialReview]:
        """A review a worker made: its JSON ``data`` to the store, and its store index and
        slim review from its slim tuple ``s`` (``bf_assets.review.record.slim_tuple``: no
        finding messages, not even blockers'; ``bf-assets review`` prints no report)."""
        index = self.store.append(data, s[SLIM_VERDICT])
        return index, self.maker.from_tuple(s, ref)

    def slim(self, t: TrialReview) -> TrialReview:
        """The slim review of ``t`` (one object, its parts shared with other trials'); the
        report shows the first blocker's message, so blockers keep theirs."""
        m = self.maker
        findings = m.finding_list(
            m.slim_finding(f.check, f.severity, f.file, f.line)
            if f.severity != Severity.BLOCKER
            else Finding(f.check, f.severity, f.message, f.file, f.line, None)
            for f in t.findings
        )
        return m.make(t, findings)


def stored_json(store: TrialStore, index: int, extra: list[Finding], verdict: str) -> bytes:
    """Trial ``index``'s JSON after the dataset review: its stored JSON with the dataset
    review's findings (``extra``) merged in report order and its final ``verdict``."""
    data = store.get(index)
    if not extra and verdict == store.stored_verdict(index):
        return data
    obj = orjson.loads(data)
    findings = [Finding.from_dict(f) for f in obj["findings"]] + list(extra)
    obj["findings"] = [f.to_dict() for f in sort_findings(findings)]
    obj["verdict"] = verdict
    return orjson.dumps(obj)


def full_review(slim: TrialReview, data: bytes) -> TrialReview:
    """The whole review of a slim one, from its JSON (``stored_json``)."""
    obj = orjson.loads(data)
    return slim.replace(
        findings=[Finding.from_dict(f) for f in obj["findings"]],
        skills=obj.get("skills") or {},
        story=TrialStory.from_dict(obj),
    )
