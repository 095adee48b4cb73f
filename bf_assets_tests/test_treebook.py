"""A tree book: trials' tree digests, which the trial pages use instead of walking the
trials again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_pages_core import review_dataset
from trialkit import healthy_spec

from bf_assets.ingest import discovery
from bf_assets.ingest.discovery import discover_trials, trial_fingerprint
from bf_assets.ingest.treebook import RECORD, TreeBook, records, write_book
from bf_assets.pages import site


def _no_walk(*_a: object, **_k: object) -> str:
    raise AssertionError("a trial was walked again")


def test_a_bad_or_missing_book_is_empty(runs_root: Path, tmp_path: Path) -> None:
    healthy_spec().write(runs_root)
    (ref,) = discover_trials([str(runs_root)])
    assert len(TreeBook.read(None)) == 0
    assert len(TreeBook.read(tmp_path / "absent")) == 0
    torn = tmp_path / "torn"
    torn.write_bytes(records([(ref, trial_fingerprint(ref))])[:-1])
    assert TreeBook.read(torn).get(ref) is None
    with pytest.raises(ValueError):
        TreeBook(b"x" * (RECORD + 1))
    # a trial without a digest has no record
    assert records([(ref, None)]) == b""


def test_pages_take_the_digests_from_the_book_and_match_a_walk(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = healthy_spec(rollout_id="aaaa0001").write(runs_root)
    healthy_spec(task="other-task", rollout_id="bbbb0002").write(runs_root)
    trials = discover_trials([str(runs_root)])
    book_path = tmp_path / "book.bin"
    write_book(book_path, [records((t, trial_fingerprint(t)) for t in trials)])
    ds = review_dataset(runs_root)
    walked = site.write_pages(ds, tmp_path / "walked")
    with monkeypatch.context() as m:
        m.setattr(discovery, "trial_fingerprint", _no_walk)
        booked = site.write_pages(ds, tmp_path / "booked", trees=TreeBook.read(book_path))
    assert booked.n_pages == walked.n_pages == 2
    state = site.STATE_FILE
    assert (tmp_path / "booked" / state).read_bytes() == (tmp_path / "walked" / state).read_bytes()
    assert (tmp_path / "booked" / "index.html").read_bytes() == (
        tmp_path / "walked" / "index.html"
    ).read_bytes()
    # the book is the trial as it was before the read: a file changed since is on the page
    # now, and the next render (walking, or with a new book) makes that page again
    result = a.file("result.json")
    st = result.stat()
    result.write_text(result.read_text().replace("0", "0", 1))
    os.utime(result, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    again = site.write_pages(review_dataset(runs_root), tmp_path / "booked")
    assert again.reused == 1


def test_the_book_is_searched_in_key_order_whatever_order_it_was_written_in(
    runs_root: Path, tmp_path: Path
) -> None:
    for i in range(9):
        healthy_spec(task=f"task-{i % 3}", rollout_id=f"k{i:07d}").write(runs_root)
    trials = discover_trials([str(runs_root)])
    recs = [records([(t, trial_fingerprint(t))]) for t in trials]
    written = tmp_path / "book.bin"
    write_book(written, reversed(recs))
    data = written.read_bytes()
    keys = [data[i : i + 16] for i in range(0, len(data), RECORD)]
    assert keys == sorted(keys)  # the writer puts the records in key order
    for book in (TreeBook.read(written), TreeBook(b"".join(reversed(recs)))):
        assert len(book) == 9
        assert [book.get(t) for t in trials] == [trial_fingerprint(t) for t in trials]
    # a trial the book has no record of is walked
    healthy_spec(task="late", rollout_id="late0001").write(runs_root)
    (late,) = [t for t in discover_trials([str(runs_root)]) if t not in trials]
    assert TreeBook.read(written).get(late) is None
