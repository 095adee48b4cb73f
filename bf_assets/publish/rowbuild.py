"""The export rows of a release's trials, built on every core and handed over in order.

Building a trial's ``rollouts`` row (:func:`bf_assets.curate.rows.build_row`: reading its
``results.jsonl`` and cleaning every step) is most of curation's time; writing the rows into
shards is not, and must stay in one process, in the candidates' order, for the shards to be
byte-identical.  :func:`built_rows` gives each candidate's outcome in the order given: for a
release of at least :data:`PARALLEL_MIN_TRIALS` trials, forked workers build the rows of
batches of :data:`BATCH` candidates, at most two batches a worker waiting; a smaller one is
built here.

Each outcome is made alone: the row, its cleaned steps (compact JSON, for the ``trl_sft``
projection) and what cleaning counted for that trial (:class:`~bf_assets.redact.clean.CleanStats`
of its own), or why it could not be built.  The caller decides, in order, which outcomes it
uses (a trial whose artifacts an earlier one already exported is a duplicate: its outcome is
dropped, counts and all), so a release's rows, shards and counts are the same whether its
rows were built here or by workers.  Each process remembers the long strings it cleaned
across the trials it builds (:class:`~bf_assets.redact.clean.CleanedTexts`): what cleaning
gives and counts for a string depends on the string alone.

The rows of a job partition are built once, where the partition is ingested
(:func:`write_trial_rows`): each outcome is one pickled record of the partition's rows file,
found again by its index entry (file, offset, length); the files are local or on an fsspec
filesystem, as the warehouse is.  A release reads the outcomes of the trials it exports from
those files (:class:`StoredRows`) instead of building them.
"""

from __future__ import annotations

import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from typing import Any, BinaryIO

import orjson
from upath import UPath

from bf_assets.curate.candidate import Candidate
from bf_assets.curate.rows import CurationError, build_row
from bf_assets.files import atomic_writer
from bf_assets.redact.clean import CleanedTexts, CleaningError, CleanStats, clean_value

# Cleaned long strings a process remembers across the trials it builds (least recently used
# dropped first): the rows of a harness and task repeat their prompts and tools.
RELEASE_TEXT_ENTRIES = 50_000
RELEASE_TEXT_CHARS = 16 << 20
PARALLEL_MIN_TRIALS = 256  # fewer candidates are built in this process
BATCH = 16  # candidates a worker is sent at a time
# what a trial's row may fail with: its outcome says why, the others go on
CURATION_FAILURES = (CurationError, CleaningError, OSError, ValueError, TypeError, RecursionError)


@dataclass(slots=True)
class Built:
    """A trial's export row, its cleaned steps (when asked for) and what cleaning it
    counted."""

    row: dict[str, Any]
    steps: list[bytes]
    stats: CleanStats


Outcome = Built | str  # the row, or why it could not be built (cleaned, at most 300 chars)

# The cleaned long strings this process remembers (a worker's own, made after the fork).
_TEXTS: list[CleanedTexts] = []


def built_rows(
    selected: Sequence[Candidate], *, steps: bool
) -> Iterator[tuple[Candidate, Outcome]]:
    """Each candidate of ``selected`` with its outcome, in that order (on every core for a
    large release); ``steps``: keep each trial's cleaned steps (the ``trl_sft`` config needs
    them)."""
    most = min(os.cpu_count() or 1, -(-len(selected) // BATCH))
    if most <= 1 or len(selected) < PARALLEL_MIN_TRIALS:
        texts = CleanedTexts(RELEASE_TEXT_ENTRIES, RELEASE_TEXT_CHARS)
        for cand in selected:
            yield cand, build_one(cand, steps, texts)
        return
    batches = [selected[i : i + BATCH] for i in range(0, len(selected), BATCH)]
    for batch, outcomes in zip(batches, _in_workers(batches, steps, most), strict=True):
        yield from zip(batch, outcomes, strict=True)


def build_one(cand: Candidate, steps: bool, texts: CleanedTexts | None) -> Outcome:
    """One candidate's outcome (its counts in a :class:`CleanStats` of its own)."""
    kept: list[bytes] = []
    stats = CleanStats()
    try:
        row = build_row(
            cand.trial_dir,
            cand,
            stats=stats,
            on_step=_collector(kept) if steps else None,
            texts=texts,
        )
    except CURATION_FAILURES as exc:
        return str(clean_value(str(exc)))[:300]
    return Built(row, kept, stats)


def _collector(into: list[bytes]) -> Callable[[int, dict[str, Any]], None]:
    """Keep each cleaned step as compact JSON (not as Python objects: a long trial's steps
    each repeat the whole history) until the trial's row is known to be good."""

    def sink(_: int, step: dict[str, Any]) -> None:
        into.append(orjson.dumps({"prompt": step["prompt"], "completion": step["completion"]}))

    return sink


def _in_workers(
    batches: Sequence[Sequence[Candidate]], steps: bool, workers: int
) -> Iterator[list[Outcome]]:
    """Each batch's outcomes, in order, from forked workers."""
    from bf_assets.corpus.run import pooled_in_order

    return pooled_in_order(workers, _batch_in_worker, ((list(b), steps) for b in batches))


def _batch_in_worker(batch: list[Candidate], steps: bool) -> list[Outcome]:
    if not _TEXTS:
        _TEXTS.append(CleanedTexts(RELEASE_TEXT_ENTRIES, RELEASE_TEXT_CHARS))
    return [build_one(cand, steps, _TEXTS[0]) for cand in batch]


# --------------------------------------------------------------------------- rows files

ROWS_SUFFIX = ".rows"
KEEP_ROWS_FILES = 2  # a partition's newest files: a release may still read the one before
# one index entry per trial of a rows file (the ``trial_rows`` table)
ROW_INDEX_COLUMNS = (
    "job",
    "rollout",
    "path",
    "rollout_id",
    "rows_file",
    "offset",
    "length",
    "error",
)
NOT_BUILT = "its rows were not built from the reviewed files (trial_rows is missing or stale)"
RowSource = Callable[[Sequence[Candidate], bool], Iterable[tuple[Candidate, Outcome]]]


def default_rows(selected: Sequence[Candidate], steps: bool) -> Iterator[tuple[Candidate, Outcome]]:
    """Each candidate's outcome built now (:func:`built_rows`)."""
    return built_rows(selected, steps=steps)


def write_trial_rows(
    candidates: Sequence[Candidate], file_of: Callable[[str], UPath]
) -> list[dict[str, Any]]:
    """Build the outcome of each candidate (cleaned steps kept) and write it, one pickled
    record ``(job, rollout, rollout_id, outcome)``, into a new rows file of its job,
    ``<file_of(job)>.<time>-<random>.rows`` (a local path or an fsspec URL), written whole
    or not at all; the job's older files but the one before are removed.  One index entry
    per candidate (:data:`ROW_INDEX_COLUMNS`), in the order given."""
    ordered = sorted(candidates, key=lambda c: c.job)
    outcomes = built_rows(ordered, steps=True)
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for job, of_job in groupby(outcomes, key=lambda pair: pair[0].job):
        for entry in _write_rows_file(UPath(file_of(job)), of_job):
            by_key[entry["job"], entry["rollout"]] = entry
    return [by_key[c.key] for c in candidates]


@contextmanager
def _whole(path: UPath) -> Iterator[BinaryIO]:
    """``path`` to write, seen whole or not at all: a local file through
    :func:`~bf_assets.files.atomic_writer`; an object store shows an object once it is
    closed."""
    if getattr(path, "protocol", "") in ("", "file", "local"):
        with atomic_writer(path.path) as fh:
            yield fh
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        yield fh


def _write_rows_file(
    base: UPath, outcomes: Iterable[tuple[Candidate, Outcome]]
) -> list[dict[str, Any]]:
    """One job's records in a new file beside ``base``: names sort by the time written."""
    path = base.with_name(f"{base.name}.{time.time_ns():020d}-{uuid.uuid4().hex[:8]}{ROWS_SUFFIX}")
    entries: list[dict[str, Any]] = []
    at = 0
    with _whole(path) as fh:
        for cand, outcome in outcomes:
            record = pickle.dumps(
                (cand.job, cand.rollout, cand.rollout_id, outcome),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            fh.write(record)
            entries.append(
                {
                    "job": cand.job,
                    "rollout": cand.rollout,
                    "path": cand.rel_path,
                    "rollout_id": cand.rollout_id,
                    "rows_file": str(path),
                    "offset": at,
                    "length": len(record),
                    "error": outcome if isinstance(outcome, str) else None,
                }
            )
            at += len(record)
    names = sorted(p.name for p in base.parent.glob(f"{base.name}.*{ROWS_SUFFIX}"))
    for name in names[: -KEEP_ROWS_FILES or None]:
        if name != path.name:
            base.with_name(name).unlink(missing_ok=True)
    return entries


class StoredRows:
    """The outcomes of trials read back from rows files: ``entries`` maps a trial's key to
    its index entry (``rollout_id``, ``rows_file``, ``offset``, ``length``).  A trial
    without an entry, or whose record is not the one of its reviewed files, is
    :data:`NOT_BUILT`."""

    def __init__(self, entries: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        self._entries = entries

    def __call__(
        self, selected: Sequence[Candidate], steps: bool
    ) -> Iterator[tuple[Candidate, Outcome]]:
        for cand in selected:
            yield cand, self.outcome(cand)

    def outcome(self, cand: Candidate) -> Outcome:
        e = self._entries.get(cand.key)
        if e is None or e["rollout_id"] != cand.rollout_id:
            return NOT_BUILT
        try:
            with UPath(str(e["rows_file"])).open("rb") as fh:
                fh.seek(int(e["offset"]))
                data = fh.read(int(e["length"]))
            job, rollout, rollout_id, outcome = pickle.loads(data)
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError):
            return NOT_BUILT
        if (job, rollout, rollout_id) != (cand.job, cand.rollout, cand.rollout_id):
            return NOT_BUILT
        return outcome
