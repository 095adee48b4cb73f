"""Resources: where the run roots are and how trials are reviewed."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from bf_assets.review import ReviewOptions

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUN_ROOT = REPO_ROOT / "data" / "runs" / "jobs"
RUN_ROOTS_ENV = "BF_RUN_ROOTS"


def default_run_roots() -> list[str]:
    """``$BF_RUN_ROOTS`` (``os.pathsep``-separated) or ``data/runs/jobs`` under the repo root.

    Read when the resource is built, not when this module is imported.
    """
    raw = os.environ.get(RUN_ROOTS_ENV, "")
    roots = [r for r in raw.split(os.pathsep) if r.strip()]
    return roots or [str(DEFAULT_RUN_ROOT)]


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
        default=None, description="Directory of task definitions (instruction, skills)."
    )
    plan_path: str | None = Field(default=None, description="Experiment plan (plan.yaml).")
    quarantine_path: str | None = Field(default=None, description="Quarantine list file.")

    def existing_roots(self) -> list[str]:
        """The configured roots that are directories right now."""
        return [r for r in self.roots if Path(r).is_dir()]

    def review_options(self) -> ReviewOptions:
        return ReviewOptions(
            tasks_dir=self.tasks_dir,
            plan_path=self.plan_path,
            quarantine_path=self.quarantine_path,
        )
