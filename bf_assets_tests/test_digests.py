"""File digests off (the spilled CLI review): the same review but for the inventory's sha256."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from bf_assets.batch.run import _spill_chunk, review_trial, spill_options
from bf_assets.batch.spill import slim_tuple
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.readers import DEFAULT_LIMITS, JsonlFile, iter_jsonl, read_document
from bf_assets.ingest.rowstream import read_rows
from bf_assets.review.options import ReviewOptions
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
