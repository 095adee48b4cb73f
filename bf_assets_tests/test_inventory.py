"""One read per trial for both ingest tables (``bf_assets.batch.inventory``), and its prefetch."""

from pathlib import Path

import pandas as pd
import pytest

from bf_assets.batch import inventory
from bf_assets.batch import run as review
from bf_assets.batch.run import review_refs
from bf_assets.ingest.discovery import TrialRef, discover_trials
from bf_assets.review.options import ReviewOptions
from bf_assets.review.tables import audit_frames, raw_frame, validated_frames

REPO = Path(__file__).resolve().parents[1]
SAMPLE_JOBS = REPO / "data" / "runs" / "jobs"
SAMPLE_TASKS = REPO / "data" / "runs" / "tasks"


@pytest.fixture
def refs() -> list[TrialRef]:
    if not SAMPLE_JOBS.is_dir():
        pytest.skip("sample runs not available")
    return discover_trials([SAMPLE_JOBS])


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spread even the small sample over worker processes."""
    monkeypatch.setattr(review, "CHUNK", 4)
    monkeypatch.setattr(review, "PARALLEL_MIN_TRIALS", 8)


def _assert_same_as_two_reads(refs: list[TrialRef], opts: ReviewOptions, got: tuple) -> None:
    reviews, raw = got
    pd.testing.assert_frame_equal(raw, raw_frame(refs))
    want = review_refs(refs, opts)
    for a, b in zip(validated_frames(reviews), validated_frames(want), strict=True):
        pd.testing.assert_frame_equal(a, b)
    for a, b in zip(audit_frames(reviews), audit_frames(want), strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("parallel", [False, True], ids=["in-process", "workers"])
def test_one_read_gives_both_tables(
    refs: list[TrialRef], request: pytest.FixtureRequest, parallel: bool
) -> None:
    if parallel:
        request.getfixturevalue("small_batches")
    opts = ReviewOptions(tasks_dir=str(SAMPLE_TASKS), workers=2)
    _assert_same_as_two_reads(refs, opts, inventory.review_with_inventory(refs, opts))


def test_a_prefetch_is_collected_by_the_same_batch(
    refs: list[TrialRef], small_batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = ReviewOptions(tasks_dir=str(SAMPLE_TASKS), workers=2)
    inventory.prefetch(refs, opts)
    started: list[int] = []
    real_start = inventory._start
    monkeypatch.setattr(
        inventory, "_start", lambda r, o, w: started.append(len(r)) or real_start(r, o, w)
    )
    got = inventory.review_with_inventory(list(refs), ReviewOptions(**_fields(opts)))
    assert started == []  # collected, not started again
    _assert_same_as_two_reads(refs, opts, got)


def test_a_prefetch_of_other_trials_or_options_is_not_used(
    refs: list[TrialRef], small_batches: None
) -> None:
    opts = ReviewOptions(tasks_dir=str(SAMPLE_TASKS), workers=2)
    inventory.prefetch(refs[1:], opts)
    _assert_same_as_two_reads(refs, opts, inventory.review_with_inventory(refs, opts))
    assert inventory._PENDING is None  # the stale prefetch was dropped
    inventory.prefetch(refs, ReviewOptions(workers=2))  # no task tree
    _assert_same_as_two_reads(refs, opts, inventory.review_with_inventory(refs, opts))
    inventory.cancel_prefetch()


def _fields(opts: ReviewOptions) -> dict[str, object]:
    return {name: getattr(opts, name) for name in ReviewOptions.__slots__}


def test_queued_batches_start_one_at_a_time_as_each_is_collected(
    refs: list[TrialRef], small_batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = ReviewOptions(tasks_dir=str(SAMPLE_TASKS), workers=2)
    third = len(refs) // 3
    a, b, c = refs[:third], refs[third : 2 * third], refs[2 * third :]
    started: list[int] = []
    real_start = inventory._start
    monkeypatch.setattr(
        inventory, "_start", lambda r, o, w: started.append(len(r)) or real_start(r, o, w)
    )
    try:
        inventory.prefetch(a, opts)
        inventory.queue_prefetch([b, c], opts)
        assert started == [len(a)]  # b waits for a to be collected: one batch in flight
        _assert_same_as_two_reads(a, opts, inventory.review_with_inventory(a, opts))
        assert started == [len(a), len(b)]
        # a run of other trials reads them itself, drops b and starts the next in line, c
        other = inventory.review_with_inventory(b[1:], opts)
        _assert_same_as_two_reads(b[1:], opts, other)
        assert started == [len(a), len(b), len(b) - 1, len(c)]
        _assert_same_as_two_reads(c, opts, inventory.review_with_inventory(c, opts))
        assert started == [len(a), len(b), len(b) - 1, len(c)]  # c collected, not read again
        assert inventory._PENDING is None and not inventory._QUEUED
    finally:
        inventory.cancel_prefetch()


def test_cancelling_a_prefetch_drops_its_queue(refs: list[TrialRef], small_batches: None) -> None:
    opts = ReviewOptions(workers=2)
    inventory.prefetch(refs[:20], opts)
    inventory.queue_prefetch([refs[20:40]], opts)
    inventory.cancel_prefetch()
    assert inventory._PENDING is None and not inventory._QUEUED
