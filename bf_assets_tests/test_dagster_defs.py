"""The Dagster shell: definitions load, graph shape, resources, an in-process materialization."""

import importlib
import os
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

import bf_assets.definitions as definitions_module
from bf_assets.defs.ingest import raw_trials, validated_trials
from bf_assets.defs.io_managers import ParquetIOManager
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots, default_run_root, roots_namespace
from bf_assets.review.options import ReviewOptions

JOB = "2026-06-01__00-00-00"
KEY = f"jobs/{JOB}"


def shared_dir() -> Path | None:
    """``../shared`` beside the repo, else ``/work/shared``; ``None`` when neither exists."""
    for cand in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")):
        if cand.is_dir():
            return cand
    return None


@pytest.fixture
def jobs_root(tmp_path: Path) -> Path:
    shared = shared_dir()
    job = shared / "fixtures" / "benchflow-writer" / "jobs" / JOB if shared else None
    if job is None or not job.is_dir():
        where = job or Path(__file__).resolve().parents[2] / "shared" / "fixtures"
        pytest.skip(f"shared fixtures not available at {where}")
    root = tmp_path / "runs" / "jobs"
    shutil.copytree(job, root / JOB)
    return root


def _meta(result: dg.ExecuteInProcessResult, key: str) -> dict[str, object]:
    [mat] = [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey(key)
    ]
    assert mat.partition == KEY
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


# --------------------------------------------------------------------------- definitions


def test_definitions_load() -> None:
    defs = definitions_module.defs
    dg.Definitions.validate_loadable(defs)
    job = defs.resolve_job_def("ingest_job")
    assert job.asset_layer.executable_asset_keys == {
        dg.AssetKey("raw_trials"),
        dg.AssetKey("validated_trials"),
        dg.AssetKey("findings"),
        dg.AssetKey("skill_audit"),
        dg.AssetKey("trial_audits"),
        dg.AssetKey("trial_rows"),
    }
    assert job.partitions_def == job_partitions
    sensor = defs.resolve_sensor_def("new_job_dirs")
    assert sensor.job_name == "ingest_job"
    assert sensor.minimum_interval_seconds == 30
    assert set(defs.resources or {}) >= {"run_roots", "parquet_io_manager"}


def test_asset_graph_shape() -> None:
    graph = definitions_module.defs.resolve_asset_graph()
    raw = graph.get(dg.AssetKey("raw_trials"))
    assert raw.group_name == "ingest"
    assert raw.partitions_def == job_partitions
    for key, group in (
        ("validated_trials", "gate"),
        ("findings", "gate"),
        ("skill_audit", "audit"),
        ("trial_audits", "audit"),
    ):
        node = graph.get(dg.AssetKey(key))
        assert node.group_name == group
        assert node.partitions_def == job_partitions
        assert node.parent_keys == {dg.AssetKey("raw_trials")}


def test_run_roots_default_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BF_RUN_ROOTS", raising=False)
    assert RunRoots().roots == [str(default_run_root())]
    monkeypatch.setenv("BF_RUN_ROOTS", os.pathsep.join(["/a/jobs", "/b/jobs", ""]))
    assert RunRoots().roots == ["/a/jobs", "/b/jobs"]
    assert RunRoots(roots=["/c"]).roots == ["/c"]
    opts = RunRoots(roots=["/c"], tasks_dir="/t", plan_path="/p.yaml").review_options()
    assert isinstance(opts, ReviewOptions)
    assert (opts.tasks_dir, opts.plan_path, opts.quarantine_path) == ("/t", "/p.yaml", None)


def test_warehouse_env(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        monkeypatch.setenv("BF_WAREHOUSE", "memory://bf-warehouse")
        mod = importlib.reload(definitions_module)
        io = (mod.defs.resources or {})["parquet_io_manager"]
        assert isinstance(io, ParquetIOManager)
        # the run roots' own folder of the warehouse: other run roots never share its files
        space = roots_namespace(mod.defs.resources["run_roots"].roots)  # type: ignore[index]
        assert io.base_dir == f"memory://bf-warehouse/{space}"
        other = mod.build_defs(run_roots=RunRoots(roots=["/elsewhere/jobs"]))
        other_io = (other.resources or {})["parquet_io_manager"]
        assert other_io.base_dir != io.base_dir
        assert other_io.base_dir.startswith("memory://bf-warehouse/roots-")
        monkeypatch.delenv("BF_WAREHOUSE")
        mod = importlib.reload(definitions_module)
        io = (mod.defs.resources or {})["parquet_io_manager"]
        wh = Path(__file__).resolve().parents[1] / "data" / "warehouse"
        assert Path(io.base_dir) == wh / space
    finally:
        monkeypatch.undo()
        importlib.reload(definitions_module)


# --------------------------------------------------------------------------- materialization


def test_materialize_writer_fixture_job(jobs_root: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    resources = {
        "run_roots": RunRoots(roots=[str(jobs_root)]),
        "parquet_io_manager": ParquetIOManager(base_dir=str(warehouse)),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, [KEY])
        result = dg.materialize(
            [raw_trials, validated_trials],
            partition_key=KEY,
            instance=instance,
            resources=resources,
        )
        assert result.success
        validated = result.asset_value("validated_trials")
        findings = result.asset_value("findings")

    # Tables: a job key's '/' becomes a sub-folder under each asset's folder.
    for asset in ("raw_trials", "validated_trials", "findings"):
        assert (warehouse / asset / "jobs" / f"{JOB}.parquet").is_file()
    on_disk = pd.read_parquet(warehouse / "validated_trials" / "jobs" / f"{JOB}.parquet")
    assert len(on_disk) == len(validated) == 4
    assert sorted(validated["outcome"]) == sorted(["pass", "unhealthy", "unhealthy", "oracle"])
    assert set(validated["job"]) == {KEY}
    bbbb = findings[findings["rollout"] == "demo-task__bbbb2222"]
    assert "GATE_VERIFIER_ERROR" in set(bbbb["check"])

    raw_meta = _meta(result, "raw_trials")
    assert raw_meta["dagster/row_count"] == 4
    assert raw_meta["by_layout"] == {"production": 4}
    assert isinstance(raw_meta["read_findings"], int)
    assert "demo-task__aaaa1111" in str(raw_meta["preview"])
    assert str(raw_meta["path"]).endswith(f"raw_trials/jobs/{JOB}.parquet")

    v_meta = _meta(result, "validated_trials")
    assert v_meta["dagster/row_count"] == 4
    by_outcome = v_meta["by_outcome"]
    assert isinstance(by_outcome, dict)
    assert {k: n for k, n in by_outcome.items() if n} == {"pass": 1, "unhealthy": 2, "oracle": 1}
    by_verdict = v_meta["by_verdict"]
    assert isinstance(by_verdict, dict)
    assert sum(by_verdict.values()) == 4
    assert v_meta["healthy"] == 1
    assert v_meta["training_ready"] == 1
    assert v_meta["release_verdict"] in {
        "not_publishable",
        "publishable_with_quarantines",
        "publishable",
    }
    assert "GATE_VERIFIER_ERROR" in str(v_meta["findings_by_check"])

    f_meta = _meta(result, "findings")
    assert f_meta["dagster/row_count"] == len(findings) > 0
    by_severity = f_meta["by_severity"]
    assert isinstance(by_severity, dict)
    assert sum(by_severity.values()) == len(findings)
    assert by_severity["blocker"] >= 1


def test_materialize_unknown_partition_fails(jobs_root: Path, tmp_path: Path) -> None:
    resources = {
        "run_roots": RunRoots(roots=[str(jobs_root)]),
        "parquet_io_manager": ParquetIOManager(base_dir=str(tmp_path / "warehouse")),
    }
    with dg.instance_for_test() as instance, pytest.raises(dg.DagsterUnknownPartitionError):
        dg.materialize([raw_trials], partition_key=KEY, instance=instance, resources=resources)


# --------------------------------------------------------------------------- several partitions

SAMPLE_JOBS = Path(__file__).resolve().parents[1] / "data" / "runs" / "jobs"
INGEST_TABLES = ("raw_trials", "validated_trials", "findings", "skill_audit", "trial_audits")


def _ingest_meta(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dict[str, object]]:
    return {
        (e.materialization.asset_key.path[-1], str(e.materialization.partition)): {
            k: getattr(v, "value", v) for k, v in e.materialization.metadata.items()
        }
        for e in result.get_asset_materialization_events()
    }


def test_one_run_over_every_partition_equals_one_run_per_partition(tmp_path: Path) -> None:
    if not SAMPLE_JOBS.is_dir():
        pytest.skip("sample runs not available")
    root = tmp_path / "runs" / "jobs"
    shutil.copytree(SAMPLE_JOBS, root)
    keys = sorted(f"jobs/{p.name}" for p in root.iterdir() if p.is_dir())
    assert len(keys) >= 2
    run_roots = RunRoots(roots=[str(root)])
    per_key, single = tmp_path / "per_key", tmp_path / "single"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, keys)
        want_meta = {}
        for key in keys:
            res = dg.materialize(
                [raw_trials],
                partition_key=key,
                instance=instance,
                resources={
                    "run_roots": run_roots,
                    "parquet_io_manager": ParquetIOManager(base_dir=str(per_key)),
                },
            )
            assert res.success
            want_meta.update(_ingest_meta(res))
        res = (
            definitions_module.build_defs(run_roots=run_roots, warehouse=str(single))
            .resolve_job_def("ingest_job")
            .execute_in_process(
                instance=instance,
                tags={
                    "dagster/asset_partition_range_start": keys[0],
                    "dagster/asset_partition_range_end": keys[-1],
                },
            )
        )
        assert res.success
        got_meta = _ingest_meta(res)
    assert set(want_meta) == {(a, k) for a in INGEST_TABLES for k in keys}
    # ingest_job builds each partition's rows too
    assert set(got_meta) == {(a, k) for a in (*INGEST_TABLES, "trial_rows") for k in keys}
    for asset in INGEST_TABLES:
        for key in keys:
            rel = Path(asset, *key.split("/")).with_suffix(".parquet")
            got, want = pd.read_parquet(single / rel), pd.read_parquet(per_key / rel)
            pd.testing.assert_frame_equal(got, want, check_dtype=False, obj=str(rel))
            g, w = got_meta[(asset, key)], want_meta[(asset, key)]
            assert str(g.pop("path")).endswith(str(rel))
            assert str(w.pop("path")).endswith(str(rel))
            assert g == w, (asset, key)


def test_raw_trials_alone_reads_the_inventory_only(jobs_root: Path, tmp_path: Path) -> None:
    resources = {
        "run_roots": RunRoots(roots=[str(jobs_root)]),
        "parquet_io_manager": ParquetIOManager(base_dir=str(tmp_path / "warehouse")),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, [KEY])
        result = dg.materialize(
            [raw_trials],
            selection=["raw_trials"],
            partition_key=KEY,
            instance=instance,
            resources=resources,
        )
        assert result.success
    assert {e.materialization.asset_key for e in result.get_asset_materialization_events()} == {
        dg.AssetKey("raw_trials")
    }
    assert len(result.asset_value("raw_trials")) == 4
