"""The ingest state: a job partition is left as the last release made it only while its trials
and its five tables are exactly as they were; anything else (an edited, added or removed trial,
a table written or deleted since, other review code or options, an unreadable state) reads it
again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from bf_assets.corpus import ingest_state
from bf_assets.corpus.ingest_state import (
    INGEST_TABLES,
    STATE_FILE,
    IngestState,
    ingest_context,
    job_contents,
    job_prints,
    plan_ingest,
    table_file,
)
from bf_assets.ingest.discovery import discover_trials, trial_fingerprint
from bf_assets.ingest.treeprint import in_context
from bf_sample.generator import generate_corpus


def _write_tables(folder: Path, key: str, text: str = "table") -> None:
    for t in INGEST_TABLES:
        p = table_file(folder, t, key)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"{t} {text}")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ingest-state") / "corpus"
    generate_corpus(root, 230, seed=5)  # three job directories: 100, 100 and 30 trials
    return root / "jobs"


def _copy(corpus: Path, dest: Path) -> Path:
    shutil.copytree(corpus, dest, symlinks=True)
    return dest


def _recorded(folder: Path, jobs: Path) -> set[str]:
    """Ingest every partition of ``jobs`` as a release would (tables written, state
    recorded); the partitions."""
    plan = plan_ingest(folder, discover_trials([jobs]), "ctx")
    keys = sorted(plan.contents)
    for k in keys:
        _write_tables(folder, k)
    plan.done(keys, ok=True)
    return set(keys)


def test_the_table_file_is_the_io_managers_layout() -> None:
    from bf_assets.defs.io_managers import partition_relpath

    assert table_file("/w", "raw_trials", "jobs/2026-01-01__00-00-00") == Path(
        "/w/raw_trials/jobs/2026-01-01__00-00-00.parquet"
    )
    assert partition_relpath("../x") == ("%2E%2E", "x")
    assert table_file("/w", "findings", "../x") == Path("/w/findings/%2E%2E/x.parquet")


def test_an_unchanged_corpus_is_not_read_again(tmp_path: Path, corpus: Path) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    keys = _recorded(folder, jobs)
    assert len(keys) == 3
    again = plan_ingest(folder, discover_trials([jobs]), "ctx")
    assert again.unchanged == keys and again.to_read(sorted(keys)) == []
    # --reread: everything is read, and the state is still brought up to date
    assert plan_ingest(folder, discover_trials([jobs]), "ctx", reread=True).unchanged == set()
    # other review options or task tree (another context): nothing applies
    assert plan_ingest(folder, discover_trials([jobs]), "other").unchanged == set()
    # no local warehouse: no state, nothing fingerprinted
    none = plan_ingest(None, discover_trials([jobs]), "ctx")
    assert none.unchanged == set() and set(none.contents.values()) == {None}


def test_a_changed_trial_reads_its_partition_again(tmp_path: Path, corpus: Path) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    keys = sorted(_recorded(folder, jobs))
    trials = discover_trials([jobs])
    by_job = {k: [t for t in trials if t.job_key == k] for k in keys}
    # an edit that keeps the size and puts the mtime back is still a change (ctime moves)
    edited = Path(by_job[keys[0]][0].path) / "result.json"
    st = edited.stat()
    data = edited.read_bytes()
    edited.write_bytes(data[:-1] + (b" " if data[-1:] != b" " else b"\n"))
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns))
    # a file added deep in a trial (its review reads what the whole tree holds)
    deep = Path(by_job[keys[1]][0].path) / "agent" / "sessions" / "x" / "log.txt"
    deep.parent.mkdir(parents=True, exist_ok=True)
    deep.write_text("late log")
    plan = plan_ingest(folder, discover_trials([jobs]), "ctx")
    assert plan.unchanged == {keys[2]}
    assert plan.to_read(keys) == keys[:2]
    # a removed trial changes its partition too
    shutil.rmtree(by_job[keys[2]][0].path)
    assert plan_ingest(folder, discover_trials([jobs]), "ctx").unchanged == set()


def test_a_table_written_or_lost_since_reads_its_partition_again(
    tmp_path: Path, corpus: Path
) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    keys = sorted(_recorded(folder, jobs))
    # a materialization from the UI rewrote one table of the first partition
    table_file(folder, "findings", keys[0]).write_text("findings table")
    # and a table of the second partition is gone
    table_file(folder, "trial_audits", keys[1]).unlink()
    plan = plan_ingest(folder, discover_trials([jobs]), "ctx")
    assert plan.unchanged == {keys[2]}
    # a run that fails forgets its partitions; a run with a table missing records nothing
    plan.done([keys[2]], ok=False)
    plan.done([keys[1]], ok=True)
    assert plan_ingest(folder, discover_trials([jobs]), "ctx").unchanged == set()


def test_a_partition_the_instance_never_materialized_is_read(tmp_path: Path, corpus: Path) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    keys = sorted(_recorded(folder, jobs))
    plan = plan_ingest(folder, discover_trials([jobs]), "ctx")
    plan.keep_only_materialized([set(keys), set(keys[1:])])
    assert plan.to_read(keys) == keys[:1]


@pytest.mark.parametrize(
    "text",
    [
        b"{not json",
        b"[]",
        orjson.dumps({"format": 99, "partitions": {}}),
        orjson.dumps({"format": 1, "context": "x", "partitions": {"k": {"content": 1}}}),
    ],
)
def test_an_unusable_state_reuses_nothing(tmp_path: Path, corpus: Path, text: bytes) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    _recorded(folder, jobs)
    (folder / STATE_FILE).write_bytes(text)
    plan = plan_ingest(folder, discover_trials([jobs]), "ctx")
    assert plan.unchanged == set()
    # the next successful run writes a usable state again
    keys = sorted(plan.contents)
    plan.done(keys, ok=True)
    assert plan_ingest(folder, discover_trials([jobs]), "ctx").unchanged == set(keys)


def test_a_tampered_entry_is_not_trusted(tmp_path: Path, corpus: Path) -> None:
    jobs = _copy(corpus, tmp_path / "jobs")
    folder = tmp_path / "wh"
    keys = sorted(_recorded(folder, jobs))
    doc = orjson.loads((folder / STATE_FILE).read_bytes())
    doc["partitions"][keys[0]]["tables"] = doc["partitions"][keys[0]]["tables"][:4]
    doc["partitions"][keys[1]]["content"] = "0" * 64
    (folder / STATE_FILE).write_bytes(orjson.dumps(doc))
    assert plan_ingest(folder, discover_trials([jobs]), "ctx").unchanged == {keys[2]}


def test_contents_and_fingerprints(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trials = discover_trials([corpus])
    ctx = ingest_context("ctx")
    fps = [fp and in_context(ctx, fp) for fp in map(trial_fingerprint, trials)]
    contents = job_contents(trials, fps)
    assert len(set(contents.values())) == 3 and None not in contents.values()
    expected = sorted(contents.items())
    assert sorted(job_prints(trials, ctx)) == expected
    monkeypatch.setattr(ingest_state, "PARALLEL_MIN", 0)  # the worker pool: the same answers
    monkeypatch.setattr(ingest_state, "FINGERPRINT_CHUNK", 7)
    assert sorted(job_prints(trials, ctx)) == expected
    assert sorted(job_prints(trials, None)) == [(k, None) for k, _ in expected]
    # the order the walk found the trials in does not matter; a missing fingerprint does
    assert job_contents(trials[::-1], fps[::-1]) == contents
    lost = list(fps)
    lost[0] = None
    assert job_contents(trials, lost)[trials[0].job_key] is None


def test_the_state_file_is_replaced_whole(tmp_path: Path) -> None:
    folder = tmp_path / "wh"
    _write_tables(folder, "jobs/a")
    state = IngestState(folder, "c")
    state.record(["jobs/a"], {"jobs/a": "digest"})
    assert state.save(keep={"jobs/a"})
    assert [p.name for p in folder.iterdir() if p.is_file()] == [STATE_FILE]
    assert IngestState(folder, "c").unchanged("jobs/a", "digest")
    assert not IngestState(folder, "c").unchanged("jobs/a", "other")
    # a partition no longer under the run roots is dropped from the state
    state.save(keep=set())
    assert len(IngestState(folder, "c")) == 0
