"""What a newcomer meets in the UI: partitions from the start, settings, Dagster's idioms."""

import random
from pathlib import Path

import dagster as dg
import pytest

from bf_assets.defs.ingest import numeric_counts


def test_the_sensor_is_on_from_the_start() -> None:
    from bf_assets.defs.sensors import new_job_dirs

    assert new_job_dirs.default_status == dg.DefaultSensorStatus.RUNNING


def test_published_dataset_has_a_freshness_policy() -> None:
    import bf_assets.definitions as d

    node = d.defs.resolve_asset_graph().get(dg.AssetKey("published_dataset"))
    policy = node.freshness_policy
    assert policy is not None
    assert getattr(policy, "deadline_cron", None) == "0 6 * * *"


def test_relative_settings_resolve_against_the_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.defs.publish import PublishTarget
    from bf_assets.defs.resources import RunRoots

    project, elsewhere = tmp_path / "project", tmp_path / "instance"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the UI's processes run in the instance folder
    monkeypatch.setenv("BF_PROJECT_DIR", str(project))
    monkeypatch.setenv("BF_PLAN", "plan.yaml")
    monkeypatch.setenv("BF_RUN_ROOTS", "runs/jobs")
    monkeypatch.setenv("BF_PUBLISH_DIR", "out")
    monkeypatch.setenv("BF_WAREHOUSE", "s3://bucket/wh")  # URLs stay as given
    roots = RunRoots()
    assert roots.plan_path == str(project / "plan.yaml")
    assert roots.roots == [str(project / "runs" / "jobs")]
    assert PublishTarget().out_dir == str(project / "out")
    from bf_assets.settings import warehouse_dir

    assert warehouse_dir() == "s3://bucket/wh"


def test_the_hub_token_is_an_env_var_field(monkeypatch: pytest.MonkeyPatch) -> None:
    from bf_assets.definitions import build_defs

    token = "tok-" + random.Random(39).randbytes(12).hex()
    monkeypatch.setenv("BF_HUB_REPO", "org/bench")
    monkeypatch.setenv("HF_TOKEN", token)
    target = build_defs().resources["publish_target"]
    assert isinstance(target.hf_token, dg.EnvVar) and target.hf_token.env_var_name == "HF_TOKEN"
    with dg.build_resources({"publish_target": target}) as res:
        resolved = res.publish_target
        assert resolved.hf_token == token
        monkeypatch.delenv("HF_TOKEN")  # the field, not the environment, carries it now
        assert resolved.hub()._given_token == token
        assert resolved.hub().check() == token


def test_counts_are_numbers_the_ui_plots() -> None:
    meta = numeric_counts("verdict", {"publishable": 3, "quarantined": 0})
    assert meta == {
        "verdict/publishable": dg.MetadataValue.int(3),
        "verdict/quarantined": dg.MetadataValue.int(0),
    }


def test_the_executor_is_chosen_by_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from bf_assets.definitions import build_defs

    monkeypatch.delenv("BF_EXECUTOR", raising=False)
    job = build_defs().resolve_job_def("release_job")
    assert job.executor_def is dg.multi_or_in_process_executor
