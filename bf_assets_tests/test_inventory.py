"""One read per trial for both ingest tables (``bf_assets.corpus.inventory``)."""

from pathlib import Path

import pandas as pd
import pytest

from bf_assets.corpus import inventory
from bf_assets.corpus import run as review
from bf_assets.corpus.run import review_refs
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
