"""A second ``bf-assets release`` over the same run roots reads again only the job directories
that changed (or whose tables did), and publishes exactly what a release from scratch
publishes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from bf_assets.cli.main import main
from bf_assets.corpus.ingest_state import table_file
from bf_assets.settings import local_tables
from bf_assets_tests.releasekit import isolated_release, published_digests
from bf_sample.generator import generate_corpus


def _ingest_runs() -> int:
    """The ingest runs of the last release's instance (``DAGSTER_HOME``)."""
    with dg.DagsterInstance.get() as inst:
        return len(inst.get_run_records(dg.RunsFilter(job_name="ingest_job")))


def _partitions_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("job partitions:"))


def test_only_what_changed_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 230, seed=3)  # three job directories: 100, 100 and 30 trials
    jobs, tasks = corpus / "jobs", corpus / "tasks"
    monkeypatch.delenv("BF_INGEST_RUN_TRIALS", raising=False)
    a, b = tmp_path / "a", tmp_path / "b"

    def release(base: Path, *extra: str) -> str:
        code = isolated_release(monkeypatch, base, jobs, tasks, base / "out", *extra)
        assert code in (0, 3)
        return _partitions_line(capsys.readouterr().out)

    assert release(a) == "job partitions:  3 read, 0 unchanged since the last release"
    first = published_digests(a / "out")
    assert release(a) == "job partitions:  0 read, 3 unchanged since the last release"
    assert published_digests(a / "out") == first
    assert _ingest_runs() == 1  # nothing was ingested the second time
    release(b)  # the same first release, on an instance and a warehouse of its own
    assert published_digests(b / "out") == first

    # in the second job directory, one trial gets a new verifier reward and one is removed
    second = sorted(p for p in jobs.iterdir() if p.is_dir())[1]
    trials = sorted(p for p in second.iterdir() if (p / "result.json").is_file())
    result = json.loads((trials[0] / "result.json").read_text())
    result.setdefault("verifier_result", {})["rewards"] = {"reward": 0.25}
    (trials[0] / "result.json").write_text(json.dumps(result))
    shutil.rmtree(trials[1])
    assert release(a) == "job partitions:  1 read, 2 unchanged since the last release"
    changed = published_digests(a / "out")
    assert changed != first  # the change is in what was published
    assert _ingest_runs() == 2
    # the same bytes as the release that read every job directory again (--reread)
    assert release(b, "--reread") == "job partitions:  3 read, 0 unchanged since the last release"
    assert published_digests(b / "out") == changed

    # a table written by someone else since (here: lost) is made again
    monkeypatch.setenv("BF_WAREHOUSE", str(a / "warehouse"))  # a's warehouse
    folder = local_tables([str(jobs.resolve())])
    assert folder is not None
    key = f"jobs/{second.name}"
    table_file(folder, "skill_audit", key).unlink()
    assert release(a) == "job partitions:  1 read, 2 unchanged since the last release"
    assert published_digests(a / "out") == changed
    # a new instance over the same warehouse has none of those materializations: all read
    shutil.rmtree(a / "home")
    assert release(a) == "job partitions:  3 read, 0 unchanged since the last release"
    assert published_digests(a / "out") == changed


def test_reread_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["release", "--help"])
    assert "--reread" in capsys.readouterr().out


def test_an_edit_during_the_read_is_a_change_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fingerprints a release records (its own and the sensor's) are taken before the
    trials are read: a file that lands while its trial is read makes its job directory a
    change for the sensor and for the next release, never a table silently behind it."""
    from bf_assets.corpus import inventory
    from bf_assets.defs.sensors import ingested_fingerprints
    from bf_assets.ingest.discovery import discover_jobs

    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 230, seed=4)
    jobs, tasks = corpus / "jobs", corpus / "tasks"
    monkeypatch.delenv("BF_INGEST_RUN_TRIALS", raising=False)
    victim = sorted(p for p in jobs.iterdir() if p.is_dir())[0]
    real = inventory.inventory_review

    def reading(ref, options):  # type: ignore[no-untyped-def]
        late = Path(ref.path) / "late.log"
        if Path(ref.path).parent == victim and not late.exists():
            late.write_text("written while the trial was read")
        return real(ref, options)

    monkeypatch.setattr(inventory, "inventory_review", reading)  # the forked workers too
    base = tmp_path / "a"
    assert isolated_release(monkeypatch, base, jobs, tasks, base / "out") in (0, 3)
    monkeypatch.setattr(inventory, "inventory_review", real)
    capsys.readouterr()
    now = {j.key: j.fingerprint for j in discover_jobs([jobs])}
    with dg.DagsterInstance.get() as inst:
        recorded = ingested_fingerprints(inst, sorted(now))
    assert sorted(k for k in now if recorded[k] != now[k]) == [f"jobs/{victim.name}"]
    assert isolated_release(monkeypatch, base, jobs, tasks, base / "out") in (0, 3)
    line = _partitions_line(capsys.readouterr().out)
    assert line == "job partitions:  1 read, 2 unchanged since the last release"
