"""A pandas ⇄ Parquet IO manager on ``dg.UPathIOManager`` (local paths and fsspec URLs).

Layout: ``<base_dir>/<asset key path>.parquet`` for an unpartitioned asset and
``<base_dir>/<asset key path>/<partition key as sub-folders>.parquet`` for a partition.  A
job key such as ``jobs/2026-06-01__10-00-00`` is stored as
``raw_trials/jobs/2026-06-01__10-00-00.parquet``: readable, it mirrors the run tree, and the
mapping is one-to-one (see :func:`partition_relpath`).

Two fixes over the base class (``reference/dagster-idioms.md`` §2.1):

* an unpartitioned asset that reads a partitioned parent through a ``dict[...]`` parameter
  always receives a ``{partition_key: DataFrame}`` dict: ``{}`` for no partition and a
  one-item dict for one partition (the base class gives ``None`` and the bare frame);
* columns that pyarrow can only type as ``null`` (every value missing, or no rows) are
  written as strings, so one batch never changes the schema of a column.

An output that covers several partitions (a single-run backfill, ``bf-assets release``) is
split on its ``job`` column (the partition key, ``PARTITION_COLUMN``) and written as one file
per partition, each with its own ``path`` and ``dagster/row_count`` metadata; an input of
several partitions whose parameter is annotated ``pd.DataFrame`` is their concatenation.
Within one run a local file is parsed once: later loads of the unchanged file reuse it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from bf_assets.corpus.ingest_state import partition_relpath
from bf_assets.dataset.common import dump_parted, load_parted
from bf_assets.dataset.store import STORE_PREFIX, TrialStore

PARTITION_COLUMN = "job"
# ``DataFrame.attrs`` key of a frame whose row count means something else than its rows
# (``curated_rollouts`` is an index of files; its row count is the rows exported).
ROW_COUNT_ATTR = "bf_assets.row_count"


class PartitionTables(Mapping[str, pd.DataFrame]):
    """The tables of many partitions, each read from its file when asked for and never kept:
    an input annotated with this type holds file names, not frames, so a step that reads a
    column of every partition holds one partition's table at a time however many there are.
    ``frame(key, columns)`` reads only those columns."""

    def __init__(
        self,
        paths: Mapping[str, UPath],
        read: Callable[[UPath, Sequence[str] | None], pd.DataFrame],
    ) -> None:
        self._paths = dict(paths)
        self._read = read

    def __getitem__(self, key: str) -> pd.DataFrame:
        return self.frame(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def frame(self, key: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        return self._read(self._paths[key], columns)


def _is_dict_type(type_obj: Any) -> bool:
    return (
        type_obj is dict
        or getattr(type_obj, "__origin__", None) in (dict, Mapping)
        or _is_tables_type(type_obj)
    )


def _is_tables_type(type_obj: Any) -> bool:
    return isinstance(type_obj, type) and issubclass(type_obj, PartitionTables)


def _wants_dict(context: dg.InputContext) -> bool:
    return _is_dict_type(context.dagster_type.typing_type)


def _wants_frame(context: dg.InputContext) -> bool:
    t = context.dagster_type.typing_type
    return isinstance(t, type) and issubclass(t, pd.DataFrame)


# Rows converted to Arrow at a time when a frame is written: one slice's Arrow buffers are
# held, not the whole table's (the 49,662-row parity table of 100,000 trials raised the
# step's resident size by some 15 MB written whole, 12 MB in slices).
WRITE_SLICE_ROWS = 10_000


def _arrow_schema(df: pd.DataFrame) -> pa.Schema:
    """The Arrow schema of ``df`` (types inferred over every row, without converting them);
    a column of nulls only is a string column."""
    return _nulls_as_strings(pa.Schema.from_pandas(df, preserve_index=False))


def _nulls_as_strings(schema: pa.Schema) -> pa.Schema:
    for i, f in enumerate(schema):
        if pa.types.is_null(f.type):
            schema = schema.set(i, pa.field(f.name, pa.string()))
    return schema


def _arrow_slices(df: pd.DataFrame, schema: pa.Schema) -> Iterator[pa.Table]:
    """``df`` as Arrow tables of at most :data:`WRITE_SLICE_ROWS` rows under ``schema`` (the
    whole frame's); an empty frame is one empty table."""
    rows = WRITE_SLICE_ROWS
    for start in range(0, max(len(df), 1), rows):
        part = df.iloc[start : start + rows]
        yield pa.Table.from_pandas(part, schema=schema, preserve_index=False, nthreads=1)


def write_frame(df: pd.DataFrame, fh: Any) -> None:
    """``df`` as Parquet into the open binary file ``fh``, a slice at a time (a row group a
    slice); read back, the same frame as one table written whole.  A frame of one slice (a
    job partition's table, nearly always) is converted once, its types inferred as it is
    converted, not inferred first and converted after (the same bytes, about half the CPU)."""
    if len(df) <= WRITE_SLICE_ROWS:
        table = pa.Table.from_pandas(df, preserve_index=False, nthreads=1)
        schema = _nulls_as_strings(table.schema)
        if schema is not table.schema:
            table = table.cast(schema)
        with pq.ParquetWriter(fh, schema) as writer:
            writer.write_table(table)
        return
    schema = _arrow_schema(df)
    with pq.ParquetWriter(fh, schema) as writer:
        for table in _arrow_slices(df, schema):
            writer.write_table(table)


def _temp_beside(path: UPath) -> UPath:
    """A unique temporary name next to ``path`` (two writers never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _local(path: UPath) -> Path | None:
    """``path`` on this machine's filesystem; ``None`` for other filesystems."""
    if getattr(path, "protocol", "") not in ("", "file", "local"):
        return None
    return Path(path.path)


def _local_signature(path: UPath) -> tuple[int, int, int] | None:
    """``(mtime_ns, size, inode)`` of a local file; ``None`` for other filesystems."""
    local = _local(path)
    if local is None:
        return None
    try:
        st = os.stat(local)
    except (OSError, TypeError, ValueError):
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _read_frame(
    path: UPath, columns: Sequence[str] | None = None
) -> tuple[pd.DataFrame, tuple[int, int, int] | None]:
    """A Parquet file's table (only ``columns`` when given) and the file's signature (None
    for a file that is not local)."""
    sig = _local_signature(path)
    with path.open("rb") as fh:
        df = pq.read_table(fh, columns=list(columns) if columns else None).to_pandas()
    return df, sig


def _split_by_partition(
    context: dg.OutputContext, obj: pd.DataFrame, keys: list[str]
) -> dict[str, pd.DataFrame]:
    if PARTITION_COLUMN not in obj.columns:
        raise ValueError(
            f"output {context.asset_key.to_user_string()} covers {len(keys)} partitions but has "
            f"no {PARTITION_COLUMN!r} column to split it on"
        )
    groups = dict(tuple(obj.groupby(PARTITION_COLUMN, sort=False))) if len(obj) else {}
    stray = set(groups) - set(keys)
    if stray:
        raise ValueError(
            f"output {context.asset_key.to_user_string()} has rows of partitions outside the "
            f"run: {', '.join(sorted(map(str, stray))[:5])}"
        )
    return {k: (groups[k] if k in groups else obj.iloc[0:0]).reset_index(drop=True) for k in keys}


class ParquetUPathIOManager(dg.UPathIOManager):
    """Stores pandas DataFrames as Parquet files under ``base_path`` (any fsspec filesystem)."""

    extension: str = ".parquet"

    def __init__(self, base_path: UPath | None = None) -> None:
        super().__init__(base_path=base_path)
        # str(path) -> (file signature, frame): one parse per unchanged local file per run.
        self._parsed: dict[str, tuple[tuple[int, int, int], pd.DataFrame]] = {}

    def get_path_for_partition(
        self, context: dg.InputContext | dg.OutputContext, path: UPath, partition: str
    ) -> UPath:
        return path.joinpath(*partition_relpath(partition))

    def dump_to_path(self, context: dg.OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(
                f"{type(self).__name__} stores pandas DataFrames; output "
                f"{context.asset_key.to_user_string() if context.has_asset_key else context.name} "
                f"is a {type(obj).__name__}"
            )
        self._parsed.pop(str(path), None)
        tmp = _temp_beside(path)
        try:
            with tmp.open("wb") as fh:
                write_frame(obj, fh)
            tmp.rename(path)  # a reader never sees half a table
        finally:
            if tmp.exists():
                tmp.unlink()

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        hit = self._parsed.get(str(path))
        if hit is not None and hit[0] == _local_signature(path):
            return hit[1].copy(deep=False)
        df, sig = _read_frame(path)
        if sig is None:
            return df
        self._parsed[str(path)] = (sig, df)
        return df.copy(deep=False)

    def get_metadata(self, context: dg.OutputContext, obj: pd.DataFrame) -> dict[str, Any]:
        n = obj.attrs.get(ROW_COUNT_ATTR, len(obj))  # a frame may say what its rows stand for
        return {"dagster/row_count": dg.MetadataValue.int(int(n))}

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        keys = list(context.asset_partition_keys) if context.has_asset_partitions else []
        if len(keys) <= 1 or not isinstance(obj, pd.DataFrame):
            super().handle_output(context, obj)
            return
        paths = self._get_paths_for_partitions(context)
        parts = _split_by_partition(context, obj, keys)
        self._handle_transition_to_partitioned_asset(context, paths[keys[0]].parent)
        per_partition: dict[str, dict[str, dg.MetadataValue]] = {}
        for key, part in parts.items():
            path = paths[key]
            self.make_directory(path.parent)
            self.dump_to_path(context=context, obj=part, path=path)
            per_partition[key] = {
                "path": dg.MetadataValue.path(str(path)),
                **self.get_metadata(context, part),
            }
        where = self._get_path_without_extension(context)
        context.log.debug(f"Wrote {len(parts)} partition(s) under {where}")
        try:
            step = context.step_context
        except dg.DagsterInvariantViolationError:  # a bare output context (unit tests)
            context.add_output_metadata(self.get_metadata(context, obj))
            return
        for key, meta in per_partition.items():
            step.add_asset_metadata(meta, asset_key=context.asset_key, partition_key=key)

    def load_input(self, context: dg.InputContext) -> Any:
        if (
            context.has_asset_key
            and context.has_asset_partitions
            and not context.asset_partition_keys
            and _wants_dict(context)
        ):
            return self._tables({}) if _is_tables_type(context.dagster_type.typing_type) else {}
        return super().load_input(context)

    def _tables(self, paths: Mapping[str, UPath]) -> PartitionTables:
        return PartitionTables(paths, lambda path, columns: _read_frame(path, columns)[0])

    def load_partitions(self, context: dg.InputContext) -> Any:
        """Every requested partition, one debug line for all of them (the base class logs an
        event per partition): a frame for one partition (``{key: frame}`` for a ``dict``
        parameter), ``{key: frame}`` for several (their concatenation for a ``DataFrame``
        parameter).  A missing partition is an error unless ``allow_missing_partitions`` or
        the parameter is a ``dict`` (then it is left out with a warning)."""
        keys = list(context.asset_partition_keys)
        paths = self._get_paths_for_partitions(context)
        meta = context.definition_metadata or {}
        # a ``dict`` parameter takes whatever partitions exist (every registered job that has
        # a table); a frame parameter needs every partition it asked for
        allow_missing = bool(meta.get("allow_missing_partitions", False)) or _wants_dict(context)
        if _is_tables_type(context.dagster_type.typing_type):  # read on demand, by the step
            found = {}
            for key in keys:
                if paths[key].exists():
                    found[key] = paths[key]
                else:
                    context.log.warning(self.get_missing_partition_log_message(key))
            context.log.debug(f"{len(found)} of {len(keys)} partition(s) to read on demand")
            return self._tables(found)
        out: dict[str, pd.DataFrame] = {}
        for key in keys:
            try:
                out[key] = self.load_from_path(context=context, path=paths[key])
            except FileNotFoundError:
                if not allow_missing:
                    raise
                context.log.warning(self.get_missing_partition_log_message(key))
        where = paths[keys[0]] if len(keys) == 1 else self._get_path_without_extension(context)
        context.log.debug(f"Loaded {len(out)} of {len(keys)} partition(s) from {where}")
        if len(keys) == 1 and not _wants_dict(context):
            return out.get(keys[0])
        if not _wants_frame(context):
            return out
        frames = [df for _, df in sorted(out.items())]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


class ParquetIOManager(dg.ConfigurableIOManagerFactory):
    """Parquet files under ``base_dir``: a local path or an fsspec URL (``memory://``, ``s3://``…)."""

    base_dir: str

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetUPathIOManager:
        return ParquetUPathIOManager(base_path=UPath(self.base_dir))


class PickleUPathIOManager(dg.UPathIOManager):
    """Stores a Python object (the dataset review) as a pickle under ``base_path``; within
    one run an unchanged local file is unpickled at most once (curation, the six checks and the
    publish step all read the same review; in the process that wrote it, none of them does)."""

    extension: str = ".pickle"

    def __init__(self, base_path: UPath | None = None) -> None:
        super().__init__(base_path=base_path)
        self._loaded: dict[str, tuple[tuple[int, int, int], Any]] = {}

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        self._loaded.pop(str(path), None)
        store = _store_of(obj)
        if store is not None:  # the whole reviews go beside the pickle, under their own name
            _place_store(store, path)
        tmp = _temp_beside(path)
        try:
            with tmp.open("wb") as fh:
                dump_parted(obj, fh)
            tmp.rename(path)
        finally:
            if tmp.exists():
                tmp.unlink()
        if store is not None:
            _prune_stores(path, store.file_name(path.name))
        sig = _local_signature(path)
        if sig is not None:  # the steps after it in this process read it without unpickling
            self._loaded = {str(path): (sig, obj)}

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Any:
        sig = _local_signature(path)
        hit = self._loaded.get(str(path))
        if sig is not None and hit is not None and hit[0] == sig:
            return hit[1]
        with path.open("rb") as fh:
            obj = load_parted(fh)  # our own warehouse file, written by dump_to_path
        store = _store_of(obj)
        if store is not None:
            _attach_store(store, path)
        if sig is not None:
            self._loaded = {str(path): (sig, obj)}
        return obj


def _store_of(obj: Any) -> TrialStore | None:
    store = getattr(obj, "store", None)
    return store if isinstance(store, TrialStore) else None


def _place_store(store: TrialStore, path: UPath) -> None:
    """The store's file next to the pickle at ``path`` (moved on a local disk, uploaded to
    any other filesystem)."""
    local = _local(path)
    if local is not None:
        store.persist(local)
        return
    dest = path.parent / store.file_name(path.name)
    with open(store.path, "rb") as src, dest.open("wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def _attach_store(store: TrialStore, path: UPath) -> None:
    local = _local(path)
    if local is not None:
        store.attach(local)
        return
    src = path.parent / store.file_name(path.name)
    fd, name = tempfile.mkstemp(prefix=STORE_PREFIX, suffix=".tmp")
    with src.open("rb") as fh, os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(fh, out, 1 << 20)
    store.close()
    store.path = Path(name)


def _prune_stores(path: UPath, keep: str) -> None:
    """Store files of reviews pickled here before: only the one the pickle names is read."""
    local = _local(path)
    if local is not None:
        TrialStore.prune(local, keep)
        return
    try:
        for p in path.parent.glob(f"{path.name}.trials-*"):
            if p.name != keep:
                p.unlink()
    except (OSError, NotImplementedError):
        pass


class PickleIOManager(dg.ConfigurableIOManagerFactory):
    """Pickles under ``base_dir``: a local path or an fsspec URL."""

    base_dir: str

    def create_io_manager(self, context: dg.InitResourceContext) -> PickleUPathIOManager:
        return PickleUPathIOManager(base_path=UPath(self.base_dir))
