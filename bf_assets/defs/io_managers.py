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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath


def _encode_segment(segment: str) -> str:
    """One partition-key segment as a path component: ``%`` → ``%25``, then ``""``, ``.``
    and ``..`` (which a filesystem would collapse or follow) → ``%``, ``%2E``, ``%2E%2E``."""
    seg = segment.replace("%", "%25")
    if seg == "":
        return "%"
    if seg in (".", ".."):
        return seg.replace(".", "%2E")
    return seg


def partition_relpath(partition_key: str) -> tuple[str, ...]:
    """Path components for a partition key: one sub-folder per ``/``-separated segment.

    Injective: every ``%`` in the key is escaped, so the escapes for empty, ``.`` and ``..``
    segments cannot collide with a literal segment, and no component can leave the asset's
    folder.
    """
    return tuple(_encode_segment(s) for s in partition_key.split("/"))


def _is_dict_type(type_obj: Any) -> bool:
    return type_obj is dict or getattr(type_obj, "__origin__", None) in (dict, Mapping)


def _wants_dict(context: dg.InputContext) -> bool:
    return _is_dict_type(context.dagster_type.typing_type)


def _arrow_table(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df, preserve_index=False)
    for i, f in enumerate(table.schema):
        if pa.types.is_null(f.type):
            table = table.set_column(i, pa.field(f.name, pa.string()), table[i].cast(pa.string()))
    return table


class ParquetUPathIOManager(dg.UPathIOManager):
    """Stores pandas DataFrames as Parquet files under ``base_path`` (any fsspec filesystem)."""

    extension: str = ".parquet"

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
        with path.open("wb") as fh:
            pq.write_table(_arrow_table(obj), fh)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        with path.open("rb") as fh:
            return pq.read_table(fh).to_pandas()

    def get_metadata(self, context: dg.OutputContext, obj: pd.DataFrame) -> dict[str, Any]:
        return {"dagster/row_count": dg.MetadataValue.int(len(obj))}

    def load_input(self, context: dg.InputContext) -> Any:
        if (
            context.has_asset_key
            and context.has_asset_partitions
            and not context.asset_partition_keys
            and _wants_dict(context)
        ):
            return {}
        return super().load_input(context)

    def load_partitions(self, context: dg.InputContext) -> Any:
        out = super().load_partitions(context)
        keys = context.asset_partition_keys
        if len(keys) == 1 and _wants_dict(context):
            return {} if out is None else {keys[0]: out}
        return out


class ParquetIOManager(dg.ConfigurableIOManagerFactory):
    """Parquet files under ``base_dir``: a local path or an fsspec URL (``memory://``, ``s3://``…)."""

    base_dir: str

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetUPathIOManager:
        return ParquetUPathIOManager(base_path=UPath(self.base_dir))
