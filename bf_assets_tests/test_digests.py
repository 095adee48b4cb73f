"""File digests off (the spilled CLI review): the same review but for the inventory's sha256."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from bf_assets.corpus.run import _spill_chunk, review_trial, spill_options
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    JsonlFile,
    for_review_only,
    iter_jsonl,
    read_document,
)
from bf_assets.ingest.rowstream import read_rows
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import slim_tuple
from bf_assets_tests.trialkit import build_trial, timeout_spec

OFF = replace(DEFAULT_LIMITS, digests=False)


def _both(ref_roots: list[Path]) -> None:
    refs = discover(ref_roots).trials
    assert refs
    on, off = ReviewOptions(), ReviewOptions(limits=OFF)
    for ref in refs:
        a, b = review_trial(ref, on), review_trial(ref, off)
        assert orjson.dumps(a.to_json()) == orjson.dumps(b.to_json())
        assert slim_tuple(a) == slim_tuple(b)
        assert [(f.path, f.size, f.lines) for f in a.files] == [
            (f.path, f.size, f.lines) for f in b.files
        ]
        assert all(f.sha256 is None for f in b.files)
    # What the CLI's workers send back is what they send with digests on.
    plain = [(orjson.dumps(r.to_json()), slim_tuple(r)) for r in map(review_trial, refs)]
    assert _spill_chunk(refs, on) == plain


def test_built_trials_review_the_same_without_digests(runs_root: Path) -> None:
    build_trial(runs_root)
    timeout_spec().write(runs_root)
    _both([runs_root])


def test_shared_fixtures_review_the_same_without_digests(fixtures_dir: Path) -> None:
    _both([fixtures_dir])


def test_readers_skip_only_the_digest(trial: object, runs_root: Path) -> None:
    [ref] = discover([runs_root]).trials
    p = Path(ref.path)
    doc_on = read_document(p / "result.json", runs_root)
    doc_off = read_document(p / "result.json", runs_root, OFF)
    assert doc_on.value == doc_off.value and doc_on.stats.sha256 and doc_off.stats.sha256 is None
    assert (doc_on.stats.size, doc_on.stats.lines) == (doc_off.stats.size, doc_off.stats.lines)
    s_on, s_off = JsonlFile(), JsonlFile()
    lines = p / "trajectory" / "llm_trajectory.jsonl"
    assert [x.value for x in iter_jsonl(lines, runs_root, s_on)] == [
        x.value for x in iter_jsonl(lines, runs_root, s_off, OFF)
    ]
    assert s_on.stats.sha256 and s_off.stats.sha256 is None
    r_on = read_rows(p / "results.jsonl", runs_root, lambda i, s: None)
    r_off = read_rows(p / "results.jsonl", runs_root, lambda i, s: None, OFF)
    assert r_on.stats.sha256 and r_off.stats.sha256 is None


@pytest.mark.parametrize("cache", [False, True])
def test_spill_options_keep_digests_for_the_cache(tmp_path: Path, cache: bool) -> None:
    opts = ReviewOptions(cache_dir=str(tmp_path) if cache else None)
    assert spill_options(opts).limits.digests is cache
    assert spill_options(ReviewOptions(hash_files=True)).limits.digests
    assert repr(OFF) == repr(DEFAULT_LIMITS)  # the cache context does not change


REVIEW_ONLY = for_review_only(DEFAULT_LIMITS)


def _same_without_sizes(roots: list[Path]) -> None:
    refs = discover(roots).trials
    assert refs
    on, off = ReviewOptions(), ReviewOptions(limits=REVIEW_ONLY)
    for ref in refs:
        a, b = review_trial(ref, on), review_trial(ref, off)
        assert orjson.dumps(a.to_json()) == orjson.dumps(b.to_json())
        assert slim_tuple(a) == slim_tuple(b)
        assert [f.path for f in a.files] == [f.path for f in b.files]
        assert [f.issue for f in a.files] == [f.issue for f in b.files]
        # only the files no check reads lose their size (links are still sized: checked)
        for fa, fb in zip(a.files, b.files, strict=True):
            assert fb.size == fa.size or (fb.size is None and fa.sha256 is None)
            if fa.path.startswith("verifier/") and not fa.issue and fa.lines is None:
                assert fb.size is None or (Path(ref.path) / fa.path).is_symlink()


def test_review_only_limits_skip_digests_and_the_sizes_of_unread_files(
    runs_root: Path, fixtures_dir: Path
) -> None:
    assert not REVIEW_ONLY.digests and not REVIEW_ONLY.sizes
    assert for_review_only(REVIEW_ONLY) is REVIEW_ONLY
    assert repr(REVIEW_ONLY) == repr(DEFAULT_LIMITS)  # the cache context does not change
    build_trial(runs_root)
    timeout_spec().write(runs_root)
    _same_without_sizes([runs_root])
    _same_without_sizes([fixtures_dir])


def test_review_only_limits_still_check_links_and_special_files(runs_root: Path) -> None:
    build_trial(runs_root)
    [ref] = discover([runs_root]).trials
    trial = Path(ref.path)
    outside = runs_root.parent / "outside.txt"
    outside.write_text("secret\n")
    (trial / "verifier" / "escape.txt").symlink_to(outside)
    (trial / "verifier" / "inside.txt").symlink_to(trial / "config.json")
    os.mkfifo(trial / "verifier" / "pipe")
    _same_without_sizes([runs_root])
    b = review_trial(ref, ReviewOptions(limits=REVIEW_ONLY))
    issues = {f.path: f.issue for f in b.files if f.issue}
    assert "verifier/escape.txt" in issues and "verifier/pipe" in issues
    assert "verifier/inside.txt" not in issues
    assert any(f.size is None for f in b.files if not f.issue)  # the unread plain files


def test_spill_options_use_review_only_limits() -> None:
    opts = spill_options(ReviewOptions())
    assert opts.limits == REVIEW_ONLY
    assert spill_options(opts) is opts
