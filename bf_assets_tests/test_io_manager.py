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

from bf_assets.defs.io_managers import ParquetIOManager, partition_relpath

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
