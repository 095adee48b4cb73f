"""One read of each trial for both ingest tables: its review and its ``raw_trials`` row.

``review_with_inventory`` scans every trial once with its files hashed (the inventory needs
the digests), builds the ``raw_trials`` row from that scan (``bf_assets.review.tables.read_row``,
the same row ``raw_frame`` gives) and reviews the same scan (``bf_assets.review.trial.review_data``,
the review ``review_trial`` gives with ``hash_files=True``).  Large batches are spread over
worker processes, like ``review_refs``.

``prefetch`` starts such a batch in worker processes and returns at once; the next
``review_with_inventory`` call with the same trials and options collects it instead of
starting over (``bf-assets release`` starts the review before Dagster is even imported).
``queue_prefetch`` lines up the batches of the runs after it: each one starts when the batch
before it has been collected, so the workers review the next run's trials while this process
writes the tables and events of the current one (one batch in flight at a time).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import pandas as pd

from bf_assets.batch import run as batch_run
from bf_assets.batch.pool import WorkerPool
from bf_assets.batch.run import review_trial, worker_count, worker_pool
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.readers import clear_path_cache
from bf_assets.ingest.scan import scan_trial
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TRIAL_ERRORS, TrialReview
from bf_assets.review.tables import RAW_COLUMNS, frame, read_row, unreadable_raw_row
from bf_assets.review.trial import review_data

Pair = tuple[TrialReview, dict[str, object]]


def inventory_review(ref: TrialRef, options: ReviewOptions) -> Pair:
    """One trial: its review and its ``raw_trials`` row, from one scan."""
    try:
        data = scan_trial(ref, options.limits, hash_files=True)
    except TRIAL_ERRORS as exc:
        return review_trial(ref, options), unreadable_raw_row(ref, exc)
    raw = read_row(data)
    try:
        review = review_data(data, options)
    except TRIAL_ERRORS:
        review = review_trial(ref, options)  # the review's own error path (reads it again)
    return review, raw


def _chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[Pair]:
    return [inventory_review(ref, options) for ref in refs]


@dataclass(slots=True)
class _Batch:
    refs: list[TrialRef]
    options: ReviewOptions
    pool: WorkerPool
    futures: list[Future[list[Pair]]]

    def collect(self) -> list[Pair]:
        try:
            return [pair for fut in self.futures for pair in self.pool.result(fut)]
        finally:
            self.pool.shutdown(wait=True)

    def cancel(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _start(refs: Sequence[TrialRef], opts: ReviewOptions, workers: int) -> _Batch:
    clear_path_cache()
    pool = worker_pool(workers)
    chunk = batch_run.CHUNK  # read at call time (the review module's batch settings)
    try:
        futures = [
            pool.submit(_chunk, refs[i : i + chunk], opts) for i in range(0, len(refs), chunk)
        ]
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    return _Batch(list(refs), opts, pool, futures)


_PENDING: _Batch | None = None
_QUEUED: deque[tuple[list[TrialRef], ReviewOptions]] = deque()
_LOCK = threading.Lock()


def prefetch(refs: Sequence[TrialRef], options: ReviewOptions | None = None) -> None:
    """Start reviewing ``refs`` in worker processes and return at once (nothing for a batch
    too small to be spread); the next :func:`review_with_inventory` of the same trials and
    options collects it.  Replaces (and cancels) an earlier prefetch and its queue."""
    cancel_prefetch()
    _launch(list(refs), options or ReviewOptions())


def queue_prefetch(
    batches: Sequence[Sequence[TrialRef]], options: ReviewOptions | None = None
) -> None:
    """Line up ``batches`` (the trials of the runs to come, in order) behind the current
    prefetch: each is started when the batch before it is collected (at once when nothing is
    in flight)."""
    opts = options or ReviewOptions()
    with _LOCK:
        _QUEUED.extend((list(b), opts) for b in batches if b)
        idle = _PENDING is None
    if idle:
        _start_next()


def _launch(refs: list[TrialRef], opts: ReviewOptions) -> None:
    global _PENDING
    workers = worker_count(len(refs), opts)
    if workers <= 1:
        return  # too small to spread: its run reads it itself
    batch = _start(refs, opts, workers)
    with _LOCK:
        stale, _PENDING = _PENDING, batch
    if stale is not None:
        stale.cancel()


def _start_next() -> None:
    """The next queued batch, started in the workers (none when the queue is empty)."""
    with _LOCK:
        nxt = _QUEUED.popleft() if _QUEUED else None
    if nxt is not None:
        _launch(*nxt)


def cancel_prefetch() -> None:
    """Drop a prefetch nobody collected (its queued work is cancelled) and the queue."""
    with _LOCK:
        _QUEUED.clear()
    _drop_pending()


def _drop_pending() -> None:
    """Cancel the batch in flight (it was for other trials), keeping the queue."""
    global _PENDING
    with _LOCK:
        batch, _PENDING = _PENDING, None
    if batch is not None:
        batch.cancel()


def _take(refs: Sequence[TrialRef], opts: ReviewOptions) -> _Batch | None:
    global _PENDING
    with _LOCK:
        batch = _PENDING
        if batch is None or batch.options != opts or batch.refs != list(refs):
            return None
        _PENDING = None
    return batch


def review_with_inventory(
    refs: Sequence[TrialRef], options: ReviewOptions | None = None
) -> tuple[list[TrialReview], pd.DataFrame]:
    """Review ``refs`` and build their ``raw_trials`` table from the same read of each trial;
    a matching :func:`prefetch` is collected instead of reading the trials again."""
    opts = options or ReviewOptions()
    batch = _take(refs, opts)
    if batch is None:
        _drop_pending()  # another batch: free its workers
        workers = worker_count(len(refs), opts)
        if workers <= 1:
            clear_path_cache()
            pairs = _chunk(refs, opts)
        else:
            pairs = _start(refs, opts, workers).collect()
    else:
        pairs = batch.collect()
    _start_next()  # the next run's trials, reviewed while this run writes its tables
    return [r for r, _ in pairs], frame([raw for _, raw in pairs], RAW_COLUMNS)
