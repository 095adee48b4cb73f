"""``trials_in_jobs``: the trials of some job partitions, walking only the way to them.

An ingest run outside a release (a UI materialization, a backfill, a sensor's run, a range
run on a Celery worker) takes its trials this way.  It must give exactly what the whole walk
gives for those partitions, in the same order, on every layout discovery knows, and read far
fewer directories than the whole walk.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from trialkit import JOB, build_trial, healthy_spec

from bf_assets.ingest import discovery
from bf_assets.ingest.discovery import TrialRef, discover_trials, trials_in_jobs
from bf_sample.generator import generate_corpus


def expected(roots: list[Path], keys: set[str]) -> list[TrialRef]:
    return [t for t in discover_trials(roots) if t.job_key in keys]


def assert_same_for_every_subset(roots: list[Path], seed: int = 0) -> list[str]:
    """Every job key alone, random sets of them, all of them, and keys nothing has: the
    pruned walk gives what the whole walk gives."""
    keys = sorted({t.job_key for t in discover_trials(roots)})
    assert keys, "the corpus has no trials"
    rng = random.Random(seed)
    subsets = [{k} for k in keys]
    subsets += [set(rng.sample(keys, rng.randint(1, len(keys)))) for _ in range(10)]
    subsets += [set(keys), {"no/such/job"}, {keys[0], "no/such/job"}]
    for subset in subsets:
        assert trials_in_jobs(roots, subset) == expected(roots, subset), sorted(subset)
    assert trials_in_jobs(roots, []) == []
    return keys


@pytest.fixture
def mixed_root(tmp_path: Path) -> Path:
    """One run root holding every shape discovery handles."""
    root = tmp_path / "runs" / "jobs"
    build_trial(root, rollout_id="aaaa0001")
    build_trial(root, rollout_id="aaaa0002")
    healthy_spec(rollout_id="bbbb0001").write(root, "2026-06-02__00-00-00")
    # a model matrix (trials under model/trial-NN/<job>/) and worker shards
    healthy_spec(rollout_id="cccc0001").write(root, under="gpt-x/trial-01")
    healthy_spec(rollout_id="cccc0002").write(root, under="gpt-x/trial-02")
    healthy_spec(rollout_id="dddd0001").write(root, under="worker-shards/shard-000/jobs")
    # a trial directly under the root, one nested in another trial's folder
    healthy_spec(rollout_id="eeee0001").write(root, "")
    made = build_trial(tmp_path / "other", rollout_id="ffff0001")
    shutil.move(made.path, root / JOB / "demo-task__aaaa0001" / "trial-01")
    # hidden and .tmp job directories, a name that is not UTF-8
    healthy_spec(rollout_id="gggg0001").write(root, ".old-job")
    healthy_spec(rollout_id="gggg0002").write(root, "copy.tmp")
    raw = os.fsencode(root) + b"/job-\xff"
    os.mkdir(raw)
    healthy_spec(rollout_id="hhhh0001").write(root, os.fsdecode(b"job-\xff"))
    # a trial link leaving the root, a job link leaving it, a link to a job inside it
    outside = build_trial(tmp_path / "elsewhere", rollout_id="iiii0001")
    os.symlink(outside.path, root / JOB / "escaped")
    os.symlink(outside.path.parent, root / "outside-job")
    os.symlink(root / JOB, root / "0-latest")
    # a result.json under a trial's artifacts (never a trial), a near-miss
    (root / JOB / "demo-task__aaaa0002" / "artifacts" / "result.json").write_text("{}")
    (root / "misc").mkdir()
    (root / "misc" / "result.json").write_text('{"score": 3}')
    return root


def test_every_layout_and_subset_of_one_root(mixed_root: Path) -> None:
    keys = assert_same_for_every_subset([mixed_root])
    assert len(keys) >= 8  # the shapes above are separate job partitions
    assert any("\\x" in k for k in keys)  # the non-UTF-8 job name, escaped


def test_a_link_inside_the_root_on_the_way_takes_the_whole_walk(
    mixed_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory link inside the root among a wanted job's trials: only the whole walk
    knows whether its target is reached by a real path first, so the whole walk decides."""
    target = mixed_root / "2026-06-02__00-00-00" / "demo-task__bbbb0001"
    os.symlink(target, mixed_root / JOB / "alias")
    walks: list[int] = []
    real = discovery.discover_trials
    monkeypatch.setattr(discovery, "discover_trials", lambda r: walks.append(1) or real(r))
    key = f"jobs/{JOB}"
    assert trials_in_jobs([mixed_root], {key}) == expected([mixed_root], {key})
    assert walks == [1]
    walks.clear()
    other = "jobs/2026-06-02__00-00-00"  # its way meets no link: pruned
    assert trials_in_jobs([mixed_root], {other}) == expected([mixed_root], {other})
    assert walks == []


def test_several_roots_and_roots_inside_one_another(mixed_root: Path, tmp_path: Path) -> None:
    second = tmp_path / "second" / "jobs"
    healthy_spec(rollout_id="jjjj0001").write(second)
    healthy_spec(rollout_id="jjjj0002").write(second, "2026-06-03__00-00-00")
    assert_same_for_every_subset([mixed_root, second], seed=1)
    # a root inside another, and the same root twice: each trial once, as the whole walk
    assert_same_for_every_subset([mixed_root, mixed_root / JOB], seed=2)
    assert_same_for_every_subset([mixed_root / JOB, mixed_root], seed=3)
    assert_same_for_every_subset([second, second], seed=4)


def test_a_root_that_is_a_trial(tmp_path: Path) -> None:
    t = build_trial(tmp_path / "jobs")
    assert_same_for_every_subset([t.path])


def test_a_missing_root_is_an_error_as_in_the_whole_walk(mixed_root: Path, tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        trials_in_jobs([mixed_root, tmp_path / "missing"], {f"jobs/{JOB}"})


def test_the_shared_fixtures(shared_dir: Path) -> None:
    fixtures = shared_dir / "fixtures"
    roots = sorted(p for p in fixtures.iterdir() if p.is_dir())
    assert_same_for_every_subset(roots)


def test_one_job_of_many_reads_a_few_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate_corpus(tmp_path / "corpus", 600, seed=3)
    root = tmp_path / "corpus" / "jobs"
    keys = sorted({t.job_key for t in discover_trials([root])})
    assert len(keys) >= 6
    listed: list[str] = []
    real_scandir = os.scandir

    def counting(path: str | os.PathLike[str]) -> object:
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", counting)
    discover_trials([root])
    whole = len(listed)
    listed.clear()
    got = trials_in_jobs([root], {keys[2]})
    assert got and {t.job_key for t in got} == {keys[2]}
    # the root, the job directory and each of its trials: nothing of the other jobs
    assert len(listed) == 2 + len(got)
    assert len(listed) * 4 < whole
