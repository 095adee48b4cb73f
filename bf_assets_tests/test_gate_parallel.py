"""The publish gate's shard scan on every core gives exactly the report one process gives.

``bf_assets.publish.shardscan`` splits the shards' row groups into pieces and, for a large
bundle, scans them in forked workers.  The findings must be the same, in the same order (the
report keeps the first ``MAX_FINDINGS`` of each check), with the same row numbers, row
counts and verdict; a row group that cannot be read is a finding on either path.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_card_release import _rewrite_shard
from test_curate_rows import HOST, SECRET
from trialkit import healthy_spec

from bf_assets.publish import shardscan
from bf_assets.publish.bundle import BundleOptions, bundle_reviews
from bf_assets.publish.verify import MAX_FINDINGS, GateReport, verify_bundle

# a second secret, so each planted row carries two different detector hits
GITHUB = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"


def _bundle(tmp_path: Path, runs_root: Path, n: int = 12) -> Path:
    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(n)]
    opts = BundleOptions(row_group_rows=2, test_fraction=0)
    reviews = [t.review() for t in trials]
    return bundle_reviews(reviews, tmp_path / "staging", opts).path


def _plant(bundle: Path) -> int:
    """A secret, a GitHub token and a host path in the ``model`` of every shard row (the
    ``task`` of a ``tasks`` row, which has no model; rows rewritten in row groups of 2, the
    schema kept); the rows planted."""
    planted = 0

    def plant(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nonlocal planted
        for i, row in enumerate(rows):
            key = "model" if "model" in row else "task"
            row[key] = f"{row[key]} {SECRET}{i:03d} {GITHUB} {HOST}/{i}"
        planted += len(rows)
        return rows

    for shard in sorted((bundle / "data").rglob("*.parquet")):
        _rewrite_shard(shard, plant, row_group_size=2)
    return planted


def _report(bundle: Path, monkeypatch: pytest.MonkeyPatch, *, forked: bool) -> GateReport:
    calls: list[int] = []
    real = shardscan._in_workers

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(shardscan, "_in_workers", spy)
        m.setattr(shardscan, "PARALLEL_MIN_ROWS", 0 if forked else 10**9)
        m.setattr(shardscan, "PIECE_ROWS", 3)  # pieces of two row groups (4 rows)
        m.setattr(shardscan.os, "cpu_count", lambda: 2)
        report = verify_bundle(bundle)
    assert (len(calls) == 1 and calls[0] > 2) if forked else not calls
    return report


def _as_data(r: GateReport) -> tuple[Any, ...]:
    findings = {
        c: [(f.check, f.message, f.file, f.evidence) for f in fs] for c, fs in r.findings.items()
    }
    return findings, r.rows, r.verdict, r.n_excluded


def test_forked_scan_gives_the_same_findings_in_the_same_order(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, runs_root)
    planted = _plant(bundle)
    assert planted * 2 > MAX_FINDINGS  # the per-check cap decides which findings are kept
    one = _report(bundle, monkeypatch, forked=False)
    many = _report(bundle, monkeypatch, forked=True)
    assert _as_data(many) == _as_data(one)
    secrets = one.findings["PUBLISH_SECRET"]
    assert len(secrets) == MAX_FINDINGS
    # the first rows' findings are the ones kept, shard after shard in the manifest's (path)
    # order, row numbers counted across the pieces; the cap is reached in the third shard
    places = [(f.file or "").rsplit(" row ", 1) for f in secrets]
    shards = sorted({rel for rel, _ in places})
    seq = [(shards.index(rel), int(n)) for rel, n in places]
    assert seq == sorted(seq) and seq[:4] == [(0, 1), (0, 1), (0, 2), (0, 2)]
    assert len(shards) == 3
    assert one.findings["PUBLISH_HOST_PATH"] and one.verdict == "not_publishable"
    assert sum(one.rows.values()) == planted


def test_a_clean_bundle_passes_on_either_path(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, runs_root)
    one = _report(bundle, monkeypatch, forked=False)
    many = _report(bundle, monkeypatch, forked=True)
    assert one.ok and many.ok
    assert _as_data(many) == _as_data(one)


def _damage_row_group(shard: Path, group: int) -> None:
    """Overwrite the first page of a row group's first column with bytes no page header
    decodes from (the footer is left intact)."""
    col = pq.ParquetFile(shard).metadata.row_group(group).column(0)
    start = col.dictionary_page_offset or col.data_page_offset
    with shard.open("r+b") as fh:
        fh.seek(start)
        fh.write(b"\xff" * min(64, col.total_compressed_size))


@pytest.mark.parametrize("forked", [False, True])
def test_an_unreadable_row_group_is_a_finding_not_an_exception(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    bundle = _bundle(tmp_path, runs_root)
    shard = sorted((bundle / "data" / "trl_sft").glob("*.parquet"))[0]
    assert pq.ParquetFile(shard).metadata.num_row_groups > 3
    _damage_row_group(shard, 1)
    report = _report(bundle, monkeypatch, forked=forked)
    rel = shard.relative_to(bundle).as_posix()
    broken = [f for f in report.findings["PUBLISH_SCHEMA"] if "could not be read" in f.message]
    assert [f.message.split(" could not")[0] for f in broken] == [f"{rel} rows 3-4 (row group 1)"]
    # the rows of the other row groups were still read and counted: the count is short by
    # the two rows of the damaged group
    short = [f for f in report.findings["PUBLISH_SCHEMA"] if "the manifest says" in f.message]
    n = pq.ParquetFile(shard).metadata.num_rows
    assert [f.message for f in short] == [f"{rel} has {n - 2} rows, the manifest says {n}"]
    assert report.verdict == "not_publishable"


def test_copy_of_a_bundle_scans_like_the_bundle(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers read the bundle the gate was given, not one of an earlier call."""
    bundle = _bundle(tmp_path, runs_root)
    other = tmp_path / "other"
    shutil.copytree(bundle, other)
    _plant(other)
    assert _report(bundle, monkeypatch, forked=True).ok
    assert not _report(other, monkeypatch, forked=True).passed("PUBLISH_SECRET")
