"""The dataset-level review assets: coverage, sandbox_parity and review_report over every
job partition, built from validated_trials with the same core the CLI uses."""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from enginekit import local_resources, materialize_partitions

from bf_assets.corpus.run import review_roots
from bf_assets.defs.ingest import raw_trials, validated_trials
from bf_assets.defs.resources import local_warehouse
from bf_assets.defs.review import dataset_review
from bf_assets.review.options import ReviewOptions

REPO = Path(__file__).resolve().parents[1]
SAMPLE_JOBS = REPO / "data" / "runs" / "jobs"
SAMPLE_TASKS = REPO / "data" / "runs" / "tasks"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs" / "jobs"
    shutil.copytree(SAMPLE_JOBS, root)
    return root


@contextmanager
def _reviewed(runs: Path, warehouse: Path) -> Iterator[dg.ExecuteInProcessResult]:
    """Ingest every job of ``runs``, then materialize the three dataset-review assets (the
    result, while its instance is open)."""
    resources = local_resources(runs, warehouse, tasks_dir=str(SAMPLE_TASKS))
    keys = sorted(f"jobs/{p.name}" for p in runs.iterdir() if p.is_dir())
    assert len(keys) == 2
    with dg.instance_for_test() as instance:
        materialize_partitions(instance, resources, keys)
        res = dg.materialize(
            [raw_trials, validated_trials, dataset_review],
            selection="key:coverage or key:sandbox_parity or key:review_report",
            instance=instance,
            resources=resources,
        )
        assert res.success
        yield res


def test_review_assets_match_the_cli(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "wh"))
    with _reviewed(runs, tmp_path / "wh") as res:
        report = res.asset_value("review_report")
        cov = res.asset_value("coverage")
        meta = {
            e.materialization.asset_key.path[-1]: e.materialization.metadata
            for e in res.get_asset_materialization_events()
        }
    cli = review_roots([runs], ReviewOptions(tasks_dir=str(SAMPLE_TASKS)))
    # Same per-trial verdicts as the CLI, and the same release verdict.
    by_key = {(t.ref.job_key, t.ref.rollout): t.verdict for t in report.trials}
    assert by_key == {(t.ref.job_key, t.ref.rollout): t.verdict for t in cli.trials}
    # ... and the same export decision, trial by trial
    assert report.exports == cli.dataset.exports
    assert meta["review_report"]["exported"].value == cli.summary["exported"]
    assert meta["review_report"]["release_verdict"].value == cli.summary["release_verdict"]
    # The report follows checks.md's order and lands on disk.
    md = meta["review_report"]["report"].value
    order = [md.index(h) for h in ("Blockers", "Coverage", "Evidence", "Residual risk")]
    assert order == sorted(order)
    # the UI's copy, in the run roots' own part of the warehouse
    assert (local_warehouse([str(runs)]) / "report" / "review.md").read_text() == md
    # Coverage: one row per observed slot, a picture in the metadata.
    assert isinstance(cov, pd.DataFrame) and len(cov) == cli.summary["coverage"]["expected"]
    assert "data:image/svg+xml;base64," in meta["coverage"]["matrix"].value


def test_flat_frame_is_the_frame_of_its_rows_with_nested_values_as_text() -> None:
    from bf_assets.defs.review import flat_frame

    rows = [
        {"a": 1, "b": ["x", "y"], "c": True, "d": None},
        {"a": 2, "b": None, "c": False, "d": "z"},
    ]
    df = flat_frame(iter(rows), ["a", "b", "c", "d"])
    assert list(df.columns) == ["a", "b", "c", "d"]
    # a column holding any list is all text (None too, as str gives it)
    assert df["b"].tolist() == ["['x', 'y']", "None"]
    assert df["a"].dtype.kind == "i" and df["c"].dtype == bool
    assert df["d"].isna().tolist() == [True, False]
    # the same frame as one built from the rows (then flattened), column for column
    want = pd.DataFrame(rows)
    want["b"] = want["b"].map(str)
    pd.testing.assert_frame_equal(df, want)
    # no rows: the declared columns all the same
    assert list(flat_frame([], ["a", "b"]).columns) == ["a", "b"]


def test_each_view_is_written_before_the_next_is_made(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coverage and parity tables are on disk (and let go) before the report is made and
    the dataset review pickled."""
    import bf_assets.defs.review as review

    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "wh"))
    seen: list[list[str]] = []
    forgotten: list[bool] = []
    real_parity, real_report = review._parity, review._report

    def written() -> list[str]:
        return sorted(p.name for p in (tmp_path / "wh").rglob("*.parquet"))

    def parity(ds):  # type: ignore[no-untyped-def]
        seen.append(written())
        return real_parity(ds)

    def report(*args):  # type: ignore[no-untyped-def]
        seen.append(written())
        forgotten.append(args[0]._parity is None)  # its rows went with the written frame
        return real_report(*args)

    monkeypatch.setattr(review, "_parity", parity)
    monkeypatch.setattr(review, "_report", report)
    with _reviewed(runs, tmp_path / "wh"):
        pass
    assert "coverage.parquet" in seen[0] and "sandbox_parity.parquet" not in seen[0]
    assert {"coverage.parquet", "sandbox_parity.parquet"} <= set(seen[1])
    assert forgotten == [True]


def test_the_results_asset_is_the_cli_s_results_table(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``results`` materializes downstream of review_report: one row per cell, the same
    table as ``bf-assets review --json``'s summary, numbers the UI plots, the heatmaps."""
    from bf_assets.dataset.results import RESULT_COLUMNS
    from bf_assets.defs.results import results

    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "wh"))
    resources = local_resources(runs, tmp_path / "wh", tasks_dir=str(SAMPLE_TASKS))
    keys = sorted(f"jobs/{p.name}" for p in runs.iterdir() if p.is_dir())
    with dg.instance_for_test() as instance:
        materialize_partitions(instance, resources, keys)
        res = dg.materialize(
            [raw_trials, validated_trials, dataset_review, results],
            selection="key:review_report or key:coverage or key:sandbox_parity or key:results",
            instance=instance,
            resources=resources,
        )
        assert res.success
        frame = res.asset_value("results")
        [meta] = [
            e.materialization.metadata
            for e in res.get_asset_materialization_events()
            if e.materialization.asset_key.path[-1] == "results"
        ]
    cli = review_roots([runs], ReviewOptions(tasks_dir=str(SAMPLE_TASKS))).summary["results"]
    assert list(frame.columns) == RESULT_COLUMNS and len(frame) == len(cli["cells"])
    assert frame["scored_trials"].sum() == cli["scored_trials"] > 0
    assert frame["accepted_trials"].sum() == cli["accepted_trials"] > 0
    assert meta["scored_pass_rate"].value == cli["scored_pass_rate"]
    assert isinstance(meta["accepted_pass_rate"].value, float)
    lifts = [k for k in meta if k.startswith("lift ")]
    assert lifts and all(isinstance(meta[k].value, float) for k in lifts)
    assert meta["lift_heatmap"].value.count("data:image/svg+xml;base64,") == 2
    assert "### Skill lift" in meta["table"].value
