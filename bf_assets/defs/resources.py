"""Resources: where the run roots are and how trials are reviewed."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from bf_assets.dataset.reportfiles import ReportContext
from bf_assets.review.options import ReviewOptions
from bf_assets.settings import (  # re-exported: where the project's files live
    PLAN_ENV,
    PROJECT_DIR_ENV,
    QUARANTINE_ENV,
    RUN_ROOTS_ENV,
    TASKS_ENV,
    WAREHOUSE_ENV,
    default_out_dir,
    default_run_root,
    default_run_roots,
    default_tasks_dir,
    default_tasks_root,
    env_path,
    local_tables,
    local_warehouse,
    namespaced_warehouse,
    project_dir,
    roots_namespace,
    warehouse_dir,
)

__all__ = [
    "PLAN_ENV",
    "PROJECT_DIR_ENV",
    "QUARANTINE_ENV",
    "RUN_ROOTS_ENV",
    "TASKS_ENV",
    "WAREHOUSE_ENV",
    "RunRoots",
    "default_out_dir",
    "default_run_root",
    "default_run_roots",
    "default_tasks_dir",
    "default_tasks_root",
    "env_path",
    "local_tables",
    "local_warehouse",
    "namespaced_warehouse",
    "project_dir",
    "roots_namespace",
    "warehouse_dir",
]


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
        default_factory=lambda: env_path(PLAN_ENV),
        description=f"Experiment plan (plan.yaml). Default: ${PLAN_ENV}.",
    )
    quarantine_path: str | None = Field(
        default_factory=lambda: env_path(QUARANTINE_ENV),
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
