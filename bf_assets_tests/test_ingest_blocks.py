"""``bf-assets release`` ingests a large corpus in runs of bounded size (``BF_INGEST_RUN_TRIALS``
trials at most), and the release it publishes is the same, byte for byte."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from bf_assets.cli.release import partition_blocks
from bf_assets_tests.releasekit import isolated_release, published_digests
from bf_sample.generator import generate_corpus


def test_blocks_respect_the_order_and_the_trial_budget() -> None:
    order = ["a", "b", "c", "d", "e", "f"]
    sizes = {"a": 40, "b": 40, "c": 40, "d": 300, "e": 10, "f": 10}
    assert partition_blocks(order, order) == [order]
    assert partition_blocks(order, order, sizes, 100) == [["a", "b"], ["c"], ["d"], ["e", "f"]]
    # a gap in the keys still splits, and a budget never merges across it
    assert partition_blocks(order, ["a", "c", "e", "f"], sizes, 1000) == [["a"], ["c"], ["e", "f"]]
    blocks = partition_blocks(order, order, sizes, 50)
    assert [k for b in blocks for k in b] == order
    assert all(sum(sizes[k] for k in b) <= 50 or len(b) == 1 for b in blocks)


def _release(tmp: Path, corpus: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp / name / "out"
    assert isolated_release(monkeypatch, tmp / name, corpus / "jobs", corpus / "tasks", out) == 0
    return out


def test_a_release_in_bounded_ingest_runs_publishes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 230, seed=3)  # three job directories: 100, 100 and 30 trials
    assert len(list((corpus / "jobs").iterdir())) == 3
    monkeypatch.delenv("BF_INGEST_RUN_TRIALS", raising=False)
    monkeypatch.delenv("DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS", raising=False)
    whole = _release(tmp_path, corpus, "one-run", monkeypatch)
    with dg.DagsterInstance.get() as inst:  # one run over the three job partitions
        (run,) = inst.get_run_records(dg.RunsFilter(job_name="ingest_job"))
        events = inst.all_logs(run.dagster_run.run_id)
        planned = [
            e
            for e in events
            if e.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
        ]
        done = [
            e for e in events if e.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
        ]
        assert len(planned) == 6  # one per asset, not one per asset and partition
        assert len(done) == 18  # every partition of every asset is materialized
        keys = inst.get_materialized_partitions(dg.AssetKey("validated_trials"))
        assert len(keys) == 3
    monkeypatch.setenv("BF_INGEST_RUN_TRIALS", "100")
    split = _release(tmp_path, corpus, "three-runs", monkeypatch)
    with dg.DagsterInstance.get() as inst:  # the split release's instance
        ingest = inst.get_run_records(dg.RunsFilter(job_name="ingest_job"))
        assert len(ingest) == 3
        assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in ingest)
    a, b = published_digests(whole), published_digests(split)
    assert a and a == b
