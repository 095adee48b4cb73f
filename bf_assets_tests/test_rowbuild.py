"""Curation's rows built by forked workers make the same release as rows built in one process.

``bf_assets.publish.rowbuild`` builds the export rows of a large release in workers and hands
them back in order; the shards, card (with what cleaning counted), manifest, report and
excluded trials must be byte for byte what one process makes, duplicates and trials that
fail included.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_curate_rows import leaky_trial
from test_publish_bundle import files_of
from trialkit import healthy_spec

from bf_assets.dataset.decide import CURATION_ERROR, DUPLICATE
from bf_assets.publish import rowbuild
from bf_assets.publish.bundle import Bundle, BundleOptions, build_bundle, review_exports


@pytest.fixture
def release(runs_root: Path) -> tuple[Any, dict[Any, Any]]:
    """Eleven exported trials: one with secrets and host paths to clean, one whose row
    changed after its review (a curation error), and one given another's artifact digest
    (a duplicate of it)."""
    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(10)]
    trials.append(leaky_trial(runs_root))
    ds, cands = review_exports([t.review() for t in trials])
    trials[3].set_row("reward", 0.5)
    keys = sorted(cands)
    cands[keys[5]] = replace(cands[keys[5]], rollout_id=cands[keys[6]].rollout_id)
    return ds, cands


def _build(release: Any, out: Path, monkeypatch: pytest.MonkeyPatch, *, forked: bool) -> Bundle:
    calls: list[int] = []
    real = rowbuild._in_workers

    def spy(batches: Any, steps: bool, workers: int) -> Any:
        calls.append(len(batches))
        return real(batches, steps, workers)

    with monkeypatch.context() as m:
        m.setattr(rowbuild, "_in_workers", spy)
        m.setattr(rowbuild, "PARALLEL_MIN_TRIALS", 0 if forked else 10**9)
        m.setattr(rowbuild, "BATCH", 2)
        m.setattr(rowbuild.os, "cpu_count", lambda: 2)
        b = build_bundle(*release, out, BundleOptions(test_fraction=0))
    assert calls == ([6] if forked else [])
    return b


def test_rows_built_by_workers_make_the_same_release(
    release: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = _build(release, tmp_path / "one", monkeypatch, forked=False)
    many = _build(release, tmp_path / "many", monkeypatch, forked=True)
    assert files_of(many.path) == files_of(one.path)
    assert many.digest == one.digest and many.rows == one.rows
    assert [(e.rollout, e.reason, e.detail) for e in many.excluded] == [
        (e.rollout, e.reason, e.detail) for e in one.excluded
    ]
    reasons = sorted(e.reason for e in one.excluded)
    assert reasons == sorted([CURATION_ERROR, DUPLICATE])
    assert one.rows["rollouts"] == 9
    # what cleaning counted is on the card, from the trials exported (not the duplicate)
    card = (one.path / "README.md").read_text()
    assert "anthropic_key" in card


def test_an_unexpected_error_in_a_worker_stops_the_release(
    release: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error curation does not expect, in a worker, stops the release with that error."""
    real = rowbuild.build_row

    def broken(trial_dir: Any, cand: Any, **kw: Any) -> Any:
        if "task-7" in str(trial_dir):
            raise KeyError("unexpected")
        return real(trial_dir, cand, **kw)

    monkeypatch.setattr(rowbuild, "build_row", broken)
    with pytest.raises(KeyError, match="unexpected"):
        _build(release, tmp_path / "x", monkeypatch, forked=True)


def test_rows_built_in_partitions_and_read_back_make_the_same_release(
    release: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written to the rows files of their job partitions (before any dataset review:
    without coverage's findings or a quarantine's verdict) and read back by a release make
    the release that builds them in place; a trial without a record, or whose record was
    built from other files, is a curation error."""
    ds, cands = release
    one = _build(release, tmp_path / "one", monkeypatch, forked=False)
    # what the partition knows of each trial: its own verdict and findings
    early = [
        replace(c, verdict="quarantined", finding_checks=("HACK_SUSPECTED",))
        for c in cands.values()
    ]
    entries = rowbuild.write_trial_rows(
        early, lambda job: tmp_path / "rows" / job.replace("/", "_")
    )
    assert [e["rollout"] for e in entries] == [c.rollout for c in early]
    stored = rowbuild.StoredRows({(e["job"], e["rollout"]): e for e in entries})
    again = build_bundle(
        ds, cands, tmp_path / "two", BundleOptions(test_fraction=0), outcomes=stored
    )
    assert files_of(again.path) == files_of(one.path)
    assert again.digest == one.digest

    keys = sorted(cands)
    gone, stale = keys[0], keys[1]
    kept = {(e["job"], e["rollout"]): e for e in entries if (e["job"], e["rollout"]) != gone}
    kept[stale] = {**kept[stale], "rollout_id": "sha256:other"}
    partial = build_bundle(
        ds,
        cands,
        tmp_path / "three",
        BundleOptions(test_fraction=0),
        outcomes=rowbuild.StoredRows(kept),
    )
    why = {(e.job, e.rollout): (e.reason, e.detail) for e in partial.excluded}
    assert why[gone] == why[stale] == (CURATION_ERROR, rowbuild.NOT_BUILT)


def test_a_rows_file_is_written_whole_and_old_ones_are_pruned(release: Any, tmp_path: Path) -> None:
    _, cands = release
    base = tmp_path / "rows" / "job"
    written = []
    for _ in range(3):
        entries = rowbuild.write_trial_rows(list(cands.values()), lambda job: base)
        [name] = {e["rows_file"] for e in entries}
        assert Path(name).is_file() and Path(name).name.startswith("job.")
        written.append(name)
    left = sorted(str(p) for p in base.parent.iterdir())
    # the newest ones, and nothing half-written beside them
    assert left == sorted(written[-rowbuild.KEEP_ROWS_FILES :])


def test_rows_files_on_an_object_store_read_back(release: Any) -> None:
    """A warehouse on an fsspec filesystem holds the rows files too (``memory://`` here)."""
    from upath import UPath

    _, cands = release
    entries = rowbuild.write_trial_rows(list(cands.values()), lambda job: UPath("memory://wh/job"))
    assert all(e["rows_file"].startswith("memory://") for e in entries)
    stored = rowbuild.StoredRows({(e["job"], e["rollout"]): e for e in entries})
    for cand in cands.values():
        got, want = stored.outcome(cand), rowbuild.build_one(cand, True, None)
        if isinstance(want, str):
            assert got == want
        else:
            assert not isinstance(got, str) and got.row == want.row and got.steps == want.steps
