"""Places a command must cope with: a folder it cannot list, a full disk, a read-only folder.

Root reads every folder whatever its mode (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``), so
``chmod 000`` alone proves nothing when the tests run as root.  :func:`without_read_override`
is a ``preexec_fn`` that drops those two capabilities from the child's bounding set: the
command it runs is then refused a ``chmod 000`` folder as any user would be.  A full disk
and a read-only folder are small ``tmpfs`` mounts (root only); each helper skips the test
with the reason when the machine does not allow it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def without_read_override() -> None:
    """``preexec_fn``: the child (and what it runs) no longer bypasses file modes."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def locked_dir(path: Path) -> Path:
    """``path`` made (if needed) and set to mode 000; skip unless a child started with
    :func:`without_read_override` is refused it.  The mode is put back at teardown by
    :func:`unlock` (call it, or pytest cannot remove the folder)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0)
    probe = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(path)],
        preexec_fn=without_read_override,
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        path.chmod(0o755)
        pytest.skip("this machine lets a child process list a mode-000 folder")
    return path


def unlock(path: Path) -> None:
    if path.exists():
        path.chmod(0o755)


def _mount(target: Path, options: str) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tmpfs mount needs root and mount(8)")
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def _umount(target: Path) -> None:
    done = subprocess.run(["umount", str(target)], capture_output=True, check=False)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


@contextmanager
def full_disk(target: Path, size_kib: int = 256) -> Iterator[Path]:
    """A ``size_kib`` tmpfs at ``target``, filled up: nothing more can be written there."""
    _mount(target, f"size={size_kib}k")
    try:
        with open(target / "filler", "wb", buffering=0) as fh:
            block = bytes(4096)
            try:
                while fh.write(block):
                    pass
            except OSError:
                pass
        yield target
    finally:
        _umount(target)


@contextmanager
def nearly_full_disk(target: Path, size_kib: int = 4096) -> Iterator[Path]:
    """A small tmpfs at ``target`` with room for a little, not for a release."""
    _mount(target, f"size={size_kib}k")
    try:
        yield target
    finally:
        _umount(target)


@contextmanager
def read_only_dir(target: Path) -> Iterator[Path]:
    """A read-only file system at ``target`` (a read-only tmpfs)."""
    _mount(target, "ro,size=64k")
    try:
        yield target
    finally:
        _umount(target)
