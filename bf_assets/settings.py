"""Where the project's files live: run roots, task tree, warehouse, published folder.

Plain paths from the environment (``BF_PROJECT_DIR``, ``BF_RUN_ROOTS``, ``BF_WAREHOUSE``…),
without Dagster: ``bf-assets release`` finds its trials and starts reading them before
Dagster is imported.  The Dagster resources (:mod:`bf_assets.defs.resources`) use the same.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

PROJECT_DIR_ENV = "BF_PROJECT_DIR"


def project_dir() -> Path:
    """Where the project's data lives: ``$BF_PROJECT_DIR``, else the current directory (never
    the install location).  Defaults below it: ``data/runs/jobs`` (run roots),
    ``data/runs/tasks``, ``data/warehouse``, ``data/published``, ``.dagster_home``."""
    return Path(os.environ.get(PROJECT_DIR_ENV) or os.getcwd()).resolve()


def env_path(name: str) -> str | None:
    """The path in ``$name``, a relative one resolved against :func:`project_dir` (the
    folder of the ``.env`` it may come from, whatever the current directory: the UI's
    processes run in the instance folder); None when unset or empty.  URLs are kept."""
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return None
    return raw if "://" in raw else str(project_dir() / Path(raw).expanduser())


def default_run_root() -> Path:
    return project_dir() / "data" / "runs" / "jobs"


def default_tasks_root() -> Path:
    return project_dir() / "data" / "runs" / "tasks"


def default_out_dir() -> Path:
    return project_dir() / "data" / "published"


RUN_ROOTS_ENV = "BF_RUN_ROOTS"
TASKS_ENV, PLAN_ENV, QUARANTINE_ENV = "BF_TASKS_DIR", "BF_PLAN", "BF_QUARANTINE"


WAREHOUSE_ENV = "BF_WAREHOUSE"


def warehouse_dir() -> str:
    """``$BF_WAREHOUSE`` (a local path or an fsspec URL), else ``data/warehouse``."""
    return env_path(WAREHOUSE_ENV) or str(project_dir() / "data" / "warehouse")


def roots_namespace(roots: Sequence[str]) -> str:
    """A folder name for one set of run roots: tables of different run roots never share
    files, even when their job directories have the same names."""
    norm = sorted(os.path.abspath(r) for r in roots)
    return "roots-" + hashlib.sha256("\0".join(norm).encode()).hexdigest()[:12]


def namespaced_warehouse(base: str, roots: Sequence[str]) -> str:
    return f"{base.rstrip('/')}/{roots_namespace(roots)}"


def _local_base(wh: str) -> Path | None:
    """The warehouse ``wh`` as a folder of this machine; None for an object store."""
    if "://" in wh and not wh.startswith("file://"):
        return None
    return Path(wh.removeprefix("file://"))


def local_tables(roots: Sequence[str]) -> Path | None:
    """The run roots' folder of the warehouse where the tables are (``namespaced_warehouse``)
    when it is on this machine's filesystem; None for an object store."""
    base = _local_base(warehouse_dir())
    return None if base is None else Path(namespaced_warehouse(str(base), roots))


def local_warehouse(roots: Sequence[str] | None = None) -> Path:
    """The warehouse as a local folder (for files people open: reports, staged bundles),
    the run roots' own sub-folder when ``roots`` is given; ``data/`` under the repo when the
    warehouse is not on this machine's filesystem."""
    base = _local_base(warehouse_dir())
    if base is None:
        base = project_dir() / "data"
    return base / roots_namespace(roots) if roots is not None else base


PAGES_URL_ENV = "BF_PAGES_URL"


def pages_url(path: Path) -> str | None:
    """The HTTP address of a file of the local warehouse's report folders on the trial page
    server of ``bf-assets ui`` (``$BF_PAGES_URL``, :mod:`bf_assets.cli.pages_server`); None
    without that server or for a file outside the local warehouse."""
    base = (os.environ.get(PAGES_URL_ENV) or "").strip().rstrip("/")
    if not base:
        return None
    try:
        rel = Path(path).resolve().relative_to(local_warehouse().resolve())
    except ValueError:
        return None
    return f"{base}/{rel.as_posix()}"


def default_tasks_dir() -> str | None:
    """``$BF_TASKS_DIR``, else the sample's task tree when the default run root is in use."""
    if os.environ.get(TASKS_ENV):
        return env_path(TASKS_ENV)
    if not os.environ.get(RUN_ROOTS_ENV) and default_tasks_root().is_dir():
        return str(default_tasks_root())
    return None


def default_run_roots() -> list[str]:
    """``$BF_RUN_ROOTS`` (``os.pathsep``-separated) or ``data/runs/jobs`` under the repo root.

    Read when the resource is built, not when this module is imported.
    """
    raw = os.environ.get(RUN_ROOTS_ENV, "")
    base = project_dir()
    roots = [str(base / Path(r.strip()).expanduser()) for r in raw.split(os.pathsep) if r.strip()]
    return roots or [str(default_run_root())]
