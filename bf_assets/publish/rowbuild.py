"""The export rows of a release's trials, built on every core and handed over in order.

Building a trial's ``rollouts`` row (:func:`bf_assets.curate.rows.build_row`: reading its
``results.jsonl`` and cleaning every step) is most of curation's time; writing the rows into
shards is not, and must stay in one process, in the candidates' order, for the shards to be
byte-identical.  :func:`built_rows` gives each candidate's outcome in the order given: for a
release of at least :data:`PARALLEL_MIN_TRIALS` trials, forked workers build the rows of
batches of :data:`BATCH` candidates, at most two batches a worker waiting; a smaller one is
built here.

Each outcome is made alone: the row, its cleaned steps (compact JSON, for the ``trl_sft``
projection) and what cleaning counted for that trial (:class:`~bf_assets.curate.clean.CleanStats`
of its own), or why it could not be built.  The caller decides, in order, which outcomes it
uses (a trial whose artifacts an earlier one already exported is a duplicate: its outcome is
dropped, counts and all), so a release's rows, shards and counts are the same whether its
rows were built here or by workers.  Each process remembers the long strings it cleaned
across the trials it builds (:class:`~bf_assets.curate.clean.CleanedTexts`): what cleaning
gives and counts for a string depends on the string alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from bf_assets.curate.candidate import Candidate
from bf_assets.curate.clean import CleanedTexts, CleaningError, CleanStats, clean_value
from bf_assets.curate.rows import CurationError, build_row

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
    from bf_assets.batch.run import pooled_in_order

    return pooled_in_order(workers, _batch_in_worker, ((list(b), steps) for b in batches))


def _batch_in_worker(batch: list[Candidate], steps: bool) -> list[Outcome]:
    if not _TEXTS:
        _TEXTS.append(CleanedTexts(RELEASE_TEXT_ENTRIES, RELEASE_TEXT_CHARS))
    return [build_one(cand, steps, _TEXTS[0]) for cand in batch]
