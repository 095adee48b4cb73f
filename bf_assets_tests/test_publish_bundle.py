"""Release bundles: deterministic shards, card, manifest, verification, the local folder."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
import yaml
from test_curate_rows import HOST, SECRET, leaky_trial
from trialkit import Trial, build_trial, healthy_spec, oracle_spec

from bf_assets.publish.bundle import BundleOptions, bundle_reviews
from bf_assets.publish.excluded import EXCLUDED_PATH
from bf_assets.publish.local import LocalFolderTarget
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH
from bf_assets.publish.targets import PublishError
from bf_assets.publish.verify import VERDICT_CHECK, verify_bundle, verify_reviews
from bf_assets.review.record import TrialReview

LEAKS = (SECRET, "sk-ant-", "/home/alice", "/Users/bob", "file://", "reasoning_content")


def cands(*trials: Trial) -> list[TrialReview]:
    return [t.review() for t in trials]


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def published_text(root: Path) -> str:
    """Every byte of every file, plus the decoded cells of every Parquet shard."""
    parts = []
    for rel, data in files_of(root).items():
        parts.append(data.decode("utf-8", "replace"))
        if rel.endswith(".parquet"):
            parts.append(orjson.dumps(pq.read_table(root / rel).to_pylist()).decode())
    return "\n".join(parts)


@pytest.fixture
def two_trials(runs_root: Path) -> list[Trial]:
    return [build_trial(runs_root), oracle_spec().write(runs_root)]


def test_bundle_layout_card_and_manifest(tmp_path: Path, two_trials: list[Trial]) -> None:
    b = bundle_reviews(cands(*two_trials), tmp_path / "staging")
    got = set(files_of(b.path))
    assert got == {
        "README.md",
        "LICENSE",  # license: other links a file the release ships
        MANIFEST_PATH,
        CHECKSUMS_PATH,
        "data/rollouts/train-00000-of-00001.parquet",
        "data/prime_sft/train-00000-of-00001.parquet",
        "data/trl_sft/train-00000-of-00001.parquet",
        "data/tasks/train-00000-of-00001.parquet",  # one row per task (verifiers)
        "report/review.md",  # the review that decided this release ships with it
        "report/review.json",
        EXCLUDED_PATH,  # every excluded trial with its reason, one per line
    }
    assert b.rows == {"rollouts": 1, "prime_sft": 1, "trl_sft": 2, "tasks": 1}
    # the oracle lane is listed as excluded but is a probe, not held-out model data
    assert {e.reason for e in b.excluded} == {"oracle"}
    assert b.verdict == "publishable"
    # the tag is in the card, so it comes from the digest of the release drafted without it
    # and the release's own time (its newest trial), so tags sort by date
    assert b.path.name == b.digest[:16]
    assert re.fullmatch(r"release-\d{8}-\d{6}-[0-9a-f]{12}", b.tag), b.tag
    card = (b.path / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["configs"][0] == {
        "config_name": "rollouts",
        "default": True,
        "data_files": [{"split": "train", "path": ["data/rollouts/train-00000-of-00001.parquet"]}],
    }
    assert "tags" in meta and meta["license"] == "other" and meta["license_link"] == "LICENSE"
    assert "revision=TAG" in card and f'TAG = "{b.tag}"' in card
    assert "demo-task__dddd4444" in card and "oracle" in card
    for section in (
        "## Dataset structure",
        "## Excluded trials (1)",
        "## Residual risk",
        "## Provenance",
    ):
        assert section in card
    manifest = json.loads((b.path / MANIFEST_PATH).read_text())
    assert manifest["release_verdict"] == b.verdict and manifest["release_tag"] == b.tag
    # one task: too few to hold one out, so one split, and the manifest says why
    assert manifest["configs"]["rollouts"] == {"train": 1}
    assert manifest["splits"]["names"] == ["train"] and "too few" in manifest["splits"]["note"]
    assert manifest["excluded_trials"] == {"path": EXCLUDED_PATH, "trials": 1}
    assert manifest["exclusions_by_reason"] == {"oracle": 1}
    lines = (b.path / EXCLUDED_PATH).read_bytes().splitlines()
    assert [orjson.loads(x)["reason"] for x in lines] == ["oracle"]
    assert manifest["source_trials"][0]["rollout"] == "demo-task__aaaa1111"
    for f in manifest["files"]:
        from bf_assets.publish.shards import sha256_file

        assert sha256_file(b.path / f["path"]) == f["sha256"]
    sums = (b.path / CHECKSUMS_PATH).read_text()
    assert f"  {MANIFEST_PATH}\n" in sums
    report = verify_reviews(b.path, cands(*two_trials))
    assert report.ok, report.summary()


def test_shards_have_a_page_index_and_content_defined_chunks(
    tmp_path: Path, two_trials: list[Trial]
) -> None:
    from bf_assets.publish.shards import WRITER_OPTIONS, supports_content_defined_chunking

    b = bundle_reviews(cands(*two_trials), tmp_path / "staging")
    for rel in files_of(b.path):
        if rel.endswith(".parquet"):
            meta = pq.ParquetFile(b.path / rel).metadata
            for g in range(meta.num_row_groups):
                for c in range(meta.num_columns):
                    col = meta.row_group(g).column(c)
                    assert col.has_offset_index and col.has_column_index, (rel, g, c)
    assert WRITER_OPTIONS["write_page_index"] is True
    if supports_content_defined_chunking():
        assert WRITER_OPTIONS["use_content_defined_chunking"] is True


def test_release_tags_sort_by_the_release_time(tmp_path: Path, two_trials: list[Trial]) -> None:
    from bf_assets.publish.bundle import release_tag, release_time

    assert release_time(["2026-06-01T10:00:00Z", "2026-06-01T23:30:00+02:00", None]) == (
        "20260601-213000"
    )
    assert release_time(["not a time"]) == "00000000-000000"
    assert release_time([], "2031-02-03T04:05:06") == "20310203-040506"
    older = release_tag("release-", "20260601-235959", "f" * 64)
    newer = release_tag("release-", "20260602-000000", "0" * 64)
    assert sorted([newer, older]) == [older, newer]
    # a bundle's tag carries its newest trial's time, or the time it is given
    b = bundle_reviews(cands(*two_trials), tmp_path / "a")
    later = bundle_reviews(
        cands(*two_trials), tmp_path / "b", BundleOptions(released_at="2031-01-01T00:00:00Z")
    )
    assert later.tag.startswith("release-20310101-000000-")
    assert sorted([later.tag, b.tag]) == [b.tag, later.tag]
    assert not b.tag.startswith("release-00000000")  # the trials' own time
    manifest = json.loads((b.path / MANIFEST_PATH).read_text())
    started = max(s["started_at"] for s in manifest["source_trials"])
    assert b.tag[len("release-") :][:8] >= started[:10].replace("-", "")


def test_identical_input_gives_byte_identical_files(
    tmp_path: Path, two_trials: list[Trial]
) -> None:
    first = bundle_reviews(cands(*two_trials), tmp_path / "a")
    second = bundle_reviews(list(reversed(cands(*two_trials))), tmp_path / "b")
    assert first.digest == second.digest
    assert files_of(first.path) == files_of(second.path)
    again = bundle_reviews(cands(*two_trials), tmp_path / "a")
    assert again.path == first.path and files_of(again.path) == files_of(second.path)


def test_shards_roll_over_and_keep_row_order(tmp_path: Path, runs_root: Path) -> None:

    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(5)]
    opts = BundleOptions(
        configs=("rollouts",), row_group_rows=2, max_shard_bytes=1, test_fraction=0
    )
    b = bundle_reviews(cands(*trials), tmp_path / "s", opts)
    shards = sorted(p for p in files_of(b.path) if p.startswith("data/"))
    # a shard closes after the row group that crosses its size bound: 2 + 2 + 1 rows
    assert shards == [f"data/rollouts/train-{i:05d}-of-00003.parquet" for i in range(3)]
    ids = [i for s in shards for i in pq.read_table(b.path / s)["rollout_id"].to_pylist()]
    assert len(ids) == 5 and ids == sorted(ids)
    assert [pq.ParquetFile(b.path / s).metadata.num_row_groups for s in shards] == [1, 1, 1]
    assert verify_bundle(b.path).ok


def test_row_groups_are_sized_by_bytes(tmp_path: Path, runs_root: Path) -> None:
    """A row group closes when its rows reach ``row_group_bytes`` (serialized), however
    few they are; the row count is only a cap for tiny rows."""
    from bf_assets.curate.rows import build_row
    from bf_assets.publish.shards import ROW_GROUP_ROWS, ShardWriter

    assert ROW_GROUP_ROWS >= 10_000  # not what sizes row groups of real rows
    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(5)]
    rows = sorted((build_row(t.path, t.review()) for t in trials), key=lambda r: r["rollout_id"])
    size = len(orjson.dumps(rows[0]))
    counts = []
    for run in ("a", "b"):
        w = ShardWriter(tmp_path / run, "rollouts", row_group_bytes=2 * size)
        for r in rows:
            w.write(r)
        (shard,) = w.close()
        meta = pq.ParquetFile(tmp_path / run / shard.path).metadata
        counts.append([meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
    assert counts[0] == counts[1] and sum(counts[0]) == 5 and max(counts[0]) <= 3
    assert len(counts[0]) >= 2
    a, b = (tmp_path / run / "data/rollouts/train-00000-of-00001.parquet" for run in "ab")
    assert a.read_bytes() == b.read_bytes()  # deterministic, chunking and page index included


@pytest.mark.parametrize("max_shard_bytes", [1, 1 << 30])
def test_two_splits_of_a_config_write_their_shards_side_by_side(
    tmp_path: Path, runs_root: Path, max_shard_bytes: int
) -> None:
    """Rows of the training and the held-out split arrive interleaved, and each split's
    writer holds a part file open from its first full row group: the two must never share
    a temporary file (a release with 64 rows in each split of a config once failed, after
    the second writer had truncated the first one's part)."""
    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(8)]
    opts = BundleOptions(
        configs=("rollouts", "prime_sft"),
        row_group_rows=2,
        max_shard_bytes=max_shard_bytes,
        test_fraction=0.5,
    )
    b = bundle_reviews(cands(*trials), tmp_path / "s", opts)
    manifest = json.loads((b.path / MANIFEST_PATH).read_text())
    tasks_of = manifest["splits"]["tasks"]
    assert sorted(tasks_of) == ["test", "train"] and all(len(t) >= 2 for t in tasks_of.values())
    files = files_of(b.path)
    assert not [f for f in files if "/." in f]  # no part file left behind
    for config in ("rollouts", "prime_sft"):
        for split, tasks in tasks_of.items():
            shards = sorted(f for f in files if f.startswith(f"data/{config}/{split}-"))
            assert shards, (config, split)
            rows = [r for s in shards for r in pq.read_table(b.path / s).to_pylist()]
            seen = sorted(r["task_id"] if "task_id" in r else r["info"]["task_id"] for r in rows)
            assert seen == sorted(tasks), (config, split)
    assert verify_bundle(b.path).ok


def test_datasets_reads_every_config(tmp_path: Path, two_trials: list[Trial]) -> None:
    datasets = pytest.importorskip("datasets")
    b = bundle_reviews(cands(*two_trials), tmp_path / "staging")
    out = tmp_path / "published"
    LocalFolderTarget(out).publish(b.path, b.tag)
    cache = str(tmp_path / "hf-cache")
    loaded = {
        c: datasets.load_dataset(str(out), c, split="train", cache_dir=cache)
        for c in ("rollouts", "prime_sft", "trl_sft", "tasks")
    }
    assert {c: d.num_rows for c, d in loaded.items()} == b.rows
    rollouts, trl, tasks = loaded["rollouts"], loaded["trl_sft"], loaded["tasks"]
    row = rollouts[0]
    assert row["task_id"] == "demo-task" and row["messages"][-1]["content"] == "Done."
    # the initial prompt (system + instruction), and messages == prompt + completion
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["messages"] == row["prompt"] + row["completion"]
    assert row["is_completed"] is True and row["is_truncated"] is False and row["error"] is None
    assert json.loads(row["tool_defs"])[0]["name"] == "terminal"  # the flat verifiers form
    assert trl.num_rows == 2 and len(trl[0]["completion"]) == 1
    # trl_sft: arguments and tools are objects (Arrow JSON), as TRL chat templates take them
    call = trl[0]["completion"][0]["tool_calls"][0]["function"]
    assert call["arguments"] == {"command": "echo hi > hello.txt"}
    assert trl[0]["tools"][0]["function"]["name"] == "terminal"
    # prime_sft: JSON strings, as Prime-RL reads them, from the bare shard too
    shard = str(out / "data" / "prime_sft" / "train-00000-of-00001.parquet")
    prime = datasets.load_dataset("parquet", data_files=shard, split="train", cache_dir=cache)
    assert json.loads(prime[0]["tools"])[0]["function"]["name"] == "terminal"
    call = prime[0]["messages"][2]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"]) == {"command": "echo hi > hello.txt"}
    # tasks: one verifiers environment row per task, the gold answer withheld
    assert tasks[0]["example_id"] == row["example_id"] and tasks[0]["answer"] == ""
    assert tasks[0]["prompt"] == row["prompt"] and tasks[0]["task"] == row["task"]
    assert json.loads(tasks[0]["info"])["task_id"] == "demo-task"


def test_nothing_planted_reaches_any_published_byte(tmp_path: Path, runs_root: Path) -> None:
    trial = leaky_trial(runs_root)
    source = "\n".join(p.read_text(errors="replace") for p in trial.path.rglob("*") if p.is_file())
    for leak in LEAKS:
        assert leak in source  # really planted
    b = bundle_reviews(cands(trial), tmp_path / "staging")
    assert b.rows["rollouts"] == 1, b.excluded  # the trial is exported, not dropped
    assert b.stats.redactions and b.stats.banned_keys and b.stats.host_paths
    out = tmp_path / "published"
    LocalFolderTarget(out).publish(b.path, b.tag)
    for root in (b.path, out):
        text = published_text(root)
        for leak in LEAKS:
            assert leak not in text, (root, leak)
    assert "[REDACTED:anthropic_key]" in published_text(out)
    assert verify_reviews(b.path, cands(trial)).ok


def test_verify_catches_tampering_and_unlisted_files(
    tmp_path: Path, two_trials: list[Trial]
) -> None:
    b = bundle_reviews(cands(*two_trials), tmp_path / "staging")
    bad = tmp_path / "bad"
    shutil.copytree(b.path, bad)
    (bad / "notes.txt").write_text(f"leftover {SECRET}")
    (bad / "README.md").write_text((bad / "README.md").read_text() + f"\nsee {HOST}\n")
    report = verify_bundle(bad)
    assert not report.passed("PUBLISH_SCHEMA")  # unlisted file, README checksum
    assert not report.passed("PUBLISH_HOST_PATH")
    assert not report.passed(VERDICT_CHECK) and report.verdict == "not_publishable"
    with pytest.raises(PublishError, match="checksum"):
        LocalFolderTarget(tmp_path / "out").publish(bad, "t")


def test_rows_not_selected_by_the_review_fail_not_ready(tmp_path: Path, runs_root: Path) -> None:
    """Under a plan asking for one trial a cell, a newer healthy attempt supersedes the
    exported one (without a plan both would be trials of their own)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: one-trial\nmatrix:\n  - tasks: [demo-task]\n    harnesses: [codex-acp]\n"
        "    models: [openai/gpt-x]\n    skill_modes: [with-skill]\n    sandboxes: [daytona]\n"
        "    trials: 1\n"
    )
    old = build_trial(runs_root, rollout_id="aaaa0001")
    b = bundle_reviews(cands(old), tmp_path / "s", plan_path=str(plan))
    newer = healthy_spec(rollout_id="zzzz0002")
    newer.result.update(started_at="2027-01-01 00:00:00", finished_at="2027-01-01 00:01:15")
    newer_trial = newer.sync().write(runs_root)
    report = verify_reviews(b.path, cands(old, newer_trial), plan_path=str(plan))
    assert not report.passed("PUBLISH_NOT_READY")
    assert (
        "not a trial the dataset review exports" in report.findings["PUBLISH_NOT_READY"][0].message
    )


def test_nothing_to_export_is_not_publishable(tmp_path: Path, runs_root: Path) -> None:
    b = bundle_reviews(cands(oracle_spec().write(runs_root)), tmp_path / "s")
    assert b.rows["rollouts"] == 0 and b.verdict == "not_publishable"
    report = verify_bundle(b.path)
    assert report.passed("PUBLISH_SCHEMA") and not report.passed(VERDICT_CHECK)


def test_local_folder_is_idempotent_and_keeps_foreign_files(
    tmp_path: Path, runs_root: Path
) -> None:
    out = tmp_path / "published"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "review.md").write_text("kept")
    t1 = build_trial(runs_root, rollout_id="aaaa0001")
    b1 = bundle_reviews(cands(t1), tmp_path / "s")
    first = LocalFolderTarget(out).publish(b1.path, b1.tag)
    assert first.changed and first.verified
    stamp = {p: os.stat(out / p).st_mtime_ns for p in files_of(out)}
    again = LocalFolderTarget(out).publish(b1.path, b1.tag)
    assert not again.changed
    assert {p: os.stat(out / p).st_mtime_ns for p in files_of(out)} == stamp
    (out / "data" / "rollouts" / "train-00009-of-00010.parquet").write_bytes(b"stale")
    t2 = healthy_spec(task="other-task").write(runs_root)
    b2 = bundle_reviews(cands(t1, t2), tmp_path / "s")
    assert LocalFolderTarget(out).publish(b2.path, b2.tag).changed
    assert not (out / "data" / "rollouts" / "train-00009-of-00010.parquet").exists()
    assert (out / "notes" / "review.md").read_text() == "kept"
    assert files_of(out / "data") == files_of(b2.path / "data")


def test_shared_writer_fixture_with_planted_leaks(tmp_path: Path, fixtures_dir: Path) -> None:
    """Benchflow's own writer output (copied), with a secret, a host path and reasoning fields
    planted where the gate allows them: the trial is exported and none of it is published.

    The copy of the with-skill pass is made a no-skill run: as written it proves no skill
    load (no catalog, no known task skill), so it is quarantined (SKILL_CATALOG_UNKNOWN,
    checks.md §1) and could not be exported."""
    from bf_assets.corpus.run import review_roots

    job = "2026-06-01__00-00-00"
    root = tmp_path / "jobs"
    shutil.copytree(fixtures_dir / "benchflow-writer" / "jobs" / job, root / job)
    for rel in ("config.json", "result.json"):
        doc_path = root / job / "demo-task__aaaa1111" / rel
        doc = json.loads(doc_path.read_text())
        doc.update(skill_mode="no-skill", include_task_skills=False)
        doc_path.write_text(json.dumps(doc, indent=2))
    rows_file = root / job / "demo-task__aaaa1111" / "results.jsonl"
    row = json.loads(rows_file.read_text())
    row["completion"][1]["content"] = f"ok {SECRET} in {HOST}"
    row["trajectory"][1]["prompt"][-1]["content"] = f"ok {SECRET} in {HOST}"
    row["trajectory"][0]["response"]["choices"][0]["message"]["reasoning_content"] = (
        "zq-private-thought-zq"
    )
    row["trajectory"][0]["extras"]["reasoning_content"] = "zq-private-thought-zq"
    rows_file.write_text(json.dumps(row) + "\n")
    reviews = review_roots([root]).trials
    by_name = {t.ref.rollout: t for t in reviews}
    assert by_name["demo-task__aaaa1111"].verdict == "publishable"
    b = bundle_reviews(reviews, tmp_path / "s")
    assert [r for _, r, _ in b.exported] == ["demo-task__aaaa1111"]
    assert {e.rollout: e.reason for e in b.excluded} == {
        "demo-task__bbbb2222": "rejected",
        "demo-task__cccc3333": "rejected",
        "demo-task__dddd4444": "oracle",
    }
    text = published_text(b.path)
    for leak in (*LEAKS, "/srv/bench", "zq-private-thought-zq"):
        assert leak not in text, leak
    assert verify_reviews(b.path, reviews).ok
