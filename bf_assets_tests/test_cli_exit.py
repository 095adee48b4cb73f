"""The ``bf-assets`` command ends without the interpreter's teardown (``cli.main.exit_now``):
its exit code, every byte of its output and its exit handlers are kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trialkit import healthy_spec

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import atexit, sys
marker = sys.argv[1]
atexit.register(lambda: open(marker, "w").write("ran"))
sys.argv = ["bf-assets", "review", sys.argv[2], "--json"]
from bf_assets.cli.main import main
main()
print("not reached")
"""


def test_the_command_keeps_its_code_output_and_exit_handlers(tmp_path: Path) -> None:
    trial = healthy_spec().write(tmp_path / "runs")
    marker = tmp_path / "atexit.txt"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(marker), str(trial.path.parent)],
        capture_output=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    doc = json.loads(proc.stdout)  # the whole document, flushed before the process ended
    assert len(doc["trials"]) == 1
    assert b"not reached" not in proc.stdout
    assert marker.read_text() == "ran"


def test_a_failing_command_keeps_its_exit_code(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bf_assets.cli.main", "review", str(tmp_path / "missing")],
        capture_output=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert b"bf-assets: error" in proc.stderr
