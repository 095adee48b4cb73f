"""Discovery: every trial found exactly once with its layout; job-level files never trials."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from trialkit import JOB, Trial, build_trial, healthy_spec

from bf_assets.corpus.run import review_roots, review_trial
from bf_assets.ingest.discovery import TrialRef, discover, discover_jobs
from bf_assets.review.options import ReviewOptions

HARBOR_JOB_DIRS = (
    "benchflow-ai__skillsbench-trajectories/minimax-m2.1+claude-code/no_skills",
    "benchflow-ai__skillsbench-trajectories/yimin/ablation-noskills-haiku/"
    "terminus-2-claudehaiku4520-skills-3d-scan-calc-d50cb0",
)
DOGFOOD = "benchflow-ai__benchflow/docs/examples/user_dogfood_results"
TRIAL_LOG_ONLY = (
    "benchflow-ai__skillsbench-trajectories/yimin/yimin_terminus_ablation/byos/terminus2_haiku/"
    "scheduling-email-assistant/scheduling-email-assistant__4exzDzN"
)


def found(root: Path) -> list[TrialRef]:
    trials = discover([root]).trials
    paths = [t.path for t in trials]
    assert len(paths) == len(set(paths)), "a trial was reported twice"
    return trials


def by_rel(root: Path) -> dict[str, TrialRef]:
    return {t.rel_path: t for t in found(root)}


# --------------------------------------------------------------------------- the fixture sets


def test_benchflow_evals_are_five_flat_trials(fixtures_dir: Path) -> None:
    trials = by_rel(fixtures_dir / "benchflow-evals")
    assert sorted(trials) == [
        "clean-pass",
        "infra-timeout-missing-usage",
        "missing-llm-trajectory",
        "no-skill-leak",
        "reward-hack",
    ]
    assert {t.layout for t in trials.values()} == {"flat"}


def test_benchflow_writer_is_four_production_trials(fixtures_dir: Path) -> None:
    trials = by_rel(fixtures_dir / "benchflow-writer")
    assert sorted(trials) == [f"jobs/{JOB}/demo-task__{x}" for x in ("aaaa1111", "bbbb2222", "cccc3333", "dddd4444")]  # fmt: skip
    assert {t.layout for t in trials.values()} == {"production"}
    assert {t.job for t in trials.values()} == {JOB}


def test_harbor_real_is_41_harbor_trials_and_one_production(fixtures_dir: Path) -> None:
    root = fixtures_dir / "harbor-real"
    trials = by_rel(root)
    assert Counter(t.layout for t in trials.values()) == {"harbor": 41, "production": 1}
    assert trials[DOGFOOD].layout == "production"
    assert trials[TRIAL_LOG_ONLY].layout == "harbor"  # no result.json, no config.json
    for job_dir in HARBOR_JOB_DIRS:
        assert (root / job_dir / "result.json").is_file()
        assert job_dir not in trials  # a Harbor job-level result.json is not a trial
    assert not [r for r in trials if r.startswith("Etelis__")]  # replay files, not trials


def test_harbor_real_trials_match_the_manifest(fixtures_dir: Path) -> None:
    root = fixtures_dir / "harbor-real"
    manifest = (root / "MANIFEST.md").read_text()
    listed = {
        "benchflow-ai__skillsbench-trajectories/" + line.split("`")[1]
        for line in manifest.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    }
    assert len(listed) == 41
    assert {r for r, t in by_rel(root).items() if t.layout == "harbor"} == listed


def test_every_fixture_root_at_once(fixtures_dir: Path) -> None:
    roots = [fixtures_dir / n for n in ("benchflow-evals", "benchflow-writer", "harbor-real")]
    trials = discover(roots).trials
    assert len(trials) == 5 + 4 + 42
    assert len({t.path for t in trials}) == len(trials)


# --------------------------------------------------------------------------- production variants


def test_model_matrix_trial_index(runs_root: Path) -> None:
    t = healthy_spec().write(runs_root, under="gpt-x/trial-01")
    (runs_root / "matrix-summary.json").write_text(json.dumps({"schema_version": 1, "runs": []}))
    [ref] = found(runs_root)
    assert ref.path == str(t.path) and ref.layout == "production"
    assert ref.rel_path == f"gpt-x/trial-01/{JOB}/demo-task__aaaa1111"
    review = t.review()
    assert review.identity.trial_index == 1
    assert review.identity.sources["trial_index"] == "path:trial-NN"


def test_worker_shards(runs_root: Path) -> None:
    shards = runs_root / "worker-shards"
    t = healthy_spec().write(runs_root, under="worker-shards/shard-000/jobs")
    (shards / "plan.json").write_text("{}")
    (shards / "shard-000" / "worker_payload.json").write_text("{}")
    (shards / "shard-000" / "worker_result.json").write_text('{"ok": true}')
    (shards / "shard-000" / "jobs" / JOB / "summary.json").write_text('{"total": 1}')
    (runs_root / "summary.json").write_text('{"shards": []}')
    [ref] = found(runs_root)
    assert ref.path == str(t.path) and ref.job == JOB


def test_incomplete_trial_with_config_only(trial: Trial) -> None:
    for f in trial.path.rglob("*"):
        if f.is_file() and f.name != "config.json":
            f.unlink()
    [ref] = found(trial.root)
    assert (ref.path, ref.layout) == (str(trial.path), "production")
    review = trial.review()
    assert review.outcome == "incomplete"
    assert "GATE_RESULT_MISSING" in {f.check for f in review.findings}
    assert not review.healthy and review.verdict == "rejected"


def test_in_progress_trial_with_trajectories_only(trial: Trial) -> None:
    for rel in ("result.json", "config.json", "results.jsonl"):
        trial.drop(rel)
    [ref] = found(trial.root)
    assert ref.path == str(trial.path)
    assert trial.review().outcome == "incomplete"


def test_tmp_files_are_ignored_and_tmp_dirs_are_reported(trial: Trial) -> None:
    # A trial inside a *.tmp directory is reported (and rejected by the gate), never lost.
    job = trial.root / JOB
    (job / "demo-task__killed0").mkdir()
    (job / "demo-task__killed0" / "result.json.tmp").write_text("{}")
    staged = healthy_spec(rollout_id="tmpdir00").write(job / "staging.tmp")
    trial.write_text("results.jsonl.tmp", "partial")
    assert [t.path for t in found(trial.root)] == [str(trial.path), str(staged.path)]
    assert "results.jsonl.tmp" not in {f.path for f in trial.review().files}
    good, tmp = (review_trial(r, ReviewOptions(audits=False)) for r in found(trial.root))
    assert good.verdict == "publishable"
    assert tmp.verdict == "rejected" and "staging.tmp" in tmp.findings[0].message


def test_job_level_files_are_not_trials(trial: Trial) -> None:
    job = trial.root / JOB
    (job / "summary.json").write_text(json.dumps({"job_name": JOB, "total": 1}))
    (job / "results.jsonl").write_text(trial.file("results.jsonl").read_text())
    (job / "verifiers.jsonl").write_text("{}\n")
    (job / "results.errors.json").write_text('{"schema_version": 1}')
    (trial.root / "summary.json").write_text(json.dumps({"job_name": JOB}))
    assert [t.path for t in found(trial.root)] == [str(trial.path)]


def test_result_json_under_artifacts_is_not_a_trial(trial: Trial) -> None:
    stray = {"task_name": "x", "rollout_name": "x__1", "rewards": {"reward": 1.0}}
    trial.write_text("artifacts/out/result.json", json.dumps(stray))
    trial.write_text("verifier/result.json", json.dumps(stray))
    assert [t.path for t in found(trial.root)] == [str(trial.path)]


def test_directory_link_inside_the_root_is_followed_once(trial: Trial) -> None:
    os.symlink(trial.root / JOB, trial.root / "latest")
    [ref] = found(trial.root)
    assert ref.path == str(trial.path) and ref.job == JOB


def test_directory_link_inside_the_root_does_not_rename_the_job(trial: Trial) -> None:
    os.symlink(trial.root / JOB, trial.root / "0-latest")
    [ref] = found(trial.root)
    assert ref.path == str(trial.path) and ref.job == JOB


def test_directory_link_leaving_the_root_is_reported_unreadable(
    trial: Trial, tmp_path: Path
) -> None:
    outside = build_trial(tmp_path / "elsewhere", rollout_id="ffff0000")
    link = trial.root / JOB / outside.path.name
    os.symlink(outside.path, link)
    refs = {Path(t.path).name: t for t in found(trial.root)}
    assert refs[outside.path.name].link_escape and refs[outside.path.name].path == str(link)
    report = review_roots([trial.root], ReviewOptions(audits=False))
    escaped = next(t for t in report.trials if t.ref.link_escape)
    assert [f.check for f in escaped.findings] == ["GATE_UNREADABLE"]
    assert (escaped.verdict, escaped.healthy) == ("rejected", False)


def test_job_directory_link_leaving_the_root_is_reported_unreadable(
    trial: Trial, tmp_path: Path
) -> None:
    """A link leaving the root may hold trials (here a whole job directory): it is reported
    as a trial that is not read, never dropped as a near-miss the JSON and the release
    would not show."""
    outside = build_trial(tmp_path / "elsewhere", rollout_id="ffff0000")
    os.symlink(outside.path.parent, trial.root / "other-job")
    refs = {t.path: t for t in found(trial.root)}
    assert set(refs) == {str(trial.path), str(trial.root / "other-job")}
    assert refs[str(trial.root / "other-job")].link_escape
    report = review_roots([trial.root], ReviewOptions(audits=False))
    linked = next(t for t in report.trials if t.ref.link_escape)
    assert [f.check for f in linked.findings] == ["GATE_UNREADABLE"]
    assert "leaves the run root" in linked.findings[0].message
    assert linked.verdict == "rejected"


def test_unparsable_result_is_still_a_trial(trial: Trial) -> None:
    trial.drop("config.json")
    trial.write_text("result.json", "{not json")
    [ref] = found(trial.root)
    assert ref.layout == "unknown"
    assert "GATE_RESULT_INVALID" in trial.checks()


def test_unrecognised_result_is_a_near_miss(runs_root: Path) -> None:
    d = runs_root / "misc"
    d.mkdir()
    (d / "result.json").write_text('{"score": 3}')
    disc = discover([runs_root])
    assert disc.trials == [] and str(d) in dict(disc.skipped)


def test_root_that_is_a_trial(trial: Trial) -> None:
    [ref] = discover([trial.path]).trials
    assert ref.rel_path == "." and ref.path == str(trial.path)


def test_same_root_twice_reports_each_trial_once(trial: Trial) -> None:
    assert len(discover([trial.root, trial.root, trial.root / JOB]).trials) == 1


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        discover([tmp_path / "missing"])


def test_jobs_group_trials_and_fingerprint_changes(trial: Trial) -> None:
    healthy_spec(rollout_id="bbbb0000").write(trial.root)
    [job] = discover_jobs([trial.root])
    assert (job.n_trials, Path(job.path).name) == (2, JOB)
    trial.write_text("timing.json", '{"total": 1.0, "verifier": 0.5}')
    [again] = discover_jobs([trial.root])
    assert again.key == job.key and again.fingerprint != job.fingerprint


def test_an_agent_log_arriving_late_changes_the_job_fingerprint(trial: Trial) -> None:
    """Harbor's agents log under ``agent/`` (``agent/command-0/stdout.txt``,
    ``agent/trajectory.json``), which the review reads: a log that lands or grows after the
    job was first seen must make the sensor ingest the job again."""
    [first] = discover_jobs([trial.root])
    trial.write_text("agent/command-0/stdout.txt", '{"type": "system"}\n')
    [logged] = discover_jobs([trial.root])
    assert logged.fingerprint != first.fingerprint
    trial.write_text("agent/command-0/stdout.txt", '{"type": "system"}\n{"type": "result"}\n')
    [grown] = discover_jobs([trial.root])
    assert grown.fingerprint != logged.fingerprint
    trial.write_text("agent/trajectory.json", "{}")
    [again] = discover_jobs([trial.root])
    assert again.fingerprint != grown.fingerprint
    assert discover_jobs([trial.root])[0].fingerprint == again.fingerprint  # stable


def test_a_file_anywhere_in_the_trial_changes_the_job_fingerprint(trial: Trial) -> None:
    """The sensor's fingerprint covers the whole trial tree the review reads: a file landing
    in ``artifacts/`` or ``sessions/``, deep in an agent's folders, or a file rewritten with
    its size and mtime put back, is a change; a file of a nested trial is not (that trial
    is fingerprinted on its own)."""
    seen = {discover_jobs([trial.root])[0].fingerprint}

    def changed() -> None:
        [job] = discover_jobs([trial.root])
        assert job.fingerprint not in seen
        seen.add(job.fingerprint)

    trial.write_text("artifacts/output.csv", "a,b\n")
    changed()
    trial.write_text("sessions/s1/events.jsonl", "{}\n")
    changed()
    trial.write_text("agent/episode-0/turn-1/response.json", "{}")
    changed()
    target = trial.path / "artifacts/output.csv"
    st = target.stat()
    target.write_text("x,y\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    changed()
    # unchanged files: the same fingerprint every time
    assert discover_jobs([trial.root])[0].fingerprint in seen


def test_a_trial_too_big_to_digest_falls_back_to_its_inventory(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_TREE_ENTRIES`` entries the trial has no fingerprint (never a cache or
    ingest-state hit); the sensor then compares the trial by its inventory files, which is
    stable while nothing changes and still moves when the result does."""
    from bf_assets.ingest import treeprint
    from bf_assets.ingest.discovery import discover_trials, group_jobs, trial_fingerprint

    (ref,) = discover_trials([trial.root])
    fingerprinted = group_jobs([ref])
    assert trial_fingerprint(ref) is not None
    monkeypatch.setattr(treeprint, "MAX_TREE_ENTRIES", 3)
    assert trial_fingerprint(ref) is None
    first = group_jobs([ref])
    assert first == group_jobs([ref]) == group_jobs([ref], {ref.path: None}) != fingerprinted
    trial.write_text("result.json", '{"reward": 0.5}')
    assert group_jobs([ref]) != first


def test_a_nested_trial_is_not_part_of_its_parents_tree(trial: Trial, tmp_path: Path) -> None:
    """A folder of a trial that holds trial markers (a model-matrix ``trial-01/``) is a
    trial of its own: its files change its own digest, not the parent's."""
    import shutil

    from bf_assets.ingest.discovery import discover_trials, trial_fingerprint

    made = build_trial(tmp_path / "other", rollout_id="cccc0000")
    shutil.move(made.path, trial.path / "trial-01")  # a trial inside the trial
    refs = {r.rel_path: r for r in discover_trials([trial.root])}
    assert len(refs) == 2
    outer, inner = sorted(refs.values(), key=lambda r: len(r.rel_path))
    before = trial_fingerprint(outer), trial_fingerprint(inner)
    Path(inner.path, "timing.json").write_text('{"total": 2.0}')
    assert trial_fingerprint(outer) == before[0]
    assert trial_fingerprint(inner) != before[1]


def test_job_fingerprints_from_fingerprints_already_taken(runs_root: Path) -> None:
    from bf_assets.ingest.discovery import discover_trials, group_jobs, trial_fingerprint

    build_trial(runs_root, rollout_id="aaaa0001")
    build_trial(runs_root, rollout_id="bbbb0002")
    trials = discover_trials([runs_root])
    taken = {t.path: trial_fingerprint(t) for t in trials}
    assert group_jobs(trials, taken) == group_jobs(trials) == discover_jobs([runs_root])
    # a fingerprint given is the one used (it is not taken again)
    stale = {**taken, trials[0].path: "0" * 64}
    (job,) = group_jobs(trials, stale)
    assert job.fingerprint != discover_jobs([runs_root])[0].fingerprint
    # a trial missing from the map is fingerprinted now
    assert group_jobs(trials, {trials[0].path: taken[trials[0].path]}) == group_jobs(trials)


# --------------------------------------------------------------------------- nothing silent


def _unread_review(root: Path, name: str) -> tuple[str, list[str], str]:
    """``(verdict, check ids, first message)`` of the reviewed trial whose directory is
    ``name``; the review runs in this process (so a patched ``os.scandir`` holds)."""
    report = review_roots([root], ReviewOptions(audits=False, workers=1))
    [t] = [t for t in report.trials if Path(t.ref.path).name == name]
    return t.verdict, [f.check for f in t.findings], t.findings[0].message


def test_a_dangling_link_is_a_trial_that_cannot_be_read(trial: Trial, tmp_path: Path) -> None:
    """A trial directory that was moved or deleted behind a link is reported (and rejected
    with the reason), never skipped as if it were not there."""
    os.symlink(tmp_path / "moved-away", trial.root / JOB / "demo-task__gone0000")
    refs = {Path(t.path).name: t for t in found(trial.root)}
    assert set(refs) == {trial.path.name, "demo-task__gone0000"}
    verdict, checks, message = _unread_review(trial.root, "demo-task__gone0000")
    assert (verdict, checks) == ("rejected", ["GATE_UNREADABLE"])
    assert "link whose target does not exist" in message


def test_a_link_loop_is_a_trial_that_cannot_be_read(trial: Trial) -> None:
    loop = trial.root / JOB / "demo-task__loop0000"
    os.symlink(loop, loop)
    assert str(loop) in {t.path for t in found(trial.root)}
    verdict, checks, _ = _unread_review(trial.root, loop.name)
    assert (verdict, checks) == ("rejected", ["GATE_UNREADABLE"])


def test_a_link_to_a_file_stays_a_file(trial: Trial) -> None:
    os.symlink(trial.file("result.json"), trial.root / JOB / "latest.json")
    assert [t.path for t in found(trial.root)] == [str(trial.path)]


def _refuse_listing(monkeypatch: pytest.MonkeyPatch, *blocked: Path) -> None:
    """``os.scandir`` (and ``os.listdir``) of ``blocked`` fail as a mode-000 folder does for
    a user who is not root (root would list it whatever its mode)."""
    import errno

    real_scandir, real_listdir = os.scandir, os.listdir
    names = {str(b) for b in blocked}

    def deny(path: object) -> None:
        if os.fspath(path) in names:  # type: ignore[arg-type]
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))  # type: ignore[arg-type]

    def scandir(path: object = ".") -> object:
        deny(path)
        return real_scandir(path)  # type: ignore[arg-type]

    def listdir(path: object = ".") -> object:
        deny(path)
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)


def test_a_directory_that_cannot_be_listed_is_a_trial_with_the_reason(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = build_trial(trial.root, rollout_id="bbbb0000")
    _refuse_listing(monkeypatch, other.path)
    refs = {t.path: t for t in found(trial.root)}
    assert set(refs) == {str(trial.path), str(other.path)}
    verdict, checks, message = _unread_review(trial.root, other.path.name)
    assert (verdict, checks) == ("rejected", ["GATE_UNREADABLE"])
    assert "cannot be listed (Permission denied)" in message


def test_a_job_directory_that_cannot_be_listed_is_reported(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It may hold any number of trials: it is reported (as one trial that cannot be read)
    so the review says that something was not reviewed."""
    build_trial(trial.root / "second-job", rollout_id="bbbb0000")
    _refuse_listing(monkeypatch, trial.root / "second-job")
    assert {t.path for t in found(trial.root)} == {str(trial.path), str(trial.root / "second-job")}
    verdict, checks, message = _unread_review(trial.root, "second-job")
    assert (verdict, checks) == ("rejected", ["GATE_UNREADABLE"])
    assert "cannot be listed" in message


def test_a_folder_of_a_trial_that_cannot_be_listed_is_that_trials_finding(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    trial.write_text("workspace/notes/a.txt", "x")
    _refuse_listing(monkeypatch, trial.path / "workspace")
    assert [t.path for t in found(trial.root)] == [str(trial.path)]  # not a trial of its own
    review = review_trial(found(trial.root)[0], ReviewOptions(audits=False))
    [f] = [f for f in review.findings if f.check == "GATE_UNREADABLE"]
    assert f.file == "workspace" and "cannot be listed" in f.message
    assert review.verdict == "rejected"


def test_a_run_root_that_cannot_be_listed_raises(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_listing(monkeypatch, trial.root)
    with pytest.raises(PermissionError):
        discover([trial.root])


def test_a_link_leaving_the_root_inside_a_trial_is_its_file(trial: Trial, tmp_path: Path) -> None:
    """Inside a trial, a folder link leaving the root is one of the trial's files (its scan
    reports it); it is a trial of its own only when it holds trial markers."""
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", trial.path / "workspace")
    assert [t.path for t in found(trial.root)] == [str(trial.path)]
    review = review_trial(found(trial.root)[0], ReviewOptions(audits=False))
    assert any(f.check == "GATE_UNREADABLE" and f.file == "workspace" for f in review.findings), (
        review.findings
    )


def test_a_trial_whose_result_cannot_be_read_is_still_a_trial(runs_root: Path) -> None:
    """A ``result.json`` that cannot be opened as a file (a FIFO here: what root cannot
    be refused) keeps its directory a trial, rejected with the reason."""
    t = build_trial(runs_root)
    t.drop("config.json")
    t.drop("result.json")
    os.mkfifo(t.file("result.json"))
    [ref] = found(runs_root)
    assert ref.path == str(t.path)
    review = review_trial(ref, ReviewOptions(audits=False))
    assert review.verdict == "rejected"
    assert any(f.check == "GATE_UNREADABLE" and f.file == "result.json" for f in review.findings)
