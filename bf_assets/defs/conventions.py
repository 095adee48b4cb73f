"""Dagster's asset conventions for the graph: owners, code versions and column schemas.

* ``owners``: one team, ``$BF_ASSET_OWNER`` (``team:<name>`` or an e-mail address; a bare
  name gets the ``team:`` prefix), else ``team:bf-assets``; read when the definitions load.
* ``code_version``: a digest of the source of the module that defines an asset and of every
  ``bf_assets`` module it imports, transitively (imports inside functions included).  It
  changes when code the asset runs changes and stays the same otherwise (whitespace and
  comments count as changes: the digest is over the bytes), so the UI flags an asset whose
  code moved on since its last materialization.
* ``dagster/column_schema``: the columns of each table asset, from the column lists of the
  core (``bf_assets.review.tables``, ``bf_assets.curate.schema``); the types are what the
  Parquet files hold (``json`` = a JSON document as text).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

import dagster as dg

from bf_assets.curate.schema import CONFIGS, DEFAULT_CONFIG
from bf_assets.review.tables import (
    FINDING_COLUMNS,
    RAW_COLUMNS,
    SKILL_COLUMNS,
    VALIDATED_COLUMNS,
)

OWNER_ENV = "BF_ASSET_OWNER"
DEFAULT_OWNER = "team:bf-assets"
COLUMN_SCHEMA = "dagster/column_schema"
PACKAGE = "bf_assets"
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def owners() -> list[str]:
    """The owners of every asset: ``$BF_ASSET_OWNER`` or ``team:bf-assets``."""
    raw = (os.environ.get(OWNER_ENV) or "").strip() or DEFAULT_OWNER
    return [raw if raw.startswith("team:") or "@" in raw else f"team:{raw}"]


# --------------------------------------------------------------------------- code versions


@cache
def _module_file(module: str) -> Path | None:
    """The source file of a ``bf_assets`` module (a package's ``__init__.py``)."""
    rel = Path(*module.split(".")[1:])
    for cand in (PACKAGE_DIR / rel.with_suffix(".py"), PACKAGE_DIR / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)"
    r"|import[ \t]+([^\n#]+))",
    re.M,
)


@cache
def _imports(module: str) -> frozenset[str]:
    """The ``bf_assets`` modules ``module`` imports (absolute and relative, anywhere in it:
    a text scan, so an import-like line in a docstring counts too, which only widens the
    closure)."""
    path = _module_file(module)
    assert path is not None
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for m in _IMPORT.finditer(path.read_text(encoding="utf-8")):
        src, names, plain = m.groups()
        if plain is not None:
            out.update(n.split(" as ")[0].strip() for n in plain.split(","))
            continue
        level = len(src) - len(src.lstrip("."))
        name = src[level:]
        if level:
            parts = module.split(".")
            base = parts[: len(parts) - level + (1 if is_pkg else 0)]
            name = ".".join([*base, name] if name else base)
        out.add(name)
        # ``from pkg import mod`` imports the sub-module when there is one
        for n in names.strip("()").split(","):
            n = n.split(" as ")[0].strip()
            if n.isidentifier():
                out.add(f"{name}.{n}")
    mods: set[str] = set()
    for name in out:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        parts = name.split(".")
        for i in range(2, len(parts) + 1):  # a sub-module runs its packages' __init__
            mods.add(".".join(parts[:i]))
    return frozenset(m for m in mods if _module_file(m) is not None)


def module_closure(modules: Iterable[str]) -> list[str]:
    """``modules`` and every ``bf_assets`` module they import, transitively, sorted."""
    seen: set[str] = set()
    todo = [m for m in modules if _module_file(m) is not None]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(_imports(m) - seen)
    return sorted(seen)


@cache
def _code_version(modules: tuple[str, ...]) -> str:
    h = hashlib.sha256(b"bf_assets code_version 1")
    for m in module_closure(modules):
        path = _module_file(m)
        assert path is not None
        h.update(f"\0{m}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def code_version(*modules: str) -> str:
    """The code version of an asset defined in ``modules`` (see the module docstring)."""
    return _code_version(tuple(sorted(modules)))


# --------------------------------------------------------------------------- column schemas

# Column types of the warehouse tables (everything else is a string).
_JSON_TEXT = {
    "identity_sources",
    "files",
    "read_findings",
    "checks",
    "findings",
    "skills",
    "expected_task_skills",
    "loaded_task_skills",
    "missing_task_skills",
    "failing_tests",
    "trial",
    "superseded",
    "docker_trial",
    "daytona_trial",
}
_TYPES = {
    "trial_index": "int",
    "n_files": "int",
    "total_bytes": "int",
    "n_blockers": "int",
    "n_findings": "int",
    "line": "int",
    "skill_count": "int",
    "task_skills_loading": "int",
    "tokens_in": "int",
    "tokens_out": "int",
    "tokens_cache": "int",
    "tool_calls": "int",
    "tests_total": "int",
    "tests_passed": "int",
    "tests_failed": "int",
    "tests_skipped": "int",
    "judge_passed": "int",
    "judge_total": "int",
    "tokens_thought": "int",
    "judge_score": "float",
    "cost_usd": "float",
    "wall_time_sec": "float",
    "attempts": "int",
    "bytes": "int",
    "rows": "int",
    "reward": "float",
    "healthy": "bool",
    "training_ready": "bool",
    "manual_review_required": "bool",
    "duplicate": "bool",
    "required": "bool",
    "planned": "bool",
    "blocker": "bool",
} | dict.fromkeys(_JSON_TEXT, "json")

# The columns of the dataset-level tables, as the core writes them
# (``SlotRow.to_dict``, ``ParityRow.to_dict``, ``defs.curate.INDEX_COLUMNS``).
COVERAGE_COLUMNS = [
    "task",
    "harness",
    "model",
    "skill_mode",
    "sandbox",
    "trial_index",
    "state",
    "duplicate",
    "trial",
    "attempts",
    "required",
    "planned",
    "superseded",
]
PARITY_COLUMNS = [
    "pair",
    "docker_trial",
    "daytona_trial",
    "kind",
    "item",
    "docker",
    "daytona",
    "label",
    "blocker",
    "lacking",
    "note",
]


def table_schema(columns: Sequence[str]) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[dg.TableColumn(name=c, type=_TYPES.get(c, "string")) for c in columns]
    )


def column_schema(columns: Sequence[str]) -> dict[str, dg.TableSchema]:
    """Definition metadata naming the columns of a table asset."""
    return {COLUMN_SCHEMA: table_schema(columns)}


TABLE_COLUMNS: dict[str, list[str]] = {
    "raw_trials": list(RAW_COLUMNS),
    "validated_trials": list(VALIDATED_COLUMNS),
    "findings": list(FINDING_COLUMNS),
    "skill_audit": list(SKILL_COLUMNS),
    "trial_audits": list(FINDING_COLUMNS),
    "coverage": COVERAGE_COLUMNS,
    "sandbox_parity": PARITY_COLUMNS,
}


def config_schema(config: str) -> dg.TableSchema:
    """The columns of one published config (``bf_assets.curate.schema``), with the types and
    descriptions the dataset card gives them."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=c.name,
                type=c.type_text,
                description=c.description,
                constraints=dg.TableColumnConstraints(nullable=c.nullable),
            )
            for c in CONFIGS[config]
        ]
    )


def published_metadata() -> dict[str, object]:
    """Definition metadata of ``published_dataset``: the default config's columns as the
    column schema, every config's columns under ``columns/<config>``."""
    out: dict[str, object] = {COLUMN_SCHEMA: config_schema(DEFAULT_CONFIG)}
    for config in CONFIGS:
        out[f"columns/{config}"] = dg.MetadataValue.table_schema(config_schema(config))
    return out
