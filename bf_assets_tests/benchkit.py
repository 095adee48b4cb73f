"""What the tests that load the project's scripts (``bench/``, ``tools/``) share."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "run_bench.py"


def script_module(name: str, path: Path) -> ModuleType:
    """The script at ``path`` loaded as module ``name`` (``bench/`` and ``tools/`` are not
    packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def run_bench() -> ModuleType:
    """``bench/run_bench.py`` loaded as a module."""
    return script_module("run_bench", BENCH)
