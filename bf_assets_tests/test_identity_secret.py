"""``IDENTITY_SECRET``: a credential-shaped string in a name a trial is shown by rejects that
trial with a finding naming the field, its value redacted; real names raise nothing."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from leakproof_corpus import Gen
from trialkit import build_trial, check_ids

from bf_assets.ingest.discovery import discover
from bf_assets.review.options import ReviewOptions
from bf_assets.review.trial import review_uncached


def _token(seed: int) -> str:
    return "ghp_" + Gen(seed).s(36)


def test_a_secret_in_a_directory_above_the_trial_is_named_once(tmp_path: Path) -> None:
    """A secret in a directory above the job is in the job key and in the trial's path:
    one finding, for the first field that shows it; the trial is rejected."""
    token = _token(81)
    root = tmp_path / "runs"
    job = root / f"job-{token}"
    job.mkdir(parents=True)
    trial = build_trial(job)
    review = trial.full_review()
    found = [f for f in review.findings if f.check == "IDENTITY_SECRET"]
    assert len(found) == 1 and found[0].severity == "blocker"
    assert found[0].message.startswith("the job key carries a credential-shaped string")
    assert "job-[REDACTED:" in found[0].message
    assert review.verdict == "rejected"
    shown = orjson.dumps(review.to_json()).decode()
    assert "IDENTITY_SECRET" in shown
    assert token not in json.dumps([f.to_dict() for f in found])


def test_a_trial_that_cannot_be_read_is_still_named_redacted(tmp_path: Path) -> None:
    """The crash path (a trial the review cannot read) checks the names it has too."""
    token = _token(83)
    trial = build_trial(tmp_path / "runs", rollout_id=token)
    ref = trial.ref()
    (trial.path / "result.json").unlink()
    (trial.path / "result.json").mkdir()  # a directory where a file should be
    review = review_uncached(ref, ReviewOptions())
    assert "IDENTITY_SECRET" in check_ids(review)
    assert all(token not in (f.message + (f.evidence or "")) for f in review.findings)


def test_real_trial_names_raise_nothing(fixtures_dir: Path) -> None:
    """Rollout ids, job timestamps, Harbor suffixes and task names of the public fixtures
    are names, not secrets."""
    roots = [
        fixtures_dir / "benchflow-writer" / "jobs",
        fixtures_dir / "harbor-real",
        fixtures_dir / "benchflow-evals",
    ]
    refs = discover(roots).trials
    assert len(refs) > 40
    for ref in refs:
        assert "IDENTITY_SECRET" not in check_ids(review_uncached(ref, ReviewOptions()))
