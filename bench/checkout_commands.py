"""The ``bf-assets`` commands of one code checkout, as child processes for the bench to measure.

``review --json`` gets a fresh, empty cache directory per run; ``release`` gets a fresh Dagster
home (created by the command itself, with the shipped instance defaults), warehouse, staging
folder and output folder per run, all removed once the run is measured.  The command is the
checkout's own ``bf-assets`` entry point (``[project.scripts]`` of its ``pyproject.toml``),
started by the bench's Python with the checkout first on ``PYTHONPATH``.  With ``pycache``
set, bytecode is read and written under that folder (``PYTHONPYCACHEPREFIX``), never in the
checkout, and ``warm_up`` fills it, so no measured run compiles the code it runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ENTRY = "bf_assets.cli.main:main"


def entry_point(root: Path) -> str:
    """``module:function`` of the checkout's ``bf-assets`` script (the default without one)."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_ENTRY
    scripts = project.get("project", {}).get("scripts", {})
    entry = scripts.get("bf-assets")
    return entry if isinstance(entry, str) and ":" in entry else DEFAULT_ENTRY


@dataclass(frozen=True)
class Checkout:
    """A code checkout whose ``bf-assets`` commands are measured; ``label`` names it in tables."""

    root: Path
    label: str
    python: str = sys.executable
    pycache: Path | None = None

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(self.root) + (os.pathsep + path if path else "")
        env["HF_HUB_OFFLINE"] = "1"
        env["DAGSTER_DISABLE_TELEMETRY"] = "1"
        if self.pycache is not None:
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(extra or {})
        return env

    def command(self) -> list[str]:
        module, function = entry_point(self.root).split(":", 1)
        code = f"import sys; from {module} import {function}; sys.exit({function}())"
        return [self.python, "-c", code]

    def review(self, rb: Any, jobs: Path, scratch: Path, extra: Sequence[str] = ()) -> Any:
        """``bf-assets review JOBS --json`` with an empty cache of its own (an Invocation of
        ``bench/run_bench.py``, given as ``rb``)."""
        cache = Path(tempfile.mkdtemp(prefix="review-cache-", dir=scratch))
        argv = [*self.command(), "review", str(jobs), "--json", *extra]
        env = self.env({"XDG_CACHE_HOME": str(cache)})
        return rb.Invocation(argv, env, self.root, [cache])

    def release(self, rb: Any, jobs: Path | None, scratch: Path, extra: Sequence[str] = ()) -> Any:
        """``bf-assets release --runs JOBS --out OUT`` (without ``jobs``: the sample) into a
        fresh Dagster home, warehouse and output folder of its own (an Invocation of
        ``bench/run_bench.py``)."""
        run_dir = Path(tempfile.mkdtemp(prefix="release-", dir=scratch))
        runs = [] if jobs is None else ["--runs", str(jobs)]
        argv = [*self.command(), "release", *runs, "--out", str(run_dir / "out"), *extra]
        env = self.env(
            {
                "DAGSTER_HOME": str(run_dir / "dagster_home"),
                "BF_WAREHOUSE": str(run_dir / "warehouse"),
                "BF_STAGING_DIR": str(run_dir / "staging"),
                "XDG_CACHE_HOME": str(run_dir / "cache"),
            }
        )
        return rb.Invocation(argv, env, self.root, [run_dir])

    def floor(self, rb: Any, jobs: Path) -> Any:
        """The read floor of ``bench/run_bench.py`` (every byte read once, every JSON value
        parsed once with orjson, JSONL line by line) on ``jobs``."""
        return rb.Invocation([self.python, "-c", rb.FLOOR_SOURCE, str(jobs)], self.env(), self.root)


def warm_up(rb: Any, checkouts: Sequence[Checkout], scratch: Path, timeout_s: float) -> None:
    """One review and one release of each checkout's sample, not measured: imports and
    bytecode are warm before the first measured run."""
    for code in checkouts:
        sample = code.root / "data" / "runs"
        invocations = [code.release(rb, None, scratch)]
        if (sample / "jobs").is_dir():
            extra = ["--tasks", str(sample / "tasks")]
            invocations.insert(0, code.review(rb, sample / "jobs", scratch, extra))
        for inv in invocations:
            m = rb.measure(f"warm-up {code.label}", 0, inv, scratch, timeout_s)
            note = f"FAILED ({m.failure})" if m.failure else f"exit {m.exit_code}"
            print(f"  warm-up {code.label}: {inv.argv[3]} of the sample, {m.wall_s:.1f} s, {note}")


def run_context(rb: Any, work: Path, scratch: Path, timeout_s: float) -> Any:
    """The ``Tools`` of ``bench/run_bench.py`` that its ``run_sides`` needs (scratch folder,
    timeout, failed-run count), with every other setting at its default."""
    args = rb.parse_args(["--work", str(work), "--timeout", str(timeout_s)])
    return rb.Tools(args, scratch)
