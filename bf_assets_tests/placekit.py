"""Places a command must cope with (a folder it cannot list, a full disk, a read-only
folder), and the command run in a child process with its exit code, output and peak memory.

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
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    peak_mb: float  # the child's peak resident memory (ru_maxrss of it and its children)


def run_cli(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    unprivileged: bool = False,
    address_space_mb: int | None = None,
    timeout: float = 600,
) -> Ran:
    """``bf-assets ARGS`` in a child process (this interpreter, this ``sys.path``): its exit
    code, output and peak memory; ``unprivileged``: started with
    :func:`without_read_override`; ``address_space_mb``: the child cannot map more (a
    command that would exhaust the machine's memory fails instead)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}

    def preexec() -> None:
        if unprivileged:
            without_read_override()
        if address_space_mb is not None:
            cap = address_space_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    out, err = cwd / f".cli-{os.getpid()}.out", cwd / f".cli-{os.getpid()}.err"
    peak = cwd / f".cli-{os.getpid()}.peak"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(
            [sys.executable, "-c", _MEASURED, str(peak), *args],
            cwd=cwd,
            env=full_env,
            stdout=o,
            stderr=e,
            preexec_fn=preexec,
        )
        try:
            status, usage = _wait(proc.pid, timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    peak_kb = float(peak.read_text()) if peak.is_file() else usage.ru_maxrss
    ran = Ran(
        proc.returncode,
        out.read_text(errors="replace"),
        err.read_text(errors="replace"),
        peak_kb / 1024,
    )
    out.unlink()
    err.unlink()
    peak.unlink(missing_ok=True)
    return ran


# ``bf-assets`` run by a small interpreter that writes its child's peak memory to a file: a
# child forked from this (large) test process would count the pages it shares with it
# before its exec, and report the test process's size, not its own.
_MEASURED = """
import resource, subprocess, sys
code = subprocess.call([sys.executable, "-m", "bf_assets.cli.main", *sys.argv[2:]])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def _wait(pid: int, timeout: float) -> tuple[int, resource.struct_rusage]:
    deadline = time.monotonic() + timeout
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            return status, usage
        if time.monotonic() > deadline:
            raise TimeoutError(f"bf-assets did not end within {timeout} s")
        time.sleep(0.05)
