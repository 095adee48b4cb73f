"""Deterministic Parquet shards: ``data/<config>/<split>-NNNNN-of-NNNNN.parquet``.

Identical rows in identical order give byte-identical files: the schema is fixed per config
(``bf_assets.curate.schema``), the writer options are pinned, row groups and shard
boundaries depend only on serialized row sizes (a row group closes at
``ROW_GROUP_BYTES`` of rows; ``ROW_GROUP_ROWS`` only caps tiny rows), and nothing
time-dependent is written (no pandas metadata, no timestamps).

As the Hub recommends (and ``datasets`` writes by default): a page index, and, where the
installed pyarrow has it (21 and later), content-defined chunking, so data pages end where
the content says and an unchanged run of rows gives the same pages in the next release
(the Hub's storage deduplicates them instead of uploading whole shards again).  Both are
deterministic.

JSON columns (``schema.JSON``, ``trl_sft`` only) arrive as JSON text: a batch is built on the
string storage schema and cast to the published one, so the file carries the Parquet JSON
logical type and (``store_schema``) the ``arrow.json`` extension type that ``datasets``
decodes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from bf_assets.curate.schema import arrow_schema, storage_schema

MiB = 1024 * 1024
ROW_GROUP_ROWS = 100_000  # a cap for tiny rows; row groups are sized by bytes
ROW_GROUP_BYTES = 32 * MiB  # serialized rows per row group
MAX_SHARD_BYTES = 256 * MiB


def supports_content_defined_chunking() -> bool:
    """Whether the installed pyarrow writes content-defined chunks (pyarrow 21 and later)."""
    return int(pa.__version__.split(".", 1)[0]) >= 21


WRITER_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "version": "2.6",
    "use_dictionary": True,
    "write_statistics": True,
    "store_schema": True,
    "data_page_version": "1.0",
    "write_page_index": True,
    **({"use_content_defined_chunking": True} if supports_content_defined_chunking() else {}),
}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(MiB):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class ShardFile:
    path: str  # relative to the bundle root, posix
    config: str
    split: str
    rows: int


class ShardWriter:
    """Streams rows of one config/split into size-bounded shards under ``root/data/<config>``."""

    def __init__(
        self,
        root: Path,
        config: str,
        split: str = "train",
        *,
        row_group_rows: int = ROW_GROUP_ROWS,
        row_group_bytes: int = ROW_GROUP_BYTES,
        max_shard_bytes: int = MAX_SHARD_BYTES,
    ) -> None:
        self.root = root
        self.config = config
        self.split = split
        self.schema = arrow_schema(config)
        self.storage = storage_schema(config)
        self.row_group_rows = row_group_rows
        self.row_group_bytes = row_group_bytes
        self.max_shard_bytes = max_shard_bytes
        self.dir = root / "data" / config
        self.dir.mkdir(parents=True, exist_ok=True)
        self._buf: list[dict[str, Any]] = []
        self._buf_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._shard_bytes = 0
        self._shard_rows = 0
        self._parts: list[tuple[Path, int]] = []  # (temporary path, rows)
        self.rows = 0

    def _open(self) -> pq.ParquetWriter:
        if self._writer is None:
            # the split in the name: every split of a config writes into this folder, and
            # each holds its part open while rows of the others arrive
            tmp = self.dir / f".{self.split}-part-{len(self._parts):05d}.parquet"
            self._writer = pq.ParquetWriter(str(tmp), self.schema, **WRITER_OPTIONS)
            self._parts.append((tmp, 0))
            self._shard_bytes = 0
            self._shard_rows = 0
        return self._writer

    def write(self, row: dict[str, Any]) -> None:
        size = len(orjson.dumps(row))
        self._buf.append(row)
        self._buf_bytes += size
        self.rows += 1
        if len(self._buf) >= self.row_group_rows or self._buf_bytes >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        writer = self._open()
        table = pa.Table.from_pylist(self._buf, schema=self.storage).cast(self.schema)
        writer.write_table(table, row_group_size=len(self._buf))
        self._shard_bytes += self._buf_bytes
        self._shard_rows += len(self._buf)
        path, _ = self._parts[-1]
        self._parts[-1] = (path, self._shard_rows)
        self._buf, self._buf_bytes = [], 0
        if self._shard_bytes >= self.max_shard_bytes:
            writer.close()
            self._writer = None

    def close(self) -> list[ShardFile]:
        """Flush, close and give the shards their final ``NNNNN-of-NNNNN`` names."""
        self._flush()
        if not self._parts:  # an empty config still gets one (empty) shard with its schema
            self._open()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        n = len(self._parts)
        out = []
        for i, (tmp, rows) in enumerate(self._parts):
            final = self.dir / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            tmp.replace(final)
            out.append(
                ShardFile(final.relative_to(self.root).as_posix(), self.config, self.split, rows)
            )
        return out
