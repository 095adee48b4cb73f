"""Files written whole or not at all, and exclusive locks on a lock file.

:func:`write_atomic` and :func:`atomic_writer` write through a unique temporary file beside
the target and one ``rename(2)``: a reader sees the old file or the new one, never half of
one, and a failed write leaves the old file and no temporary file.  :func:`exclusive_lock`
holds a :class:`filelock.FileLock`, calling ``on_busy`` before it waits for another holder.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from filelock import FileLock, Timeout

BIG_BUFFER = 1 << 20  # for a file written in many small chunks


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file in ``path``'s folder (made when missing): its descriptor, name."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


@contextmanager
def atomic_writer(
    path: str | os.PathLike[str],
    *,
    mode: int = 0o644,
    fsync: bool = False,
    buffering: int = -1,
) -> Iterator[BinaryIO]:
    """A binary file to write; when the block ends without an error it replaces ``path``
    (one rename) with permissions ``mode``, flushed to the disk first with ``fsync``.  When
    the block raises, ``path`` is left as it was and the temporary file is removed."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb", buffering=buffering) as fh:
            os.fchmod(fd, mode)  # whatever the umask (mkstemp makes 0600)
            yield fh
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | bytearray | memoryview | Iterable[bytes],
    *,
    mode: int = 0o644,
    fsync: bool = False,
) -> int:
    """Write ``data`` (bytes, or chunks of them) to ``path`` whole or not at all (see
    :func:`atomic_writer`); the number of bytes written."""
    if isinstance(data, bytes | bytearray | memoryview):
        with atomic_writer(path, mode=mode, fsync=fsync) as fh:
            return fh.write(data)
    with atomic_writer(path, mode=mode, fsync=fsync, buffering=BIG_BUFFER) as fh:
        return sum(fh.write(chunk) for chunk in data)


@contextmanager
def exclusive_lock(
    path: str | os.PathLike[str], *, on_busy: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on the lock file ``path`` (made, with its folder, when
    missing) for the block.  When another process holds it, ``on_busy`` is called, then the
    lock is waited for."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_busy is not None:
            on_busy()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()
