"""All-or-nothing releases: ``--out`` always shows one complete release, whatever kills the
publisher, fills the disk or runs beside it; preconditions are checked before anything is
touched."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from trialkit import build_trial, healthy_spec

from bf_assets.cli.main import main
from bf_assets.publish import local as local_mod
from bf_assets.publish.bundle import Bundle, bundle_reviews
from bf_assets.publish.local import LocalFolderTarget
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH
from bf_assets.publish.targets import PublishError

DRIVER = textwrap.dedent(
    """
    import os, shutil, sys
    from pathlib import Path

    limit, count = int(sys.argv[3]), [0]

    def tick():
        count[0] += 1
        if count[0] == limit:
            os._exit(77)  # as abrupt as kill -9: no cleanup, no finally

    for mod, name in [(os, "link"), (os, "rename"), (os, "replace"), (os, "symlink"),
                      (os, "unlink"), (os, "mkdir"), (os, "rmdir"), (shutil, "copyfile")]:
        def wrap(*a, _orig=getattr(mod, name), **k):
            out = _orig(*a, **k)
            tick()
            return out
        setattr(mod, name, wrap)

    from bf_assets.publish.local import LocalFolderTarget
    LocalFolderTarget(sys.argv[1]).publish(Path(sys.argv[2]), "t")
    print(count[0])
    """
)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def complete_release(out: Path) -> str:
    """Assert ``out`` shows one complete release; return its manifest's sha256."""
    manifest = json.loads((out / MANIFEST_PATH).read_text())
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    for rel, sha in listed.items():
        assert _sha(out / rel) == sha, rel
    present = {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.relative_to(out).parts[0] in ("data", "meta", "report")
    }
    assert present <= {*listed, MANIFEST_PATH, CHECKSUMS_PATH}, present - set(listed)
    return _sha(out / MANIFEST_PATH)


@pytest.fixture
def bundles(tmp_path: Path, runs_root: Path) -> tuple[Bundle, Bundle]:
    t1 = build_trial(runs_root, rollout_id="aaaa0001")
    one = bundle_reviews([t1.review()], tmp_path / "staging")
    t2 = healthy_spec(task="other-task").write(runs_root)
    two = bundle_reviews([t1.review(), t2.review()], tmp_path / "staging")
    assert one.manifest_sha256 != two.manifest_sha256
    return one, two


def test_a_kill_at_any_file_change_leaves_the_previous_release_and_a_rerun_completes(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    one, two = bundles
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    step, killed = 0, 0
    while True:
        step += 1
        out = tmp_path / f"case{step}" / "published"
        LocalFolderTarget(out).publish(one.path, one.tag)
        (out / "notes.txt").write_text("a reviewer's file")  # not the publisher's
        res = subprocess.run(
            [sys.executable, str(driver), str(out), str(two.path), str(step)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if res.returncode == 0:
            assert complete_release(out) == two.manifest_sha256
            break
        assert res.returncode == 77, res.stderr
        killed += 1
        shown = complete_release(out)  # never a mix
        assert shown in (one.manifest_sha256, two.manifest_sha256)
        assert (out / "notes.txt").read_text() == "a reviewer's file"
        again = LocalFolderTarget(out).publish(two.path, two.tag)  # the next run completes
        assert complete_release(out) == two.manifest_sha256 == again.manifest_sha256
        assert (out / "notes.txt").read_text() == "a reviewer's file"
        leftovers = [p.name for p in out.parent.iterdir() if ".link-" in p.name]
        leftovers += [p.name for p in (out.parent / "published.releases").iterdir()]
        assert not [n for n in leftovers if n.startswith((".tmp-", ".published.link-"))]
        assert step < 200
    assert killed >= 10  # every file change of a real publish was a kill point


def test_a_full_disk_leaves_the_previous_release_untouched(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = bundles
    out = tmp_path / "published"
    LocalFolderTarget(out).publish(one.path, one.tag)
    calls = [0]
    real = local_mod._place

    def full(src: Path, dst: Path) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real(src, dst)

    monkeypatch.setattr(local_mod, "_place", full)
    with pytest.raises(PublishError, match="No space left on device.*previous release"):
        LocalFolderTarget(out).publish(two.path, two.tag)
    assert complete_release(out) == one.manifest_sha256
    assert not [p for p in (tmp_path / "published.releases").iterdir() if p.name.startswith(".")]


def test_an_older_plain_folder_becomes_the_previous_release(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    one, two = bundles
    out = tmp_path / "published"
    shutil.copytree(one.path, out)  # what an older version of the publisher left
    (out / "keep.md").write_text("mine")
    LocalFolderTarget(out).publish(two.path, two.tag)
    assert out.is_symlink() and complete_release(out) == two.manifest_sha256
    assert (out / "keep.md").read_text() == "mine"
    previous = [
        p for p in (tmp_path / "published.releases").iterdir() if p.name.startswith("folder-")
    ]
    assert len(previous) == 1 and _sha(previous[0] / MANIFEST_PATH) == one.manifest_sha256


def test_republishing_is_a_no_op_and_old_releases_are_pruned(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    one, two = bundles
    out = tmp_path / "published"
    target = LocalFolderTarget(out)
    assert target.publish(one.path).changed
    assert not target.publish(one.path).changed
    assert target.publish(two.path).changed
    assert target.publish(one.path).changed  # back to the first: the previous one is kept
    store = sorted(p.name for p in (tmp_path / "published.releases").iterdir())
    assert len(store) == 2
    assert complete_release(out) == one.manifest_sha256


def test_a_missing_hub_token_is_refused_before_anything_is_touched(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_trial(runs_root)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "warehouse"))
    out = tmp_path / "out"
    code = main(["release", "--runs", str(runs_root), "--out", str(out), "--hub-repo", "me/ds"])
    assert code == 2
    assert not out.exists() and not (tmp_path / "warehouse").exists()
    assert not (tmp_path / "home").exists()
    monkeypatch.setenv("HF_TOKEN", "hf_test_write_token_0123456789")
    assert (
        main(["release", "--runs", str(runs_root), "--out", str(out), "--hub-repo", "no id"]) == 2
    )
    assert not out.exists()


def _release_cmd(runs: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bf_assets.cli.main",
        "release",
        "--runs",
        str(runs),
        "--out",
        str(out),
    ]


def test_two_releases_started_together_both_complete(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "jobs", tmp_path / "b" / "jobs"
    build_trial(a, rollout_id="aaaa0001")  # the same job layout under two run roots
    build_trial(b, rollout_id="bbbb0001")
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
        "BF_RUN_ROOTS": "",
    }
    (tmp_path / "home").mkdir()
    procs = [
        subprocess.Popen(
            _release_cmd(r, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for r in (a, b)
    ]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (stdout, stderr) in zip(procs, results, strict=True):
        assert p.returncode == 0, stderr[-2000:]
        assert "release verdict: publishable" in stdout
    shown = json.loads((out / MANIFEST_PATH).read_text())
    complete_release(out)
    assert {s["rollout"] for s in shown["source_trials"]} in (
        {"demo-task__aaaa0001"},
        {"demo-task__bbbb0001"},
    )
    # each run root's tables live apart in the warehouse
    spaces = [p for p in (tmp_path / "warehouse").iterdir() if p.name.startswith("roots-")]
    assert len(spaces) == 2


def test_a_failing_step_is_an_error_with_its_reason_and_leaves_the_release(
    tmp_path: Path,
    runs_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A step that cannot write (here the staging folder is a file) exits 2, says which step
    and why, and leaves the previous release as it was; exit 3 stays the gate's alone."""
    build_trial(runs_root)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("BF_RUN_ROOTS", "")
    out = tmp_path / "out"
    argv = ["release", "--runs", str(runs_root), "--out", str(out)]
    monkeypatch.setenv("BF_STAGING_DIR", str(tmp_path / "staging"))
    assert main(argv) == 0
    before = complete_release(out)
    capsys.readouterr()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("BF_STAGING_DIR", str(blocker / "staging"))
    healthy_spec(task="other-task").write(runs_root)  # something new to publish
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "curated_rollouts" in err and "Traceback" not in err
    assert complete_release(out) == before


def test_a_second_release_into_the_same_out_moves_the_link(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out`` is the link, never the release directory it points at: a changed release
    into the same ``--out`` swaps the link and nests nothing inside the releases."""
    build_trial(runs_root)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("BF_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("BF_RUN_ROOTS", "")
    out = tmp_path / "out"
    argv = ["release", "--runs", str(runs_root), "--out", str(out)]
    assert main(argv) == 0
    first = complete_release(out)
    healthy_spec(task="other-task").write(runs_root)
    assert main(argv) == 0
    assert out.is_symlink() and complete_release(out) != first
    store = tmp_path / "out.releases"
    assert {p.parent for p in store.rglob("manifest.json")} == {
        d / "meta" for d in store.iterdir() if d.is_dir()
    }  # every release directory is one release, none inside another
    assert not [p for p in store.rglob("*") if p.name.endswith(".lock")]
