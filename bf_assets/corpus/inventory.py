"""One read per trial for both ingest tables: its review and its ``raw_trials`` row.

``review_with_inventory`` scans every trial once with its files hashed (the inventory needs
the digests), builds the ``raw_trials`` row from that scan (``bf_assets.review.tables.read_row``,
the same row ``raw_frame`` gives) and reviews the same scan (``bf_assets.review.trial.review_data``,
the review ``review_trial`` gives with ``hash_files=True``).  Large batches are spread over
worker processes, like ``review_refs``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from bf_assets.corpus import run as batch_run
from bf_assets.corpus.run import review_trial, worker_count, worker_pool
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


def _pairs(refs: Sequence[TrialRef], opts: ReviewOptions) -> list[Pair]:
    """Every trial's pair, in the order of ``refs``: in this process for a small batch, else
    in chunks on worker processes."""
    clear_path_cache()
    workers = worker_count(len(refs), opts)
    if workers <= 1:
        return _chunk(refs, opts)
    pool = worker_pool(workers)
    chunk = batch_run.CHUNK  # read at call time (the review module's batch settings)
    try:
        futures = [
            pool.submit(_chunk, refs[i : i + chunk], opts) for i in range(0, len(refs), chunk)
        ]
        return [pair for fut in futures for pair in pool.result(fut)]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def review_with_inventory(
    refs: Sequence[TrialRef], options: ReviewOptions | None = None
) -> tuple[list[TrialReview], pd.DataFrame]:
    """Review ``refs`` and build their ``raw_trials`` table from the same read of each trial."""
    pairs = _pairs(refs, options or ReviewOptions())
    return [r for r, _ in pairs], frame([raw for _, raw in pairs], RAW_COLUMNS)
