"""Dagster's conventions on the graph: owners, code versions, column schemas, the dg CLI."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

import bf_assets.definitions as definitions_module
from bf_assets.curate.schema import CONFIGS, DEFAULT_CONFIG, column_names
from bf_assets.defs import conventions
from bf_assets.defs.curate import INDEX_COLUMNS
from bf_assets.defs.ingest import raw_trials
from bf_assets.defs.io_managers import ParquetIOManager
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots
from bf_assets.publish.rowbuild import ROW_INDEX_COLUMNS
from bf_assets.review.tables import FINDING_COLUMNS, RAW_COLUMNS, SKILL_COLUMNS, VALIDATED_COLUMNS
from bf_assets_tests.test_dagster_defs import KEY, jobs_root  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[1]
ASSETS = {
    "raw_trials",
    "validated_trials",
    "findings",
    "skill_audit",
    "trial_audits",
    "trial_rows",
    "coverage",
    "sandbox_parity",
    "review_report",
    "results",
    "trial_pages",
    "curated_rollouts",
    "published_dataset",
}
TABLES = {
    "raw_trials": RAW_COLUMNS,
    "validated_trials": VALIDATED_COLUMNS,
    "findings": FINDING_COLUMNS,
    "skill_audit": SKILL_COLUMNS,
    "trial_audits": FINDING_COLUMNS,
    "curated_rollouts": INDEX_COLUMNS,
    "trial_rows": list(ROW_INDEX_COLUMNS),
}


def nodes() -> dict[str, object]:
    graph = definitions_module.defs.resolve_asset_graph()
    return {k.to_user_string(): graph.get(k) for k in graph.get_all_asset_keys()}


def schema_of(node: object) -> list[str]:
    schema = node.metadata[conventions.COLUMN_SCHEMA]  # type: ignore[attr-defined]
    schema = getattr(schema, "schema", schema)
    return [c.name for c in schema.columns]


def test_every_asset_has_the_team_as_owner() -> None:
    found = nodes()
    assert set(found) == ASSETS
    for name, node in found.items():
        assert node.owners == ["team:bf-assets"], name  # type: ignore[attr-defined]


def test_owner_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(conventions.OWNER_ENV, "data-review")
    assert conventions.owners() == ["team:data-review"]
    monkeypatch.setenv(conventions.OWNER_ENV, "lead@example.org")
    assert conventions.owners() == ["lead@example.org"]
    monkeypatch.setenv(conventions.OWNER_ENV, "")
    assert conventions.owners() == [conventions.DEFAULT_OWNER]


def test_every_asset_has_a_code_version_of_its_module() -> None:
    found = nodes()
    versions = {name: node.code_version for name, node in found.items()}  # type: ignore[attr-defined]
    assert all(isinstance(v, str) and len(v) == 16 for v in versions.values()), versions
    ingest = {versions[n] for n in ("raw_trials", "validated_trials", "findings")}
    assert ingest == {conventions.code_version("bf_assets.defs.ingest")}
    assert versions["coverage"] == versions["review_report"] == versions["sandbox_parity"]
    assert versions["curated_rollouts"] == conventions.code_version("bf_assets.defs.curate")
    assert versions["trial_rows"] == versions["curated_rollouts"]
    assert len({versions[n] for n in ("raw_trials", "coverage", "trial_pages")}) == 3


def test_the_code_version_covers_what_the_asset_imports() -> None:
    ingest = conventions.module_closure(["bf_assets.defs.ingest"])
    for mod in ("bf_assets.review.tables", "bf_assets.corpus.inventory", "bf_assets.gate"):
        assert mod in ingest
    pages = conventions.module_closure(["bf_assets.defs.pages"])
    assert "bf_assets.pages.site" in pages
    assert "bf_assets.cli" not in pages and "bf_assets.cli.main" not in pages
    # imports inside a function count too (the Hub target is imported when publishing)
    assert "bf_assets.publish.hub" in conventions.module_closure(["bf_assets.defs.publish"])


def test_the_code_version_is_stable_and_moves_with_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "bf_assets"
    shutil.copytree(conventions.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def version() -> str:
        for f in (conventions._code_version, conventions._imports, conventions._module_file):
            f.cache_clear()
        return conventions.code_version("bf_assets.defs.pages")

    monkeypatch.setattr(conventions, "PACKAGE_DIR", copy)
    try:
        before = version()
        assert version() == before
        (copy / "cli" / "main.py").write_text("# not imported by trial_pages\n")
        assert version() == before
        site = copy / "pages" / "site.py"
        site.write_text(site.read_text() + "\n# changed\n")
        assert version() != before
    finally:
        monkeypatch.undo()
        for f in (conventions._code_version, conventions._imports, conventions._module_file):
            f.cache_clear()


def test_table_assets_carry_the_core_column_lists() -> None:
    found = nodes()
    for name, columns in TABLES.items():
        assert schema_of(found[name]) == list(columns), name
    assert schema_of(found["coverage"]) == conventions.COVERAGE_COLUMNS
    assert schema_of(found["sandbox_parity"]) == conventions.PARITY_COLUMNS


def test_dataset_level_columns_are_what_the_core_writes() -> None:
    from bf_assets.dataset.common import Cell
    from bf_assets.dataset.coverage import SlotRow
    from bf_assets.dataset.parity import ParityPair, ParityRow

    key = ("jobs/j", "t__a", "t__a")
    slot = SlotRow(Cell("t", "h", "m", "with-skill", "docker"), 1, "healthy", key, 1, True, True)
    assert list(slot.to_dict()) == conventions.COVERAGE_COLUMNS
    pair = ParityPair("t", "h", "m", "with-skill", 1, key, key)
    row = ParityRow(pair, "file", "a.txt", "x", "y", "unexpected")
    assert list(row.to_dict()) == conventions.PARITY_COLUMNS


def test_published_dataset_names_every_config_column() -> None:
    node = nodes()["published_dataset"]
    assert schema_of(node) == column_names(DEFAULT_CONFIG)
    meta = node.metadata  # type: ignore[attr-defined]
    for config in CONFIGS:
        schema = meta[f"columns/{config}"]
        assert [c.name for c in schema.schema.columns] == column_names(config), config
        by_name = {c.name: c for c in schema.schema.columns}
        for col in CONFIGS[config]:
            assert by_name[col.name].description == col.description
            assert by_name[col.name].type == col.type_text


_KIND = {"int": "iu", "float": "f", "bool": "b", "string": "OSU", "json": "OSU"}


def test_declared_types_match_the_materialized_tables(
    tmp_path: Path,
    jobs_root: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    root = jobs_root  # a copy of the writer fixture's job (skipped without ../shared)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(job_partitions.name, [KEY])
        result = dg.materialize(
            [raw_trials],
            partition_key=KEY,
            instance=instance,
            resources={
                "run_roots": RunRoots(roots=[str(root)]),
                "parquet_io_manager": ParquetIOManager(base_dir=str(tmp_path / "wh")),
            },
        )
        assert result.success
        for name in ("raw_trials", "validated_trials", "findings", "skill_audit"):
            df: pd.DataFrame = result.asset_value(name)
            assert list(df.columns) == conventions.TABLE_COLUMNS[name]
            schema = conventions.table_schema(conventions.TABLE_COLUMNS[name])
            for col in schema.columns:
                values = df[col.name].dropna()
                if values.empty:
                    continue
                assert values.infer_objects().dtype.kind in _KIND[col.type], (name, col.name)


def test_hub_repo_is_an_env_var_in_the_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    from bf_assets.definitions import build_defs

    monkeypatch.delenv("BF_HUB_REPO", raising=False)
    assert build_defs().resources["publish_target"].hub_repo is None
    monkeypatch.setenv("BF_HUB_REPO", "org/bench")
    target = build_defs().resources["publish_target"]
    assert isinstance(target.hub_repo, dg.EnvVar) and target.hub_repo.env_var_name == "BF_HUB_REPO"
    with dg.build_resources({"publish_target": target}) as res:
        assert res.publish_target.hub_repo == "org/bench"


def _dg() -> Path | None:
    cand = Path(sys.executable).parent / "dg"
    return cand if cand.is_file() else None


@pytest.mark.skipif(_dg() is None, reason="the dg CLI is not installed (pip install '.[ui]')")
def test_dg_check_defs_passes_from_the_checkout() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env |= {"DAGSTER_DISABLE_TELEMETRY": "1", "VIRTUAL_ENV": str(Path(sys.executable).parents[1])}
    res = subprocess.run(
        [str(_dg()), "check", "defs"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "All definitions loaded successfully" in res.stdout + res.stderr


def test_dev_ui_launches_the_ui_outside_the_checkout_folder() -> None:
    """``./dev ui`` starts ``bf-assets ui`` (the webserver and a daemon whose backfill loop
    looks every second; ``dagster dev`` and ``dg dev`` start Dagster's 30 s loop) on the
    workspace file; started in the checkout, where the shipped defaults sit as
    ``dagster.yaml``, Dagster warns that the file is not the instance's."""
    script = (REPO / "dev").read_text()
    ui = script[script.index("  ui)") : script.index(";;", script.index("  ui)"))]
    assert "dagster dev" not in ui and 'dg" dev' not in ui
    assert 'bf-assets" ui -w "$ROOT/workspace.yaml"' in ui
    assert 'cd "$DAGSTER_HOME"' in ui
