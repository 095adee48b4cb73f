"""The review cache: an unchanged trial is served from the cache, and any change to a file,
an added or a removed file, or new review code, is a miss (never a stale verdict)."""

import os
from pathlib import Path

import pytest
from trialkit import Trial, healthy_spec

from bf_assets.corpus import cache as cache_mod
from bf_assets.corpus.run import review_trial
from bf_assets.review.options import ReviewOptions

ROWS = "results.jsonl"


@pytest.fixture
def trial(tmp_path: Path) -> Trial:
    return healthy_spec().write(tmp_path / "runs")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every time a trial is actually read (a cache miss)."""
    import bf_assets.review.trial as review_mod

    seen: list[str] = []
    real = review_mod.scan_trial

    def counting(*a, **k):
        seen.append("scan")
        return real(*a, **k)

    monkeypatch.setattr(review_mod, "scan_trial", counting)
    return seen


def _review(trial: Trial, cache_dir: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch):
    return review_trial(trial.ref(), ReviewOptions(cache_dir=str(cache_dir)))


def test_unchanged_trial_is_served_from_the_cache(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: list[str]
) -> None:
    first = _review(trial, tmp_path / "c", calls, monkeypatch)
    second = _review(trial, tmp_path / "c", calls, monkeypatch)
    assert calls == ["scan"]  # read once
    assert second.to_json() == first.to_json() and second.verdict == "publishable"


@pytest.mark.parametrize("change", ["edit", "edit_keep_mtime", "add", "remove"])
def test_any_file_change_is_a_miss(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, calls: list[str]
) -> None:
    first = _review(trial, tmp_path / "c", calls, monkeypatch)
    assert first.verdict == "publishable"
    path = trial.file(ROWS)
    if change in ("edit", "edit_keep_mtime"):
        st = os.stat(path)
        text = path.read_text()
        path.write_text(
            text.replace('"training_ready": true', '"training_ready": null')
        )  # same size
        if change == "edit_keep_mtime":  # a rewrite that restores the mtime is still caught (ctime)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "add":
        (trial.path / "trajectory" / "extra.jsonl").write_text("{}\n")
    else:
        trial.drop(ROWS)
    again = _review(trial, tmp_path / "c", calls, monkeypatch)
    assert calls == ["scan", "scan"]  # read again
    if change in ("edit", "edit_keep_mtime"):
        assert "GATE_ROW_READY_MISMATCH" in {f.check for f in again.findings}
    if change == "remove":
        assert "GATE_ROWS_MISSING" in {f.check for f in again.findings}


def test_new_review_code_is_a_miss(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: list[str]
) -> None:
    _review(trial, tmp_path / "c", calls, monkeypatch)
    monkeypatch.setattr(cache_mod, "code_digest", lambda: "another version of the code")
    _review(trial, tmp_path / "c", calls, monkeypatch)
    assert calls == ["scan", "scan"]


def test_a_corrupt_entry_is_a_miss_not_a_crash(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: list[str]
) -> None:
    first = _review(trial, tmp_path / "c", calls, monkeypatch)
    for entry in (tmp_path / "c").rglob("*.json"):
        entry.write_text("{not json")
    again = _review(trial, tmp_path / "c", calls, monkeypatch)
    assert calls == ["scan", "scan"] and again.to_json() == first.to_json()


def test_a_linked_file_whose_target_changes_is_a_miss(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: list[str]
) -> None:
    outside = tmp_path / "notes.txt"
    outside.write_text("first")
    (trial.path / "artifacts" / "notes.txt").symlink_to(outside)
    _review(trial, tmp_path / "c", calls, monkeypatch)
    outside.write_text("second, longer")
    _review(trial, tmp_path / "c", calls, monkeypatch)
    assert calls == ["scan", "scan"]
