"""What the tests that use the bench (``bench/run_bench.py``) share."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "run_bench.py"


def run_bench() -> ModuleType:
    """``bench/run_bench.py`` loaded as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location("run_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_bench"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
