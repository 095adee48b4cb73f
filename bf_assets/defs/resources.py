"""Resources: where the run roots are and how trials are reviewed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from pydantic import Field

from bf_assets.dataset.reportfiles import ReportContext
from bf_assets.review.options import ReviewOptions

PROJECT_DIR_ENV = "BF_PROJECT_DIR"


def project_dir() -> Path:
    """Where the project's data lives: ``$BF_PROJECT_DIR``, else the current directory (never
    the install location).  Defaults below it: ``data/runs/jobs`` (run roots),
    ``data/runs/tasks``, ``data/warehouse``, ``data/published``, ``.dagster_home``."""
    return Path(os.environ.get(PROJECT_DIR_ENV) or os.getcwd()).resolve()


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
    return os.environ.get(WAREHOUSE_ENV) or str(project_dir() / "data" / "warehouse")


def roots_namespace(roots: Sequence[str]) -> str:
    """A folder name for one set of run roots: tables of different run roots never share
    files, even when their job directories have the same names."""
    norm = sorted(os.path.abspath(r) for r in roots)
    return "roots-" + hashlib.sha256("\0".join(norm).encode()).hexdigest()[:12]


def namespaced_warehouse(base: str, roots: Sequence[str]) -> str:
    return f"{base.rstrip('/')}/{roots_namespace(roots)}"


def local_warehouse(roots: Sequence[str] | None = None) -> Path:
    """The warehouse as a local folder (for files people open: reports, staged bundles),
    the run roots' own sub-folder when ``roots`` is given; ``data/`` under the repo when the
    warehouse is not on this machine's filesystem."""
    wh = warehouse_dir()
    base = (
        project_dir() / "data"
        if "://" in wh and not wh.startswith("file://")
        else Path(wh.removeprefix("file://"))
    )
    return base / roots_namespace(roots) if roots is not None else base


def default_tasks_dir() -> str | None:
    """``$BF_TASKS_DIR``, else the sample's task tree when the default run root is in use."""
    if os.environ.get(TASKS_ENV):
        return os.environ[TASKS_ENV]
    if not os.environ.get(RUN_ROOTS_ENV) and default_tasks_root().is_dir():
        return str(default_tasks_root())
    return None


def default_run_roots() -> list[str]:
    """``$BF_RUN_ROOTS`` (``os.pathsep``-separated) or ``data/runs/jobs`` under the repo root.

    Read when the resource is built, not when this module is imported.
    """
    raw = os.environ.get(RUN_ROOTS_ENV, "")
    roots = [r for r in raw.split(os.pathsep) if r.strip()]
    return roots or [str(default_run_root())]


class RunRoots(dg.ConfigurableResource):
    """The run roots to watch and review, plus the optional review inputs."""

    roots: list[str] = Field(
        default_factory=default_run_roots,
        description=(
            "Local run roots (directories holding Benchflow job directories). Default: "
            f"${RUN_ROOTS_ENV} ({os.pathsep}-separated), else data/runs/jobs under the repo root."
        ),
    )
    tasks_dir: str | None = Field(
        default_factory=default_tasks_dir,
        description=f"Directory of task definitions (instruction, skills). Default: ${TASKS_ENV}.",
    )
    plan_path: str | None = Field(
        default_factory=lambda: os.environ.get(PLAN_ENV) or None,
        description=f"Experiment plan (plan.yaml). Default: ${PLAN_ENV}.",
    )
    quarantine_path: str | None = Field(
        default_factory=lambda: os.environ.get(QUARANTINE_ENV) or None,
        description=f"Quarantine registry (quarantine.yaml). Default: ${QUARANTINE_ENV}.",
    )

    def existing_roots(self) -> list[str]:
        """The configured roots that are directories right now."""
        return [r for r in self.roots if Path(r).is_dir()]

    def report_context(self) -> ReportContext:
        return ReportContext(
            roots=tuple(self.roots),
            tasks_dir=self.tasks_dir,
            plan_path=self.plan_path,
            quarantine_path=self.quarantine_path,
        )

    def review_options(self) -> ReviewOptions:
        return ReviewOptions(
            tasks_dir=self.tasks_dir,
            plan_path=self.plan_path,
            quarantine_path=self.quarantine_path,
        )
