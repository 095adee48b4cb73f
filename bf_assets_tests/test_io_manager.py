"""The Parquet IO manager: partition paths, round trips, the partition-loading trap."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import fsspec
import pandas as pd
import pyarrow.parquet as pq
import pytest
from upath import UPath

from bf_assets.defs.io_managers import ParquetIOManager, PartitionTables, partition_relpath

PARTS = dg.DynamicPartitionsDefinition(name="io_test_parts")
KEYS = ["jobs/2026-06-01__10-00-00", "jobs/2026-06-02__10-00-00", "other/nested/run-3"]


@dg.asset(partitions_def=PARTS, io_manager_key="parquet_io_manager")
def upstream(context: dg.AssetExecutionContext) -> pd.DataFrame:
    key = context.partition_key
    return pd.DataFrame({"job": [key, key], "n": [1, 2], "note": [None, None]})


@dg.asset(io_manager_key="parquet_io_manager")
def combined(upstream: dict[str, pd.DataFrame]) -> pd.DataFrame:
    frames = [df.assign(partition=k) for k, df in sorted(upstream.items())]
    if not frames:
        return pd.DataFrame({"job": pd.Series(dtype="str"), "n": pd.Series(dtype="int64")})
    return pd.concat(frames, ignore_index=True)


@dg.asset(io_manager_key="parquet_io_manager")
def unannotated(upstream) -> pd.DataFrame:
    assert isinstance(upstream, pd.DataFrame)
    return upstream


@pytest.fixture
def memory_base() -> Iterator[str]:
    base = f"memory://bf-test-{uuid.uuid4().hex}"
    yield base
    fs = fsspec.filesystem("memory")
    if fs.exists(base.removeprefix("memory://")):
        fs.rm(base.removeprefix("memory://"), recursive=True)


@pytest.fixture(params=["local", "memory"])
def base_dir(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "warehouse")
    return request.getfixturevalue("memory_base")


# --------------------------------------------------------------------------- paths


def test_partition_relpath_uses_sub_folders() -> None:
    assert partition_relpath("jobs/2026-06-01__10-00-00") == ("jobs", "2026-06-01__10-00-00")
    assert partition_relpath("plain") == ("plain",)


def test_partition_relpath_cannot_escape_and_is_injective() -> None:
    keys = ["..", "../x", "a/../b", "/abs", "a//b", "a/", ".", "%2E", "%", "a%2Fb", "a/b"]
    encoded = [partition_relpath(k) for k in keys]
    assert len(set(encoded)) == len(keys)
    for parts in encoded:
        assert all(p not in ("", ".", "..") for p in parts)
        assert all("/" not in p for p in parts)
    assert partition_relpath("../x") == ("%2E%2E", "x")
    assert partition_relpath("/abs") == ("%", "abs")


# --------------------------------------------------------------------------- round trips


def _materialize_parts(instance: dg.DagsterInstance, base: str, keys: list[str]) -> None:
    resources = {"parquet_io_manager": ParquetIOManager(base_dir=base)}
    instance.add_dynamic_partitions(PARTS.name, keys)
    for key in keys:
        res = dg.materialize([upstream], partition_key=key, instance=instance, resources=resources)
        assert res.success
        [mat] = [e.materialization for e in res.get_asset_materialization_events()]
        assert mat.metadata["dagster/row_count"].value == 2
        assert mat.metadata["path"].value.endswith(f"upstream/{key}.parquet")


@pytest.mark.parametrize("n_parts", [0, 1, 3])
def test_unpartitioned_child_gets_a_dict(base_dir: str, n_parts: int) -> None:
    keys = KEYS[:n_parts]
    resources = {"parquet_io_manager": ParquetIOManager(base_dir=base_dir)}
    with dg.instance_for_test() as instance:
        _materialize_parts(instance, base_dir, keys)
        res = dg.materialize(
            [upstream, combined], selection=[combined], instance=instance, resources=resources
        )
        assert res.success
        out = res.output_for_node("combined")
    assert len(out) == 2 * n_parts
    assert sorted(set(out["job"])) == sorted(keys)
    if n_parts:
        assert sorted(set(out["partition"])) == sorted(keys)
    for key in keys:
        path = UPath(base_dir).joinpath("upstream", *key.split("/"))
        assert path.with_name(path.name + ".parquet").exists(), path
    assert (UPath(base_dir) / "combined.parquet").exists()


def test_unannotated_child_of_one_partition_gets_the_frame(base_dir: str) -> None:
    resources = {"parquet_io_manager": ParquetIOManager(base_dir=base_dir)}
    with dg.instance_for_test() as instance:
        _materialize_parts(instance, base_dir, KEYS[:1])
        res = dg.materialize(
            [upstream, unannotated],
            selection=[unannotated],
            instance=instance,
            resources=resources,
        )
        assert res.success
        assert len(res.output_for_node("unannotated")) == 2


def test_all_null_columns_are_written_as_strings(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        _materialize_parts(instance, str(tmp_path), KEYS[:1])
    path = tmp_path / "upstream" / "jobs" / "2026-06-01__10-00-00.parquet"
    schema = pq.read_schema(path)
    assert str(schema.field("note").type) == "string"
    assert str(schema.field("n").type) == "int64"
    df = pd.read_parquet(path)
    assert df["note"].isna().all()


def test_rejects_non_dataframes(tmp_path: Path) -> None:
    @dg.asset(io_manager_key="parquet_io_manager")
    def not_a_frame() -> int:
        return 1

    res = dg.materialize(
        [not_a_frame],
        resources={"parquet_io_manager": ParquetIOManager(base_dir=str(tmp_path))},
        raise_on_error=False,
    )
    assert not res.success
    assert not (tmp_path / "not_a_frame.parquet").exists()


# --------------------------------------------------------------------------- several partitions per run

RANGE = {
    "dagster/asset_partition_range_start": KEYS[0],
    "dagster/asset_partition_range_end": KEYS[-1],
}


@dg.asset(
    partitions_def=PARTS,
    io_manager_key="parquet_io_manager",
    backfill_policy=dg.BackfillPolicy.single_run(),
)
def batch(context: dg.AssetExecutionContext) -> pd.DataFrame:
    """One frame for every partition of the run (a ``job`` column names each row's)."""
    rows = [
        {"job": key, "n": i, "note": None}
        for key in context.partition_keys
        for i in range(KEYS.index(key) + 1)
        if key != KEYS[1]  # one partition without rows
    ]
    return pd.DataFrame(rows, columns=["job", "n", "note"])


@dg.asset(
    partitions_def=PARTS,
    io_manager_key="parquet_io_manager",
    backfill_policy=dg.BackfillPolicy.single_run(),
)
def batch_child(context: dg.AssetExecutionContext, batch: pd.DataFrame) -> pd.DataFrame:
    assert sorted(set(batch["job"])) == sorted(k for k in context.partition_keys if k != KEYS[1])
    return batch.assign(n=batch["n"] * 10)


@dg.asset(io_manager_key="parquet_io_manager")
def batch_all(batch: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([df for _, df in sorted(batch.items())], ignore_index=True)


def _read(base: Path, asset: str, key: str) -> pd.DataFrame:
    return pd.read_parquet(base.joinpath(asset, *key.split("/")).with_suffix(".parquet"))


def test_a_run_over_several_partitions_writes_one_file_per_partition(tmp_path: Path) -> None:
    single, per_key = tmp_path / "single", tmp_path / "per_key"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTS.name, KEYS)
        for key in KEYS:
            res = dg.materialize(
                [batch, batch_child],
                partition_key=key,
                instance=instance,
                resources={"parquet_io_manager": ParquetIOManager(base_dir=str(per_key))},
            )
            assert res.success
        res = dg.materialize(
            [batch, batch_child, batch_all],
            instance=instance,
            tags=RANGE,
            selection=[batch, batch_child],
            resources={"parquet_io_manager": ParquetIOManager(base_dir=str(single))},
        )
        assert res.success
        mats = {
            (e.materialization.asset_key.path[-1], e.materialization.partition): {
                k: getattr(v, "value", v) for k, v in e.materialization.metadata.items()
            }
            for e in res.get_asset_materialization_events()
        }
        # The dict-typed child of every partition reads the per-partition files.
        res = dg.materialize(
            [batch, batch_child, batch_all],
            instance=instance,
            selection=[batch_all],
            resources={"parquet_io_manager": ParquetIOManager(base_dir=str(single))},
        )
        assert res.success
        everything = res.asset_value("batch_all")
    assert set(mats) == {(a, k) for a in ("batch", "batch_child") for k in KEYS}
    for key in KEYS:
        for asset in ("batch", "batch_child"):
            got, want = _read(single, asset, key), _read(per_key, asset, key)
            pd.testing.assert_frame_equal(got, want, check_dtype=key != KEYS[1])
            meta = mats[(asset, key)]
            assert meta["dagster/row_count"] == len(want)
            assert str(meta["path"]).endswith(f"{asset}/{key}.parquet")
    assert len(_read(single, "batch", KEYS[1])) == 0
    assert list(everything["n"]) == [0, 0, 1, 2]


def test_a_frame_without_the_partition_column_cannot_cover_several_partitions(
    tmp_path: Path,
) -> None:
    @dg.asset(
        name="batch",
        partitions_def=PARTS,
        io_manager_key="parquet_io_manager",
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def no_job_column() -> pd.DataFrame:
        return pd.DataFrame({"n": [1]})

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTS.name, KEYS)
        res = dg.materialize(
            [no_job_column],
            instance=instance,
            tags=RANGE,
            raise_on_error=False,
            resources={"parquet_io_manager": ParquetIOManager(base_dir=str(tmp_path))},
        )
    assert not res.success


def test_loads_of_an_unchanged_file_reuse_the_parsed_frame(tmp_path: Path) -> None:
    from bf_assets.defs.io_managers import ParquetUPathIOManager

    mgr = ParquetUPathIOManager(base_path=UPath(tmp_path))
    path = UPath(tmp_path) / "t.parquet"
    ctx = dg.build_output_context(asset_key="t")
    mgr.dump_to_path(ctx, pd.DataFrame({"job": ["a"], "n": [1]}), path)
    first = mgr.load_from_path(dg.build_input_context(), path)
    again = mgr.load_from_path(dg.build_input_context(), path)
    pd.testing.assert_frame_equal(again, first)
    again["n"] = 5  # a copy: the cached frame is untouched
    assert list(mgr.load_from_path(dg.build_input_context(), path)["n"]) == [1]
    mgr.dump_to_path(ctx, pd.DataFrame({"job": ["a", "b"], "n": [1, 2]}), path)
    changed = mgr.load_from_path(dg.build_input_context(), path)
    assert list(changed["n"]) == [1, 2]


# --------------------------------------------------------------------------- on demand

SEEN: dict[str, object] = {}


@dg.asset(io_manager_key="parquet_io_manager")
def on_demand(upstream: PartitionTables) -> pd.DataFrame:
    """Reads one column of each partition, one partition at a time."""
    SEEN["type"] = type(upstream)
    SEEN["keys"] = sorted(upstream)
    SEEN["columns"] = {k: list(upstream.frame(k, ["n"]).columns) for k in upstream}
    frames = [upstream[k] for k in sorted(upstream)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"job": ["none"]})


@pytest.mark.parametrize("n_parts", [0, 3])
def test_a_partition_tables_input_reads_each_table_on_demand(base_dir: str, n_parts: int) -> None:
    keys = KEYS[:n_parts]
    resources = {"parquet_io_manager": ParquetIOManager(base_dir=base_dir)}
    SEEN.clear()
    with dg.instance_for_test() as instance:
        _materialize_parts(instance, base_dir, keys)
        res = dg.materialize(
            [upstream, on_demand], selection=[on_demand], instance=instance, resources=resources
        )
    assert res.success
    assert SEEN["type"] is PartitionTables
    assert SEEN["keys"] == sorted(keys)
    assert SEEN["columns"] == {k: ["n"] for k in keys}  # only the columns asked for
    out = res.output_for_node("on_demand")
    if not n_parts:
        return
    assert sorted(set(out["job"])) == sorted(keys) and len(out) == 2 * n_parts


def test_a_frame_is_written_a_slice_at_a_time_and_reads_back_as_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each slice of rows is converted to Arrow alone (a large table's Arrow copy is never
    held whole), under the schema of the whole frame: a column null in the first slice and
    text later is text, and the file reads back as the frame written in one piece."""
    import io as _io

    import pyarrow as pa

    from bf_assets.defs import io_managers

    n = 25
    df = pd.DataFrame(
        {
            "key": [f"job/{i}" for i in range(n)],
            "n": list(range(n)),
            "score": [None if i % 4 == 0 else i / 3 for i in range(n)],
            "late_text": [None] * 12 + [f"t{i}" for i in range(12, n)],
            "never": [None] * n,
            "flag": [i % 2 == 0 for i in range(n)],
            "checks": [[f"C{i}", "X"] if i % 3 else [] for i in range(n)],
        }
    )
    monkeypatch.setattr(io_managers, "WRITE_SLICE_ROWS", 10)
    slices = io_managers._arrow_slices(df, io_managers._arrow_schema(df))
    assert [t.num_rows for t in slices] == [10, 10, 5]
    buf = _io.BytesIO()
    io_managers.write_frame(df, buf)
    got = pq.read_table(pa.BufferReader(buf.getvalue()))
    assert got.num_rows == n and pq.ParquetFile(pa.BufferReader(buf.getvalue())).num_row_groups == 3
    whole = pa.Table.from_pandas(df, preserve_index=False)  # in one piece, nulls as text
    whole = whole.set_column(4, pa.field("never", pa.string()), whole[4].cast(pa.string()))
    assert got.schema.field("late_text").type == whole.schema.field("late_text").type
    assert got.schema.equals(whole.schema, check_metadata=False)
    pd.testing.assert_frame_equal(got.to_pandas(), whole.to_pandas())
    empty = _io.BytesIO()
    io_managers.write_frame(df.iloc[0:0], empty)
    back = pq.read_table(pa.BufferReader(empty.getvalue()))
    assert back.num_rows == 0 and back.schema.names == list(df.columns)


def test_a_frame_of_one_slice_is_written_in_one_conversion_to_the_same_bytes() -> None:
    """A frame that fits one slice is converted once (types inferred while converting): the
    file is byte for byte the one the two-step write (schema, then conversion) makes."""
    import io as _io

    from bf_assets.defs import io_managers

    def two_step(frame: pd.DataFrame) -> bytes:
        buf = _io.BytesIO()
        schema = io_managers._arrow_schema(frame)
        with pq.ParquetWriter(buf, schema) as writer:
            for table in io_managers._arrow_slices(frame, schema):
                writer.write_table(table)
        return buf.getvalue()

    n = 30
    df = pd.DataFrame(
        {
            "key": [f"job/{i}" for i in range(n)],
            "n": list(range(n)),
            "score": [None if i % 4 == 0 else i / 3 for i in range(n)],
            "never": [None] * n,
            "flag": [i % 2 == 0 for i in range(n)],
            "checks": [[f"C{i}", "X"] if i % 3 else [] for i in range(n)],
            "count": pd.array([None if i % 5 == 0 else i for i in range(n)], dtype="Int64"),
        }
    )
    for frame in (df, df.iloc[0:0], df.iloc[0:1], df[["never"]]):
        assert len(frame) <= io_managers.WRITE_SLICE_ROWS
        buf = _io.BytesIO()
        io_managers.write_frame(frame, buf)
        assert buf.getvalue() == two_step(frame)
