"""Slim reviews with their whole reviews in the store (the CLI's flat-memory path) print
exactly what the in-memory review prints, including trials whose findings or verdict the
dataset review changed."""

from pathlib import Path

import orjson
import pytest
from trialkit import quarantine_first_trial

from bf_assets.corpus.run import review_roots
from bf_assets.review.options import ReviewOptions
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spill")
    generate_corpus(out, 80, seed=3)
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_spilled_output_equals_the_in_memory_review(
    corpus: Path, tmp_path: Path, workers: int
) -> None:
    opts = ReviewOptions(
        workers=workers, quarantine_path=str(quarantine_first_trial(corpus, tmp_path))
    )
    full = review_roots([corpus / "jobs"], opts)
    slim = review_roots([corpus / "jobs"], opts, slim=True)
    # the store's file was removed at once: a killed review leaves nothing behind
    assert slim.dataset.store is not None and not slim.dataset.store.path.exists()
    try:
        assert [orjson.loads(b) for b in slim.trial_json()] == [
            orjson.loads(b) for b in full.trial_json()
        ]
        assert slim.summary == full.summary
        assert slim.to_json() == full.to_json()
    finally:
        slim.close()
    # the patch path was exercised: the dataset review changed some trials
    assert full.dataset.coverage.trial_findings
    assert "quarantined" in full.summary["by_verdict"]
    # and the slim reviews kept no file inventories, skills or per-trial messages in memory
    assert all(not t.files and not t.skills for t in slim.trials)
    kept = [f for t in slim.trials for f in t.findings if not f.check.startswith("COVERAGE_")]
    assert kept and all(f.message == "" and f.evidence is None for f in kept)
