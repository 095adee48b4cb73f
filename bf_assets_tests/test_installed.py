"""The package works wherever it is installed: built as a wheel, installed into a fresh
virtual environment and run from an unrelated directory with ``DAGSTER_HOME`` unset, a
release publishes and writes nothing into the install location."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "runs"


def _tree(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    }


@pytest.mark.skipif(not (SAMPLE / "jobs").is_dir(), reason="sample runs not in the checkout")
def test_a_wheel_installed_elsewhere_releases_from_any_directory(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    [wheel] = dist.glob("bf_assets-*.whl")
    with zipfile.ZipFile(wheel) as whl:  # the generator and the tests stay in the checkout
        shipped = whl.namelist()
    assert not [n for n in shipped if n.startswith(("bf_sample/", "bf_assets/sample/"))]
    assert not [n for n in shipped if n.startswith("bf_assets_tests/")]
    assert "bf_assets/redact/rules/LICENSE-gitleaks" in shipped
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    installed = site / "bf_assets"
    assert (installed / "defaults" / "dagster.yaml").is_file()  # package data shipped
    before = _tree(site)
    work = tmp_path / "elsewhere"
    shutil.copytree(SAMPLE, work / "runs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "BF_"))}
    # the dependencies come from this interpreter's environment (the wheel was installed
    # without them); the package itself only from the new venv
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    bf = [str(venv / "bin" / "bf-assets")]
    res = subprocess.run(
        [*bf, "release", "--runs", str(work / "runs" / "jobs"), "--tasks",
         str(work / "runs" / "tasks"), "--out", str(work / "out")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    assert (work / "out" / "meta" / "manifest.json").is_file()
    assert (work / ".dagster_home" / "dagster.yaml").is_file()  # the project folder's instance
    assert _tree(site) == before  # nothing written into the install location
    # no run roots and no default ones: one line, exit 2
    empty = tmp_path / "empty"
    empty.mkdir()
    res = subprocess.run([*bf, "release"], cwd=empty, env=env, capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "--runs" in res.stderr
    assert "Traceback" not in res.stderr


def test_the_project_instance_file_is_the_shipped_default() -> None:
    """``dagster.yaml`` at the top of the checkout documents the instance a project starts
    from; the copy a release writes into a new home is the package's own."""
    from bf_assets.defaults import default_file

    assert (REPO / "dagster.yaml").read_bytes() == default_file("dagster.yaml")


def test_the_schema_document_is_the_published_schema() -> None:
    """``docs/dataset.md`` is what ``schema_markdown`` renders for every config."""
    from bf_assets.curate.schema import CONFIGS
    from bf_assets.publish.card import schema_markdown

    doc = (REPO / "docs" / "dataset.md").read_text(encoding="utf-8")
    header, body = doc.split("\n\n# The published dataset's schema\n\n", 1)
    assert header.startswith("<!-- Generated") and body == schema_markdown(CONFIGS)
