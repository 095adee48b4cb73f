"""The ``new_job_dirs`` sensor over a copy of the real Benchflow writer fixture."""

import shutil
from pathlib import Path

import dagster as dg
import orjson
import pytest

from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots
from bf_assets.defs.sensors import load_cursor, new_job_dirs

JOB = "2026-06-01__00-00-00"
KEY = f"jobs/{JOB}"


def shared_dir() -> Path | None:
    """``../shared`` beside the repo, else ``/work/shared``; ``None`` when neither exists."""
    for cand in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")):
        if cand.is_dir():
            return cand
    return None


def writer_job() -> Path:
    shared = shared_dir()
    job = shared / "fixtures" / "benchflow-writer" / "jobs" / JOB if shared else None
    if job is None or not job.is_dir():
        where = job or Path(__file__).resolve().parents[2] / "shared" / "fixtures"
        pytest.skip(f"shared fixtures not available at {where}")
    return job


@pytest.fixture
def jobs_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs" / "jobs"
    shutil.copytree(writer_job(), root / JOB)
    return root


def tick(
    instance: dg.DagsterInstance, root: Path, cursor: str | None
) -> dg.SensorResult | dg.SkipReason:
    ctx = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"run_roots": RunRoots(roots=[str(root)])}
    )
    result = new_job_dirs(ctx)
    if isinstance(result, dg.SensorResult):
        # What the daemon does with the tick, atomically, before launching the runs.
        for req in result.dynamic_partitions_requests or []:
            assert isinstance(req, dg.AddDynamicPartitionsRequest)
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
    return result


def added(result: dg.SensorResult) -> list[str]:
    return [k for r in result.dynamic_partitions_requests or [] for k in r.partition_keys]


def test_new_job_then_unchanged_then_retry_then_new_job(jobs_root: Path) -> None:
    with dg.instance_for_test() as instance:
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        assert added(first) == [KEY]
        assert first.dynamic_partitions_requests[0].partitions_def_name == job_partitions.name
        [run] = first.run_requests
        assert run.partition_key == KEY
        assert run.run_key is not None and run.run_key.startswith(f"{KEY}:")
        assert len(run.run_key) == len(KEY) + 1 + 16
        state = load_cursor(first.cursor)
        assert list(state) == [KEY]
        assert run.run_key == f"{KEY}:{state[KEY][:16]}"
        assert instance.get_dynamic_partitions(job_partitions.name) == [KEY]

        second = tick(instance, jobs_root, first.cursor)
        assert isinstance(second, dg.SkipReason)
        assert "nothing changed" in (second.skip_message or "")

        # A retry rollout lands in the same job directory.
        shutil.copytree(
            jobs_root / JOB / "demo-task__aaaa1111", jobs_root / JOB / "demo-task__eeee5555"
        )
        third = tick(instance, jobs_root, first.cursor)
        assert isinstance(third, dg.SensorResult)
        assert added(third) == []
        [rerun] = third.run_requests
        assert rerun.partition_key == KEY
        assert rerun.run_key != run.run_key
        assert instance.get_dynamic_partitions(job_partitions.name) == [KEY]

        # A new job directory becomes a new partition; the old one is left alone.
        shutil.copytree(writer_job(), jobs_root / "2026-06-02__00-00-00")
        fourth = tick(instance, jobs_root, third.cursor)
        assert isinstance(fourth, dg.SensorResult)
        new_key = "jobs/2026-06-02__00-00-00"
        assert added(fourth) == [new_key]
        assert [r.partition_key for r in fourth.run_requests] == [new_key]
        assert sorted(load_cursor(fourth.cursor)) == [KEY, new_key]
        assert sorted(instance.get_dynamic_partitions(job_partitions.name)) == [KEY, new_key]

        assert isinstance(tick(instance, jobs_root, fourth.cursor), dg.SkipReason)


def test_result_json_appearing_requests_a_new_run(jobs_root: Path, tmp_path: Path) -> None:
    result_json = jobs_root / JOB / "demo-task__bbbb2222" / "result.json"
    parked = tmp_path / "result.json"
    shutil.move(result_json, parked)
    with dg.instance_for_test() as instance:
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        shutil.move(parked, result_json)
        second = tick(instance, jobs_root, first.cursor)
        assert isinstance(second, dg.SensorResult)
        assert added(second) == []
        assert [r.partition_key for r in second.run_requests] == [KEY]
        assert second.run_requests[0].run_key != first.run_requests[0].run_key


def test_an_artifact_landing_late_requests_a_new_run(jobs_root: Path) -> None:
    """The review reads the whole trial tree (the gate's file-name and link checks cover
    ``artifacts/``): a file landing there after the job was seen is a change the sensor
    acts on, not only a change to the result, trajectories, verifier or agent logs."""
    trial = next(p for p in sorted((jobs_root / JOB).iterdir()) if p.is_dir())
    with dg.instance_for_test() as instance:
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        assert isinstance(tick(instance, jobs_root, first.cursor), dg.SkipReason)
        (trial / "artifacts").mkdir(exist_ok=True)
        (trial / "artifacts" / ".env").write_text("OPENAI_API_KEY=sk-late\n")
        second = tick(instance, jobs_root, first.cursor)
        assert isinstance(second, dg.SensorResult)
        assert [r.partition_key for r in second.run_requests] == [KEY]
        assert second.run_requests[0].run_key != first.run_requests[0].run_key


def test_lost_cursor_requests_runs_without_re_adding_partitions(jobs_root: Path) -> None:
    with dg.instance_for_test() as instance:
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        again = tick(instance, jobs_root, None)
        assert isinstance(again, dg.SensorResult)
        assert added(again) == []
        # Same run key: the daemon de-duplicates it, so no second run is launched.
        assert [r.run_key for r in again.run_requests] == [r.run_key for r in first.run_requests]


def test_removed_job_is_forgotten(jobs_root: Path) -> None:
    with dg.instance_for_test() as instance:
        shutil.copytree(jobs_root / JOB, jobs_root / "2026-06-02__00-00-00")
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        shutil.rmtree(jobs_root / "2026-06-02__00-00-00")
        second = tick(instance, jobs_root, first.cursor)
        assert isinstance(second, dg.SensorResult)
        assert not second.run_requests
        assert load_cursor(second.cursor) == {KEY: load_cursor(first.cursor)[KEY]}


def test_missing_run_root_skips(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        result = tick(instance, tmp_path / "nowhere", None)
    assert isinstance(result, dg.SkipReason)
    assert "no run root" in (result.skip_message or "")


def test_empty_run_root_skips(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        result = tick(instance, tmp_path, None)
    assert isinstance(result, dg.SkipReason)


def test_cursor_parsing_is_lenient() -> None:
    assert load_cursor(None) == {}
    assert load_cursor("not json") == {}
    assert load_cursor("[1, 2]") == {}
    assert load_cursor(orjson.dumps({"a": "b"}).decode()) == {"a": "b"}


def test_first_tick_does_not_rerun_an_ingested_unchanged_job(
    jobs_root: Path, tmp_path: Path
) -> None:
    """Turning the sensor on after a release: materialized, unchanged partitions are not
    ingested again; a job that changed since is."""
    from enginekit import local_resources

    from bf_assets.defs.ingest import raw_trials

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, [KEY])
        res = dg.materialize(
            [raw_trials],
            selection="key:raw_trials",
            partition_key=KEY,
            instance=instance,
            resources=local_resources(jobs_root, tmp_path / "wh"),
        )
        assert res.success
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SkipReason), first
        # a retry rollout lands: the job changed since it was ingested
        trial = next(p for p in (jobs_root / JOB).iterdir() if p.is_dir())
        shutil.copytree(trial, jobs_root / JOB / f"{trial.name}-retry")
        again = tick(instance, jobs_root, None)
        assert isinstance(again, dg.SensorResult)
        assert [r.partition_key for r in again.run_requests] == [KEY]


def test_a_file_landing_while_the_job_is_ingested_is_a_change(
    jobs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprint an ingest records is taken before its trials are read: a file that
    lands in a trial while it is read gets the job ingested again, instead of leaving its
    tables behind the files for good."""
    from enginekit import local_resources

    from bf_assets.corpus import inventory
    from bf_assets.defs.ingest import ingest_trials

    real = inventory.inventory_review

    def reading(ref, options):  # type: ignore[no-untyped-def]
        late = Path(ref.path) / "late.log"
        if not late.exists():
            late.write_text("landed while the trial was read")
        return real(ref, options)

    monkeypatch.setattr(inventory, "inventory_review", reading)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, [KEY])
        res = dg.materialize(
            [ingest_trials],
            partition_key=KEY,
            instance=instance,
            resources=local_resources(jobs_root, tmp_path / "wh"),
        )
        assert res.success
        assert any((jobs_root / JOB).glob("*/late.log"))
        first = tick(instance, jobs_root, None)
        assert isinstance(first, dg.SensorResult)
        assert [r.partition_key for r in first.run_requests] == [KEY]
