"""``bf-assets release`` drives the jobs a schedule or the UI runs, in its own process, and
reads its outcome from their results: the same jobs run directly publish the same bytes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from bf_assets.definitions import build_defs
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.publish import PublishTarget
from bf_assets.defs.resources import RunRoots
from bf_assets.ingest.discovery import discover_jobs
from bf_assets_tests.releasekit import isolated_release, published_digests
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("driver")
    generate_corpus(root, 12, seed=5)
    return root


def test_the_release_runs_both_jobs_in_its_own_process(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    code = isolated_release(monkeypatch, tmp_path, corpus / "jobs", corpus / "tasks", out)
    assert code == 0 and (out / "report" / "review.md").is_file()
    with dg.DagsterInstance.get() as inst:
        for job in ("ingest_job", "release_job"):
            (run,) = inst.get_run_records(dg.RunsFilter(job_name=job))
            assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
            events = inst.all_logs(run.dagster_run.run_id)
            pids = {e.dagster_event.pid for e in events if e.dagster_event and e.dagster_event.pid}
            assert pids == {os.getpid()}, job


def test_the_jobs_run_directly_publish_what_the_release_publishes(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing reaches an op except through its resources: the two jobs run on their own,
    one ingest run per job partition as the sensor asks, give the release's bytes."""
    released = tmp_path / "cli" / "out"
    code = isolated_release(
        monkeypatch, tmp_path / "cli", corpus / "jobs", corpus / "tasks", released
    )
    assert code == 0
    out = tmp_path / "direct" / "out"
    defs = build_defs(
        run_roots=RunRoots(roots=[str(corpus / "jobs")], tasks_dir=str(corpus / "tasks")),
        publish_target=PublishTarget(
            out_dir=str(out), staging_dir=str(tmp_path / "direct" / "staging")
        ),
        warehouse=str(tmp_path / "direct" / "warehouse"),
    )
    keys = sorted(j.key for j in discover_jobs([str(corpus / "jobs")]))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name or "trial_jobs", keys)
        for key in keys:
            res = defs.resolve_job_def("ingest_job").execute_in_process(
                instance=instance, partition_key=key
            )
            assert res.success
        assert defs.resolve_job_def("release_job").execute_in_process(instance=instance).success
    assert published_digests(out) == published_digests(released)


def test_a_release_job_that_cannot_run_is_a_release_error_that_says_why(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Unrunnable:
        def execute_in_process(self, **_kwargs: Any) -> None:
            raise RuntimeError("the warehouse tables vanished")

    real = dg.Definitions.resolve_job_def

    def resolve(self: dg.Definitions, name: str) -> Any:
        return Unrunnable() if name == "release_job" else real(self, name)

    monkeypatch.setattr(dg.Definitions, "resolve_job_def", resolve)
    out = tmp_path / "out"
    code = isolated_release(monkeypatch, tmp_path, corpus / "jobs", corpus / "tasks", out)
    printed = capsys.readouterr()
    assert code == 2
    assert "RuntimeError: the warehouse tables vanished" in printed.err
    assert "internal error" not in printed.out + printed.err  # an outcome, not a crash
    assert not out.exists()  # nothing published
