"""Which trial pages a release renders, and what the others are made from when asked for.

A release renders the page of every trial a person needs to look at (:func:`needs_page`).
Every other trial's page waits to be asked for: what it is made of (its
:class:`~bf_assets.pages.trial.PageInput`) is kept in one sources file beside the ``report``
folder (:func:`sources_beside`, never served), from which the trial page server
(:mod:`bf_assets.cli.pages_server`) renders the page the first time it is requested and
writes it beside the others (:func:`bf_assets.pages.site.render_on_demand`).

The sources file holds the pickled page inputs one after another, then the index
(``{page name: (offset, length)}`` and whether the pages are cleaned), then the index's
offset as 8 bytes.  It is written to a temporary file and renamed, so a reader that opened it
reads one whole file, and a reader holds one page input at a time.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bf_assets.contract import Severity, Verdict
from bf_assets.dataset.decide import Decision
from bf_assets.dataset.quarantine import QuarantineEntry
from bf_assets.files import atomic_writer
from bf_assets.pages.trial import PageInput
from bf_assets.review.record import TrialReview

SOURCES_FILE = "pages-on-demand.bin"
_FOOTER = struct.Struct("<Q")
# a finding of one of these severities is something a person reads on the trial's page
NEEDS_A_PERSON = frozenset({Severity.BLOCKER, Severity.QUARANTINE, Severity.WARNING})


def needs_page(t: TrialReview, decision: Decision | None, entry: QuarantineEntry | None) -> bool:
    """Whether a release renders trial ``t``'s page: its effective verdict (after the
    quarantine file and the dataset review's findings) is not ``publishable``, it has a
    finding of severity ``blocker``, ``quarantine`` or ``warning``, it is not exported
    (excluded for any reason, or not decided), or a quarantine entry is in force for it.
    An exported, publishable trial with no finding above ``info`` and no entry is rendered
    when asked for."""
    if t.verdict != Verdict.PUBLISHABLE or entry is not None:
        return True
    if decision is None or not decision.exported:
        return True
    return any(f.severity in NEEDS_A_PERSON for f in t.findings)


def sources_beside(pages_dir: Path) -> Path:
    """The sources file of the pages in ``pages_dir`` (``<roots folder>/report/pages``):
    ``<roots folder>/pages-on-demand.bin``, outside the ``report`` folder the server serves."""
    return pages_dir.parent.parent / SOURCES_FILE


@dataclass(frozen=True, slots=True)
class SourcesIndex:
    clean: bool
    pages: dict[str, tuple[int, int]]  # page name -> (offset, length) of its pickled input


class SourcesWriter:
    """The page inputs of a sources file being written (:func:`writing_sources`)."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self.pages: dict[str, tuple[int, int]] = {}

    def add(self, name: str, inp: PageInput) -> None:
        data = pickle.dumps(inp, protocol=pickle.HIGHEST_PROTOCOL)
        self.pages[name] = (self._fh.tell(), len(data))
        self._fh.write(data)


@contextmanager
def writing_sources(path: Path, *, clean: bool) -> Iterator[SourcesWriter]:
    """A sources file to :meth:`~SourcesWriter.add` each waiting page's input to; it replaces
    the old one when the ``with`` block ends without an error (and is dropped after one)."""
    with atomic_writer(path) as fh:
        kept = SourcesWriter(fh)
        yield kept
        at = fh.tell()
        fh.write(pickle.dumps(SourcesIndex(clean, kept.pages), protocol=pickle.HIGHEST_PROTOCOL))
        fh.write(_FOOTER.pack(at))


Signature = tuple[int, int, int]


def sources_signature(path: Path) -> Signature | None:
    """``(inode, mtime_ns, size)`` of a sources file; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def read_input(path: Path, name: str) -> tuple[PageInput, bool, Signature] | None:
    """The page input kept for page ``name`` (``trials/….html``), whether it is to be
    cleaned, and the signature of the sources file it was read from; None when the file
    keeps no such page (or there is no file, or it is not a sources file)."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            sig = (st.st_ino, st.st_mtime_ns, st.st_size)
            end = st.st_size - _FOOTER.size
            if end < 0:
                return None
            fh.seek(end)
            (at,) = _FOOTER.unpack(fh.read(_FOOTER.size))
            if at > end:
                return None
            fh.seek(at)
            index = pickle.loads(fh.read(end - at))  # noqa: S301 (our own file)
            if not isinstance(index, SourcesIndex) or name not in index.pages:
                return None
            offset, length = index.pages[name]
            fh.seek(offset)
            inp = pickle.loads(fh.read(length))  # noqa: S301 (our own file)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, struct.error):
        return None
    return (inp, index.clean, sig) if isinstance(inp, PageInput) else None
