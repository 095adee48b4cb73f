"""The one atomic writer and the one lock: whole files or none, and a busy lock waited for."""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bf_assets.files import atomic_writer, exclusive_lock, write_atomic


def _leftovers(folder: Path, keep: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


def test_bytes_and_chunks_are_written_whole_with_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "a.json"
    assert write_atomic(path, b"one") == 3
    assert path.read_bytes() == b"one"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert write_atomic(path, iter([b"t", b"wo"]), mode=0o600, fsync=True) == 3
    assert path.read_bytes() == b"two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _leftovers(path.parent, "a.json") == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"old")

    def chunks() -> Iterator[bytes]:
        yield b"half"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic(path, chunks())
    with pytest.raises(RuntimeError), atomic_writer(path) as fh:
        fh.write(b"half")
        raise RuntimeError
    assert path.read_bytes() == b"old"
    assert _leftovers(tmp_path, "a.txt") == []


HOLDER = """
import sys
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_held_lock_says_so_then_waits_for_its_holder(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / ".x.lock"
    lock.parent.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        said: list[str] = []

        def busy() -> None:  # the holder lets go only once we have said we wait
            said.append("busy")
            assert holder.stdin is not None
            holder.stdin.write("done\n")
            holder.stdin.flush()

        with exclusive_lock(lock, on_busy=busy):
            assert said == ["busy"]
        assert holder.wait() == 0
        with exclusive_lock(lock, on_busy=busy):  # free now: nothing to say
            assert said == ["busy"]
    finally:
        holder.kill()
        holder.wait()
