"""The run-level review cache: ``bf-assets review --cache-dir`` over an unchanged corpus
prints the stored output without reading or reviewing any trial.

An entry is keyed by everything the output depends on besides the run roots' contents
(the review code, the output mode, the roots, the options, the task tree, the plan and
quarantine files) and holds the *state* of the run roots: a digest over one ``lstat`` of
every entry under every root (path, mode, size, mtime, ctime, inode; a link adds its target
and the target's own stat).  A directory link needs no walk of its own: one inside a root
leads to entries the walk covers where they are, and the readers never read through one
that leaves its root; the task tree's digest (``cache.tree_digest``) follows its links.
Any file changed, added, removed or renamed anywhere under a root changes the state, and
the review runs again (trial by trial through the per-trial cache in ``bf_assets.batch.cache``).  The state is taken before the review and again after it;
an entry is stored only when the two agree, so output from a corpus that changed while it
was read is never kept.  The stored output is checked against its sha256 before it is
served.

This module imports nothing of the review code: a hit costs a walk of the roots.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from bf_assets.batch.cache import code_digest, link_target_state, tree_digest
from bf_assets.files import write_atomic
from bf_assets.ingest.forked import start_forked

FORMAT = 1


def roots_state(roots: Sequence[str]) -> str | None:
    """Digest of the stat of every entry under every root; None when a root cannot be walked.

    Directory order is whatever ``scandir`` gives: an order change is a miss, never a wrong
    hit.  A root's top-level directories are walked in two halves, the second in a forked
    child (two cores) when forking is safe."""
    h = hashlib.blake2b(digest_size=32)
    try:
        for root in roots:
            st = os.stat(root)
            h.update(b"root\0%s\0%d\0%d\n" % (os.fsencode(root), st.st_ino, st.st_ctime_ns))
            top = _entries(root)
            h.update(pickle.dumps(top, protocol=5))
            dirs = [row[0] for row in top if stat.S_ISDIR(row[1])]
            half = len(dirs) // 2
            job = start_forked(partial(_walk_digest, dirs[half:])) if half >= 4 else None
            first = _walk_digest(dirs[:half] if job is not None else dirs)
            second = job.result() if job is not None else b""
            if first is None or second is None:
                return None
            h.update(first)
            h.update(second)
    except OSError:
        return None
    return h.hexdigest()


def _entries(d: str) -> list[tuple[Any, ...]]:
    """``(path, mode, size, mtime, ctime, inode[, link target, target state])`` per entry
    (hashed as a pickle of plain tuples: bytes and ints, never loaded back)."""
    rows: list[tuple[Any, ...]] = []
    with os.scandir(d) as it:
        for e in it:
            st = e.stat(follow_symlinks=False)
            row: tuple[Any, ...] = (
                os.fsencode(e.path),
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
            )
            if stat.S_ISLNK(st.st_mode):
                row += (os.fsencode(os.readlink(e.path)), link_target_state(e.path))
            rows.append(row)
    return rows


def _walk_digest(dirs: Sequence[str]) -> bytes | None:
    """Digest of every entry under ``dirs`` (each walked depth-first); None on an error."""
    h = hashlib.blake2b(digest_size=32)
    stack = list(reversed(dirs))
    try:
        while stack:
            rows = _entries(stack.pop())
            h.update(pickle.dumps(rows, protocol=5))
            stack.extend(
                row[0].decode("utf-8", "surrogateescape") for row in rows if stat.S_ISDIR(row[1])
            )
    except OSError:
        return None
    return h.digest()


def _file_state(path: str | None) -> str:
    """A plan or quarantine file by content (they are small): an edit is always a miss."""
    if not path:
        return "-"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _model_table_state() -> list[str]:
    """The model tables canonical ids come from (bf_assets.ingest.models; stdlib only)."""
    from bf_assets.ingest.models import ALIASES_ENV, DEFAULT_TABLE

    user = os.environ.get(ALIASES_ENV) or None
    return [_file_state(str(DEFAULT_TABLE)), f"models {user}", _file_state(user)]


@dataclass(slots=True)
class RunKey:
    mode: str  # "json" or "table"
    roots: tuple[str, ...]
    tasks_dir: str | None = None
    plan_path: str | None = None
    quarantine_path: str | None = None
    limits: str = ""

    def digest(self) -> str:
        parts = [
            f"format {FORMAT}",
            code_digest(),
            self.mode,
            *self.roots,
            f"tasks {self.tasks_dir}",
            tree_digest(self.tasks_dir),
            f"plan {self.plan_path}",
            _file_state(self.plan_path),
            f"quarantine {self.quarantine_path}",
            _file_state(self.quarantine_path),
            self.limits,
            *_model_table_state(),
        ]
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(slots=True)
class Hit:
    output: bytes
    exit_code: int


class RunCache:
    """One entry per key (the latest state wins): ``<dir>/runs/<key>.json`` + ``.out``."""

    def __init__(self, directory: str | os.PathLike[str], key: RunKey) -> None:
        self.dir = Path(directory) / "runs"
        self.key = key.digest()
        self.roots = key.roots

    @property
    def _meta(self) -> Path:
        return self.dir / f"{self.key}.json"

    @property
    def _blob(self) -> Path:
        return self.dir / f"{self.key}.out"

    def state(self) -> str | None:
        return roots_state(self.roots)

    def lookup(self, state: str | None) -> Hit | None:
        if state is None:
            return None
        try:
            meta = orjson.loads(self._meta.read_bytes())
            if meta.get("format") != FORMAT or meta.get("state") != state:
                return None
            output = self._blob.read_bytes()
        except (OSError, orjson.JSONDecodeError, AttributeError):
            return None
        if hashlib.sha256(output).hexdigest() != meta.get("sha256"):
            return None  # torn or tampered: review again
        code = meta.get("exit")
        return Hit(output, code) if isinstance(code, int) else None

    def store(self, state: str | None, output_file: str, exit_code: int) -> None:
        """Keep ``output_file`` (moved into the cache) for ``state``; a no-op when the roots
        changed during the review (the state differs now) or the cache cannot be written."""
        try:
            if state is None or self.state() != state:
                return
            h = hashlib.sha256()
            with open(output_file, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
            self.dir.mkdir(parents=True, exist_ok=True)
            os.replace(output_file, self._blob)
            meta = {"format": FORMAT, "state": state, "sha256": h.hexdigest(), "exit": exit_code}
            write_atomic(self._meta, orjson.dumps(meta), mode=0o600)
        except OSError:
            return

    def spool(self) -> tempfile._TemporaryFileWrapper[bytes] | None:
        """A temporary file in the cache for the output being produced (None if unwritable)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            return tempfile.NamedTemporaryFile(dir=self.dir, suffix=".tmp", delete=False)
        except OSError:
            return None


class Tee:
    """Writes to the real output and to the spool; losing the spool never loses output."""

    def __init__(self, out: object, spool: object | None) -> None:
        self.out = out
        self.spool = spool

    def write(self, data: bytes) -> int:
        self.out.write(data)  # type: ignore[attr-defined]
        if self.spool is not None:
            try:
                self.spool.write(data)  # type: ignore[attr-defined]
            except OSError:
                self.spool = None
        return len(data)
