"""The publish gate's scan of every shard row, spread over every core.

:func:`scan_shards` is what :func:`bf_assets.publish.verify.verify_bundle` runs on the Parquet
shards of a bundle: each shard is opened and its schema checked here, then its row groups are
split into pieces of about :data:`PIECE_ROWS` rows, and every row of every piece goes through
:func:`bf_assets.curate.scan.scan_row` and the tool-call ``arguments`` scan.  A bundle of at
least :data:`PARALLEL_MIN_ROWS` rows has its pieces scanned by workers (each piece with a
text cache and object memo of its own); a smaller one, here, with the caller's.  Either way the result is the same: each shard's findings come back in the order
one process scanning row after row makes them (pieces are merged in order), so the
:data:`~bf_assets.publish.verify.MAX_FINDINGS` kept per check are the same first ones, and
the scan's caches only ever save work (a string's or object's findings depend on it alone).

A piece keeps at most ``cap`` findings per check: the report keeps the first ``cap`` of each
check in all, so a later one of a piece could never be kept.  Row groups are read one at a
time: one that cannot be read (a damaged page) is a ``PUBLISH_SCHEMA`` finding naming its rows,
never an exception, and the scan goes on with the next (the shard's row count then falls short
of the manifest's, a second finding).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pyarrow.parquet as pq

from bf_assets.curate.scan import SCHEMA, TextCache, scan_row, scan_value
from bf_assets.curate.schema import CONFIGS, arrow_schema
from bf_assets.findings import Finding, finding
from bf_assets.redact.scan_memo import ScanMemo

SCAN_BATCH_ROWS = 4  # rows made into Python values at a time
PIECE_ROWS = 1024  # about this many rows (whole row groups) a piece of work
PARALLEL_MIN_ROWS = 4096  # a bundle with fewer shard rows in all is scanned in this process


class RowKey(NamedTuple):
    """Which trial a shard row is, and where (a tuple: a bundle has a row per trial and
    config, and several per trial in ``trl_sft``)."""

    rollout_id: Any
    job: Any
    rollout: Any
    config: str
    file: str
    task_id: Any = None  # the row's task (a ``tasks`` row has no rollout)


@dataclass(slots=True)
class ShardScan:
    """What the scan of one shard found: its findings in scan order, the key of each row
    read, and how many rows were read (None when the shard could not be scanned at all)."""

    rel: str
    config: str
    declared: Any  # the rows the manifest lists for it
    findings: list[Finding] = field(default_factory=list)
    keys: list[RowKey] = field(default_factory=list)
    rows: int | None = None


class _Piece(NamedTuple):
    shard: int  # index into the shards being scanned
    rel: str
    config: str
    groups: tuple[tuple[int, int, int], ...]  # its row groups: (index, rows before, rows)


# a piece's findings, the (rollout_id, job, rollout, task_id) of each row read, and how many
# were read
Result = tuple[list[Finding], list[tuple[Any, Any, Any, Any]], int]


def scan_shards(
    bundle: Path,
    shards: Sequence[dict[str, Any]],
    cache: TextCache,
    memo: ScanMemo,
    cap: int,
) -> list[ShardScan]:
    """Scan every row of the manifest records ``shards`` (in that order) in ``bundle``, on
    every core for a large bundle."""
    scans: list[ShardScan] = []
    pieces: list[_Piece] = []
    total = 0
    for i, rec in enumerate(shards):
        scan, groups, rows = _open(bundle, rec)
        scans.append(scan)
        pieces.extend(_Piece(i, scan.rel, scan.config, g) for g in groups)
        total += rows
    most = os.cpu_count() or 1
    if min(most, len(pieces)) > 1 and total >= PARALLEL_MIN_ROWS:
        results: Iterator[Result] = _in_workers(bundle, pieces, cap, most)
    else:
        results = (_scan_piece(bundle, p, cache, memo, cap) for p in pieces)
    names: dict[Any, Any] = {}  # one string per trial, not one per row (and per worker)
    shared = names.setdefault
    for p, (found, keys, n) in zip(pieces, results, strict=True):
        s = scans[p.shard]
        s.findings.extend(found)
        s.keys.extend(
            RowKey(
                shared(rid, rid) if type(rid) is str else rid,
                shared(job, job) if type(job) is str else job,
                shared(rollout, rollout) if type(rollout) is str else rollout,
                p.config,
                p.rel,
                shared(task, task) if type(task) is str else task,
            )
            for rid, job, rollout, task in keys
        )
        s.rows = (s.rows or 0) + n
    return scans


def _open(
    bundle: Path, rec: dict[str, Any]
) -> tuple[ShardScan, list[tuple[tuple[int, int, int], ...]], int]:
    """The shard's scan record, its pieces (each a run of row groups ``(index, rows before,
    rows)``) and the rows of its row groups; no pieces (and a finding) when it cannot be
    scanned."""
    rel, config = str(rec["path"]), str(rec.get("config"))
    scan = ShardScan(rel, config, rec.get("rows"))
    if config not in CONFIGS or not rel.startswith(f"data/{config}/"):
        scan.findings.append(finding(SCHEMA, f"{rel} is not a shard of a known config", file=rel))
        return scan, [], 0
    try:
        pf = pq.ParquetFile(bundle / rel)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        scan.findings.append(
            finding(SCHEMA, f"{rel} is not a readable Parquet file: {exc}", file=rel)
        )
        return scan, [], 0
    with pf:
        if not pf.schema_arrow.equals(arrow_schema(config), check_metadata=False):
            scan.findings.append(
                finding(SCHEMA, f"{rel} does not have the published {config} schema", file=rel)
            )
            return scan, [], 0
        meta = pf.metadata
        sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    scan.rows = 0
    out: list[tuple[tuple[int, int, int], ...]] = []
    piece: list[tuple[int, int, int]] = []
    rows = in_piece = 0
    for g, n in enumerate(sizes):
        piece.append((g, rows, n))
        rows += n
        in_piece += n
        if in_piece >= PIECE_ROWS:
            out.append(tuple(piece))
            piece, in_piece = [], 0
    if piece:
        out.append(tuple(piece))
    return scan, out, rows


def _scan_piece(bundle: Path, p: _Piece, cache: TextCache, memo: ScanMemo, cap: int) -> Result:
    """The findings of a piece's rows in order (at most ``cap`` per check; a row group that
    cannot be read is one, and the scan goes on with the next), their keys, and how many
    rows were read."""
    found: list[Finding] = []
    per_check: dict[str, int] = {}
    keys: list[tuple[Any, Any, Any, Any]] = []
    read = 0

    def keep(fs: Sequence[Finding]) -> None:
        for f in fs:
            k = per_check.get(f.check, 0)
            if k < cap:
                per_check[f.check] = k + 1
                found.append(f)

    try:
        pf = pq.ParquetFile(bundle / p.rel)
    except Exception as exc:  # replaced since it was opened: pyarrow raises several types
        keep([finding(SCHEMA, f"{p.rel} is not a readable Parquet file: {exc}", file=p.rel)])
        return found, keys, 0
    with pf:
        for group, before, size in p.groups:
            n = before
            for rows in _rows(pf, group):
                if isinstance(rows, Exception):  # a damaged page: told by its own rows
                    span = f"rows {n + 1}-{before + size} (row group {group})"
                    msg = f"{p.rel} {span} could not be read: {rows}"
                    keep([finding(SCHEMA, msg, file=p.rel)])
                    break
                for row in rows:
                    n += 1
                    where = f"{p.rel} row {n}"
                    keep(scan_row(row, p.config, where=where, cache=cache, memo=memo))
                    keep(arguments_findings(row, p.config, where, cache))
                    keys.append(
                        (
                            row.get("rollout_id"),
                            row.get("job"),
                            row.get("rollout"),
                            row.get("task_id"),
                        )
                    )
            read += n - before
    return found, keys, read


def _rows(pf: pq.ParquetFile, group: int) -> Iterator[list[dict[str, Any]] | Exception]:
    """The rows of one row group a few at a time, as Python values; the exception that
    stopped the reading, last, when one did (only the reading is guarded, never the scan)."""
    batches = pf.iter_batches(batch_size=SCAN_BATCH_ROWS, row_groups=[group])
    while True:
        try:
            batch = next(batches, None)
            rows = None if batch is None else batch.to_pylist()
        except Exception as exc:  # noqa: BLE001 (pyarrow raises several types)
            yield exc
            return
        if rows is None:
            return
        yield rows


def arguments_findings(
    row: dict[str, Any], config: str, where: str, cache: TextCache
) -> list[Finding]:
    """Decode every tool call's ``arguments`` of the row's message columns and scan them."""
    decoded: list[Any] = []
    bad = 0
    for col in (c.name for c in CONFIGS[config] if c.kind == "messages"):
        for m in row.get(col) or []:
            for tc in (m.get("tool_calls") if isinstance(m, dict) else None) or []:
                fn = tc.get("function") if isinstance(tc, dict) else None
                text = fn.get("arguments") if isinstance(fn, dict) else None
                try:
                    value = orjson.loads(text) if isinstance(text, str) else None
                except orjson.JSONDecodeError:
                    value = None
                if isinstance(value, dict):
                    decoded.append(value)
                else:
                    bad += 1
    out = scan_value(decoded, f"{where} (tool-call arguments)", cache) if decoded else []
    if bad:
        out.append(
            finding(
                SCHEMA,
                f"{where}: {bad} tool call(s) whose arguments are not a JSON object",
                file=where,
            )
        )
    return out


def _in_workers(bundle: Path, pieces: Sequence[_Piece], cap: int, most: int) -> Iterator[Result]:
    """Each piece's result, in order, from workers."""
    from bf_assets.corpus.run import pooled_in_order

    workers = min(most, len(pieces))
    yield from pooled_in_order(workers, _piece_in_worker, ((bundle, p, cap) for p in pieces))


def _piece_in_worker(bundle: Path, p: _Piece, cap: int) -> Result:
    """A piece's result, scanned with a text cache and object memo of its own."""
    return _scan_piece(bundle, p, {}, ScanMemo(), cap)
