"""The sensor's walk tick after tick (``discover_jobs_since``): the same job directories and
fingerprints as the whole walk after every kind of change, without reading again what did
not change, and never a change missed because it landed while a tick was reading."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from trialkit import build_trial, healthy_spec

from bf_assets.ingest import discovery, jobmemo
from bf_assets.ingest.discovery import discover_jobs
from bf_assets.ingest.jobmemo import JobMemo, discover_jobs_since
from bf_sample.generator import generate_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    generate_corpus(tmp_path / "corpus", 260, seed=7)  # three job directories
    root = tmp_path / "corpus" / "jobs"
    healthy_spec(rollout_id="mmmm0001").write(root, under="gpt-x/trial-01")  # a model matrix
    return root


def tick(roots: list[Path], memo: JobMemo) -> list[discovery.JobDir]:
    got = discover_jobs_since(roots, memo)
    assert got == discover_jobs(roots)
    return got


def test_every_change_is_seen_and_nothing_else_is_read_again(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = JobMemo()
    first = tick([corpus], memo)
    assert memo.reused == 0 and len(memo.candidates) == len(first)
    tick([corpus], memo)  # the units' digests are taken: from now on they can be reused
    assert memo.walked == len(first) and memo.reused == 0

    classified: list[str] = []
    real_classify = discovery._classify
    monkeypatch.setattr(
        discovery, "_classify", lambda d, *a: classified.append(d) or real_classify(d, *a)
    )
    assert discover_jobs_since([corpus], memo) == first
    assert memo.reused == len(first) and memo.walked == 0
    # only the directories on the way to the job directories are classified again
    assert classified and not any(
        d == j.path or d.startswith(j.path + "/") for d in classified for j in first
    )
    monkeypatch.undo()

    jobs = sorted(p for p in corpus.iterdir() if p.is_dir() and p.name != "gpt-x")
    trial = next(p for p in sorted(jobs[0].iterdir()) if p.is_dir())
    steps = [
        lambda: (trial / "artifacts").mkdir(exist_ok=True),
        lambda: (trial / "artifacts" / "late.txt").write_text("x"),
        lambda: (trial / "trajectory" / "llm_trajectory.jsonl").open("a").write("\n"),
        lambda: shutil.copytree(trial, jobs[0] / "copy__aaaa"),  # a retry rollout
        lambda: shutil.rmtree(jobs[0] / "copy__aaaa"),
        lambda: shutil.copytree(jobs[1], corpus / "2026-08-01__00-00-00"),  # a new job
        lambda: shutil.move(str(trial), str(jobs[1] / trial.name)),  # a trial moves job
        lambda: healthy_spec(rollout_id="nnnn0001").write(jobs[2] / "x__1" / "trial-02"),
        # a trial right under the root: the root is a job directory holding the others
        lambda: healthy_spec(rollout_id="oooo0001").write(corpus, ""),
        lambda: (corpus / "oooo-late.txt").write_text("x"),
        lambda: shutil.rmtree(jobs[2]),  # a job goes
    ]
    for i, step in enumerate(steps):
        step()
        changed = tick([corpus], memo)
        assert tick([corpus], memo) == changed  # and then it stands still again
        assert tick([corpus], memo) == changed and memo.walked == 0, f"step {i}"


def test_a_same_size_rewrite_with_its_mtime_put_back_is_a_change(corpus: Path) -> None:
    memo = JobMemo()
    tick([corpus], memo)
    before = tick([corpus], memo)
    f = next(corpus.rglob("result.json"))
    st = f.stat()
    f.write_bytes(f.read_bytes().replace(b'"', b'"', 1))  # same bytes, a new write
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = tick([corpus], memo)
    assert after != before and memo.walked == 1


def test_a_change_while_a_unit_is_read_is_seen_next_time(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest of a unit is taken before the tick reads it: a file landing after the
    digest and before the read is in this tick's answer or in the next one's, never lost."""
    memo = JobMemo()
    tick([corpus], memo)
    tick([corpus], memo)
    job = sorted(p for p in corpus.iterdir() if p.is_dir() and p.name != "gpt-x")[0]
    trial = next(p for p in sorted(job.iterdir()) if p.is_dir())
    real = jobmemo.linkless_tree
    landed: list[str] = []

    def digest_then_land(path: str) -> str | None:
        d = real(path)
        if path == str(job) and not landed:
            (trial / "verifier" / "late.txt").write_text("landed during the tick")
            landed.append(path)
        return d

    # the unit changes first (so the tick reads it), then again right after its digest
    (trial / "verifier" / "first.txt").write_text("x")
    monkeypatch.setattr(jobmemo, "linkless_tree", digest_then_land)
    discover_jobs_since([corpus], memo)
    monkeypatch.setattr(jobmemo, "linkless_tree", real)
    assert landed
    assert tick([corpus], memo) == discover_jobs([corpus])
    assert memo.walked == 1  # the late file made the unit's digest differ


def test_links_and_several_roots_take_the_whole_walk(corpus: Path, tmp_path: Path) -> None:
    memo = JobMemo()
    tick([corpus], memo)
    tick([corpus], memo)
    job = sorted(p for p in corpus.iterdir() if p.is_dir() and p.name != "gpt-x")[0]
    os.symlink(job, corpus / "0-latest")  # a directory link inside the root
    tick([corpus], memo)
    assert not memo.units and not memo.candidates
    (corpus / "0-latest").unlink()
    tick([corpus], memo)
    tick([corpus], memo)
    # a unit with a file link is walked every time, never remembered
    trial = next(p for p in sorted(job.iterdir()) if p.is_dir())
    (trial / "artifacts").mkdir(exist_ok=True)
    os.symlink(trial / "result.json", trial / "artifacts" / "link.json")
    tick([corpus], memo)
    assert str(job) not in memo.units
    tick([corpus], memo)
    # several roots, the same root twice, a root inside another, two roots of one name
    other = build_trial(tmp_path / "other" / "jobs").root
    for roots in ([corpus, other], [corpus, corpus], [corpus, corpus / "gpt-x"], [other, corpus]):
        tick(roots, memo)
        tick(roots, memo)
        tick(roots, memo)


def test_a_missing_root_is_an_error(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        discover_jobs_since([corpus, tmp_path / "missing"], JobMemo())
