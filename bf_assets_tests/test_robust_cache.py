"""The caches are never stale through directory links: an edit behind a linked skill
directory of ``--tasks`` or a linked ``trajectory/`` of a trial is a miss, and a link cycle
neither hangs a fingerprint nor makes it unstable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from trialkit import LLM_FILE, Trial, healthy_spec

from bf_assets.cli import main as cli
from bf_assets.corpus import cache
from bf_assets.corpus.run import review_trial
from bf_assets.ingest.discovery import trial_fingerprint
from bf_assets.ingest.readers import clear_path_cache
from bf_assets.review.options import ReviewOptions

TASK = "demo-task"


def _skill_md(name: str) -> str:
    return f"---\nname: {name}\ndescription: d\n---\nbody\n"


@pytest.fixture
def linked_tasks(tmp_path: Path) -> tuple[Path, Path]:
    """A task tree whose one skill directory is a link to a library outside it."""
    library = tmp_path / "library" / "writer"
    library.mkdir(parents=True)
    (library / "SKILL.md").write_text(_skill_md("hello-writer"))
    skills = tmp_path / "tasks" / TASK / "environment" / "skills"
    skills.mkdir(parents=True)
    (skills / "writer").symlink_to(library, target_is_directory=True)
    return tmp_path / "tasks", library / "SKILL.md"


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import bf_assets.review.trial as review_mod

    seen: list[int] = []
    real = review_mod.scan_trial

    def counting(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(1)
        return real(*a, **k)

    monkeypatch.setattr(review_mod, "scan_trial", counting)
    return seen


def _edit_keeping_size(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert len(old) == len(new) and old in text
    st = os.stat(path)
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # only ctime tells


def test_editing_a_skill_behind_a_linked_directory_is_a_miss(
    trial: Trial, tmp_path: Path, linked_tasks: tuple[Path, Path], scans: list[int]
) -> None:
    tasks, skill_md = linked_tasks
    opts = ReviewOptions(tasks_dir=str(tasks), cache_dir=str(tmp_path / "c"))
    first = review_trial(trial.ref(), opts)
    clear_path_cache()  # a new batch
    assert review_trial(trial.ref(), opts).to_json() == first.to_json() and scans == [1]
    _edit_keeping_size(skill_md, "hello-writer", "other-writer")
    clear_path_cache()
    again = review_trial(trial.ref(), opts)
    assert scans == [1, 1]
    fresh = review_trial(trial.ref(), ReviewOptions(tasks_dir=str(tasks)))
    assert again.to_json() == fresh.to_json() != first.to_json()


def test_a_cached_cli_review_misses_after_an_edit_behind_a_linked_skill(
    trial: Trial,
    tmp_path: Path,
    linked_tasks: tuple[Path, Path],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    tasks, skill_md = linked_tasks
    argv = ["review", str(trial.root), "--json", "--tasks", str(tasks)]
    cached = [*argv, "--cache-dir", str(tmp_path / "c")]
    cli.main(cached)
    first, _ = capsysbinary.readouterr()
    _edit_keeping_size(skill_md, "hello-writer", "other-writer")
    clear_path_cache()  # what a new CLI process starts with
    cli.main(cached)
    again, _ = capsysbinary.readouterr()
    cli.main(argv)
    fresh, _ = capsysbinary.readouterr()
    assert again == fresh != first


def test_editing_a_file_in_a_linked_trajectory_directory_is_a_miss(
    trial: Trial, tmp_path: Path, scans: list[int]
) -> None:
    # trajectory/ is a link to a directory elsewhere in the run root: its files are read
    # through it (the inventory reports the link itself, which does not matter here)
    shared = trial.root / "shared-trajectories" / trial.path.name
    shared.parent.mkdir()
    (trial.path / "trajectory").rename(shared)
    (trial.path / "trajectory").symlink_to(shared, target_is_directory=True)
    opts = ReviewOptions(cache_dir=str(tmp_path / "c"), audits=False)
    first = review_trial(trial.ref(), opts)
    assert review_trial(trial.ref(), opts).to_json() == first.to_json() and scans == [1]
    llm = shared / "llm_trajectory.jsonl"
    _edit_keeping_size(llm, '"prompt_tokens": 100', '"prompt_tokens": 000')
    again = review_trial(trial.ref(), opts)
    assert scans == [1, 1]
    fresh = review_trial(trial.ref(), ReviewOptions(audits=False))
    assert again.to_json() == fresh.to_json() != first.to_json()


def test_link_cycles_end_and_fingerprints_stay_stable(
    trial: Trial, tmp_path: Path, linked_tasks: tuple[Path, Path], scans: list[int]
) -> None:
    tasks, _ = linked_tasks
    (trial.path / "artifacts" / "loop").symlink_to(trial.path, target_is_directory=True)
    (trial.path / "artifacts" / "up").symlink_to("..", target_is_directory=True)
    skills = tasks / TASK / "environment" / "skills"
    (skills / "writer" / "again").symlink_to(skills, target_is_directory=True)
    (tasks / "self").symlink_to(tasks, target_is_directory=True)
    a = trial_fingerprint(trial.ref())
    assert a is not None and a == trial_fingerprint(trial.ref())
    clear_path_cache()
    t1 = cache.tree_digest(str(tasks))
    clear_path_cache()
    assert t1 == cache.tree_digest(str(tasks)) and not t1.startswith("uncacheable")
    opts = ReviewOptions(tasks_dir=str(tasks), cache_dir=str(tmp_path / "c"))
    first = review_trial(trial.ref(), opts)
    assert review_trial(trial.ref(), opts).to_json() == first.to_json() and scans == [1]


def test_a_link_out_of_the_run_root_counts_by_its_target_not_its_content(
    trial: Trial, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f.txt").write_text("one")
    (trial.path / "artifacts" / "out").symlink_to(outside, target_is_directory=True)
    a = trial_fingerprint(trial.ref())
    (outside / "f.txt").write_text("two")  # never read by the review: no need to miss
    assert trial_fingerprint(trial.ref()) == a
    (trial.path / "artifacts" / "out").unlink()
    (trial.path / "artifacts" / "out").symlink_to(tmp_path, target_is_directory=True)
    assert trial_fingerprint(trial.ref()) != a  # another target


def test_a_bad_name_trial_is_cached_like_any_other(tmp_path: Path, scans: list[int]) -> None:
    root = tmp_path / "runs"
    t = healthy_spec().write(root)
    os.rename(os.fsencode(t.path), os.fsencode(t.path) + b"\xff")
    bad = os.fsdecode(os.fsencode(t.path) + b"\xff")
    with open(os.fsencode(bad) + b"/verifier/x\xfe.log", "wb") as fh:
        fh.write(b"1")
    trial = Trial(root=root, path=Path(bad))
    opts = ReviewOptions(cache_dir=str(tmp_path / "c"), audits=False)
    first = review_trial(trial.ref(), opts)
    again = review_trial(trial.ref(), opts)
    assert scans == [1] and again.to_json() == first.to_json()
    assert json.dumps(first.to_json()).encode("utf-8")
    assert {f.path for f in again.files} >= {"verifier/x\\xfe.log"}
    assert LLM_FILE in {f.path for f in again.files}
