"""The Dagster shell of curation and publishing: release job, blocking checks, the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from test_curate_rows import leaky_trial
from test_publish_bundle import LEAKS, published_text
from trialkit import build_trial, oracle_spec

from bf_assets.definitions import build_defs, defs
from bf_assets.defs.checks import GATE_CHECK_NAMES
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.publish import PublishTarget
from bf_assets.defs.resources import RunRoots
from bf_assets.ingest.discovery import discover_jobs

JOB_KEY = "jobs/2026-06-01__00-00-00"


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as inst:
        yield inst


def make_defs(
    root: Path, tmp: Path, quarantine: Path | None = None, **target: Any
) -> dg.Definitions:
    return build_defs(
        run_roots=RunRoots(
            roots=[str(root)], quarantine_path=str(quarantine) if quarantine else None
        ),
        publish_target=PublishTarget(
            out_dir=str(tmp / "published"), staging_dir=str(tmp / "staging"), **target
        ),
        warehouse=str(tmp / "warehouse"),
    )


def ingest(d: dg.Definitions, root: Path, instance: dg.DagsterInstance) -> None:
    keys = [j.key for j in discover_jobs([str(root)])]
    instance.add_dynamic_partitions(job_partitions.name or "trial_jobs", keys)
    for key in keys:
        res = d.resolve_job_def("ingest_job").execute_in_process(
            partition_key=key, instance=instance
        )
        assert res.success


def release(d: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return d.resolve_job_def("release_job").execute_in_process(
        instance=instance, raise_on_error=False
    )


def materialized(res: dg.ExecuteInProcessResult) -> set[str]:
    return {
        e.materialization.asset_key.to_user_string() for e in res.get_asset_materialization_events()
    }


DATASET_ASSETS = {"coverage", "sandbox_parity", "review_report", "results", "trial_pages"}


def check_results(res: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in res.get_asset_check_evaluations()}


def test_definitions_wire_the_release(instance: dg.DagsterInstance) -> None:
    dg.Definitions.validate_loadable(defs)
    job = defs.resolve_job_def("release_job")
    # the release materializes the dataset review it exports from: after a release every
    # asset downstream of ingest is materialized and consistent
    assert job.asset_layer.executable_asset_keys == {
        dg.AssetKey(k)
        for k in (
            "coverage",
            "sandbox_parity",
            "review_report",
            "results",
            "trial_pages",
            "curated_rollouts",
            "published_dataset",
        )
    }
    assert job.tags.get("release") == "publish"
    graph = defs.resolve_asset_graph()
    # curation reads the one decision and the rows its partitions built, not the tables the
    # decision was made from
    assert graph.get(dg.AssetKey("curated_rollouts")).parent_keys == {
        dg.AssetKey("review_report"),
        dg.AssetKey("raw_trials"),
        dg.AssetKey("trial_rows"),
    }
    assert graph.get(dg.AssetKey("trial_rows")).partitions_def is not None
    assert (
        dg.AssetKey("trial_rows")
        in defs.resolve_job_def("ingest_job").asset_layer.executable_asset_keys
    )
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert groups == {
        "raw_trials": "ingest",
        "validated_trials": "gate",
        "findings": "gate",
        "skill_audit": "audit",
        "trial_audits": "audit",
        "trial_rows": "curate",
        "coverage": "dataset",
        "sandbox_parity": "dataset",
        "review_report": "dataset",
        "results": "dataset",
        "trial_pages": "dataset",
        "curated_rollouts": "curate",
        "published_dataset": "publish",
    }
    assert graph.get(dg.AssetKey("published_dataset")).pools == {"hf_hub"}
    checks = {
        k.name for k in graph.asset_check_keys if k.asset_key == dg.AssetKey("curated_rollouts")
    }
    assert checks == set(GATE_CHECK_NAMES)
    assert all(graph.get_check_spec(k).blocking for k in graph.asset_check_keys)
    schedule = defs.resolve_schedule_def("release_schedule")
    assert schedule.job_name == "release_job" and schedule.cron_schedule == "0 3 * * *"
    assert set(defs.resources or {}) >= {"run_roots", "publish_target", "parquet_io_manager"}


def test_release_job_curates_checks_and_publishes(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance
) -> None:
    leaky_trial(runs_root)
    oracle_spec().write(runs_root)
    d = make_defs(runs_root, tmp_path)
    ingest(d, runs_root, instance)
    res = release(d, instance)
    assert res.success
    assert materialized(res) == {*DATASET_ASSETS, "curated_rollouts", "published_dataset"}
    assert check_results(res) == dict.fromkeys(GATE_CHECK_NAMES, True)
    out = tmp_path / "published"
    assert (out / "data" / "rollouts" / "train-00000-of-00001.parquet").is_file()
    text = published_text(out)
    for leak in LEAKS:
        assert leak not in text
    [mat] = [
        e.materialization
        for e in res.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey("published_dataset")
    ]
    # the oracle lane is a probe, not held-out model data: nothing model-made was excluded
    assert mat.metadata["release_verdict"].value == "publishable"
    assert mat.metadata["tag"].value.startswith("release-")
    [cur] = [
        e.materialization
        for e in res.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey("curated_rollouts")
    ]
    # the UI's row count is the rows exported, not the files of the bundle index
    assert cur.metadata["dagster/row_count"].value == cur.metadata["rows_exported"].value == 1
    assert cur.metadata["files_written"].value > 1
    # unchanged input: the second release changes nothing
    again = release(d, instance)
    assert again.success
    [mat2] = [
        e.materialization
        for e in again.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey("published_dataset")
    ]
    assert mat2.metadata["changed"].value is False
    assert mat2.metadata["tag"].value == mat.metadata["tag"].value


def test_a_failing_check_blocks_publish_and_publish_alone_refuses(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cleaning bug lets a secret through: the gate stops the run, and a run that selects
    only ``published_dataset`` refuses the same bundle on its own."""
    leaky_trial(runs_root)
    d = make_defs(runs_root, tmp_path)
    import bf_assets.curate.rows as rows
    from bf_assets.redact.clean import Cleaner

    class Broken(Cleaner):  # a redaction bug: rows pass through uncleaned
        def value(self, value: Any) -> Any:
            return value

    monkeypatch.setattr(rows, "Cleaner", Broken)  # the rows are built where ingest runs
    ingest(d, runs_root, instance)
    res = release(d, instance)
    assert not res.success
    assert materialized(res) == {*DATASET_ASSETS, "curated_rollouts"}
    got = check_results(res)
    assert not got["PUBLISH_SECRET"] and not got["PUBLISH_HOST_PATH"]
    assert not got["PUBLISH_BANNED_KEY"] and not got["release_is_publishable"]
    assert got["PUBLISH_SCHEMA"] and got["PUBLISH_NOT_READY"]
    assert instance.get_latest_materialization_event(dg.AssetKey("published_dataset")) is None
    assert not (tmp_path / "published" / "data").exists()

    only = dg.define_asset_job(
        "publish_only", selection=dg.AssetSelection.assets("published_dataset")
    )
    d2 = dg.Definitions.merge(d, dg.Definitions(jobs=[only]))
    res2 = d2.resolve_job_def("publish_only").execute_in_process(
        instance=instance, raise_on_error=False
    )
    assert not res2.success
    assert res2.get_asset_check_evaluations() == []  # the gate was bypassed...
    failure = next(e for e in res2.all_events if e.is_step_failure)
    assert "refusing to publish" in str(failure.event_specific_data.error)  # ...and still held
    assert instance.get_latest_materialization_event(dg.AssetKey("published_dataset")) is None
    assert not (tmp_path / "published" / "data").exists()


def test_nothing_to_export_blocks_the_release(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance
) -> None:
    oracle_spec().write(runs_root)
    d = make_defs(runs_root, tmp_path)
    ingest(d, runs_root, instance)
    res = release(d, instance)
    assert not res.success and materialized(res) == {*DATASET_ASSETS, "curated_rollouts"}
    got = check_results(res)
    assert got.pop("release_is_publishable") is False
    assert all(got.values())


def test_partitions_of_other_roots_and_unmaterialized_ones_are_ignored(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance
) -> None:
    build_trial(runs_root)
    d = make_defs(runs_root, tmp_path)
    ingest(d, runs_root, instance)
    instance.add_dynamic_partitions(job_partitions.name or "trial_jobs", ["jobs/never-ingested"])
    res = release(d, instance)
    assert res.success, check_results(res)


@pytest.mark.parametrize(("good", "code"), [(True, 0), (False, 3)], ids=["published", "blocked"])
def test_cli_release_exit_codes(
    tmp_path: Path,
    runs_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    good: bool,
    code: int,
) -> None:
    from bf_assets.cli.main import main

    (build_trial if good else lambda r: oracle_spec().write(r))(runs_root)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("BF_RUN_ROOTS", "")
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("BF_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    out = tmp_path / "out"
    assert main(["release", "--runs", str(runs_root), "--out", str(out)]) == code
    printed = dict(
        line.split(":", 1) for line in capsys.readouterr().out.splitlines() if ":" in line
    )
    report = Path((printed.get("review report") or printed["blocked attempt"]).strip())
    assert report.is_file() and report.name == "review.md"
    # published: the report is inside the release; blocked: nothing reaches --out, the
    # report stays with the staged bundle that was refused
    assert (report == out / "report" / "review.md") is good
    assert (out / "README.md").is_file() is good


def test_manual_quarantine_is_honoured(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance
) -> None:
    """Effective verdicts of the dataset review (here a manual quarantine) drive curation."""
    build_trial(runs_root)
    build_trial(runs_root, task="other-task", rollout_id="bbbb0001")
    quarantine = tmp_path / "quarantine.yaml"
    quarantine.write_text(
        "- trial: 2026-06-01__00-00-00/other-task__bbbb0001\n"
        "  action: quarantine\n  reason: suspicious perfect score\n"
        "  by: reviewer\n  at: 2026-11-03\n"
    )
    d = make_defs(runs_root, tmp_path, quarantine)
    ingest(d, runs_root, instance)
    res = release(d, instance)
    assert res.success
    card = (tmp_path / "published" / "README.md").read_text()
    assert "other-task__bbbb0001" in card and "quarantined" in card
    assert "publishable_with_quarantines" in card


def test_partition_blocks_never_take_in_other_partitions() -> None:
    from bf_assets.cli.release import partition_blocks, range_tags

    order = ["a", "b", "c", "d", "e"]
    assert partition_blocks(order, ["a", "b", "c", "d", "e"]) == [["a", "b", "c", "d", "e"]]
    assert partition_blocks(order, ["e", "a", "b", "d"]) == [["a", "b"], ["d", "e"]]
    assert partition_blocks(order, ["c"]) == [["c"]]
    assert partition_blocks(order, []) == []
    assert range_tags(["c"]) == {}
    assert range_tags(["a", "b"]) == {
        "dagster/asset_partition_range_start": "a",
        "dagster/asset_partition_range_end": "b",
    }


def test_the_bundle_is_verified_once_and_again_when_its_bytes_change(
    tmp_path: Path, runs_root: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Curation verifies its bundle; the blocking checks and ``published_dataset`` read that
    verification while the bundle holds the bytes it verified.  A byte changed after
    curation is verified again, and refused."""
    import bf_assets.defs.publish as publish_defs

    calls: list[str] = []
    real = publish_defs.verify_bundle

    def counted(bundle_dir: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(bundle_dir))
        return real(bundle_dir, *args, **kwargs)

    monkeypatch.setattr(publish_defs, "verify_bundle", counted)
    leaky_trial(runs_root)
    d = make_defs(runs_root, tmp_path)
    ingest(d, runs_root, instance)
    res = release(d, instance)
    assert res.success
    assert len(calls) == 1  # curation's; the checks and the publish step read it
    assert all(check_results(res).values())

    # the bundle changes after curation: a run of published_dataset alone verifies it again
    [bundle] = {Path(c) for c in calls}
    card = bundle / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nextra line\n", encoding="utf-8")
    only = dg.define_asset_job(
        "publish_only", selection=dg.AssetSelection.assets("published_dataset")
    )
    d2 = dg.Definitions.merge(d, dg.Definitions(jobs=[only]))
    res2 = d2.resolve_job_def("publish_only").execute_in_process(
        instance=instance, raise_on_error=False
    )
    assert len(calls) == 2
    assert not res2.success
    failure = next(e for e in res2.all_events if e.is_step_failure)
    assert "refusing to publish" in str(failure.event_specific_data.error)
