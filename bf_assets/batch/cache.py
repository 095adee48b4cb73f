"""A review cache keyed by trial fingerprints: an unchanged trial is not read again.

A fingerprint covers every file of the trial directory (relative path, size, mtime, ctime
and inode, from one ``stat`` each: ``ctime`` moves on every write and cannot be set back by
a user, so a rewritten file is caught even when its mtime was restored), the trial's place
in the run root, the review options, the task tree the audits read, and the source of the
review code itself.  Any change to one of them is a miss.  Directory links are followed to
what they point at (a linked ``trajectory/`` inside the run root, a linked skill directory
of the task tree), each real directory once (a link cycle ends there); a link the readers
would not follow (out of the run root) counts by its target and the target's own stat.
Entries are JSON (never pickle): a cache directory shared between users cannot run code.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from bf_assets.ingest.discovery import TrialRef

# Kept light on purpose: ``bf-assets review --cache-dir`` consults the run-level entry
# (bf_assets.batch.runcache) before importing any review code.

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the whole bf_assets package
FORMAT = 2  # 2: directory links followed, file names escaped


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of the package's Python source: new review code never reuses old verdicts."""
    h = hashlib.sha256(f"format {FORMAT}".encode())
    for p in sorted(PACKAGE_DIR.rglob("*.py")):
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


# A tree with more entries than this is not digested: it is never a cache hit.
MAX_TREE_ENTRIES = 200_000


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class _TooBig(Exception):
    pass


def _digest_tree(
    h: Any,
    base: str,
    *,
    descend: Callable[[os.DirEntry[str], str], bool],
    follow: Callable[[str], bool],
) -> None:
    """Feed ``h`` one line per entry under ``base``, depth first in name order.

    A file counts by its ``stat`` (a link adds its target and the target's ``stat``); a
    directory is entered when ``descend(entry, rel)`` says so, a linked one only when
    ``follow(path)`` does too, and each real directory (device and inode) at most once."""
    try:
        top = os.stat(base)
    except OSError:
        h.update(b"unlistable\n")
        return
    seen = {(top.st_dev, top.st_ino)}
    stack = [(base, "")]
    count = 0
    while stack:
        d, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            h.update(_enc(f"{prefix}\0unlistable {exc.errno}\n"))
            continue
        for e in entries:
            count += 1
            if count > MAX_TREE_ENTRIES:
                raise _TooBig(base)
            rel = prefix + e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            target = ""
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(e.path)
                except OSError:
                    target = "?"
                try:
                    st = os.stat(e.path)
                except OSError:
                    h.update(_enc(f"{rel}\0link {target}\0dangling\n"))
                    continue
                if stat.S_ISDIR(st.st_mode) and not follow(e.path):
                    h.update(_enc(f"{rel}\0link {target}\0{_state(st)}\n"))
                    continue
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                entered = key not in seen and descend(e, rel)
                h.update(_enc(f"{rel}/\0link {target}\0{'in' if entered else 'out'}\n"))
                if entered:
                    seen.add(key)
                    stack.append((e.path, rel + "/"))
                continue
            h.update(_enc(f"{rel}\0link {target}\0{_state(st)}\n"))


def _state(st: os.stat_result) -> str:
    return f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def tree_digest(path: str | None) -> str:
    """Stat digest of a directory tree (the task tree the skill audit reads), through its
    directory links (the audits read through them); a tree too big to digest gets a digest
    of its own every time (never a hit).  Taken once per review batch (a batch starts with
    ``readers.clear_path_cache``): a long-lived process sees the tree's edits."""
    from bf_assets.ingest.readers import path_generation

    return _tree_digest(path, path_generation())


@lru_cache(maxsize=64)
def _tree_digest(path: str | None, generation: int) -> str:
    if not path:
        return "-"
    h = hashlib.sha256()
    try:
        _digest_tree(h, path, descend=lambda e, rel: True, follow=lambda p: True)
    except _TooBig:
        return "uncacheable " + os.urandom(16).hex()
    return h.hexdigest()


def link_target_state(path: str) -> str:
    """What a link leads to: the target's own stat, so a rewritten target is a miss too."""
    try:
        st = os.stat(path)
    except OSError:
        return "dangling"
    return f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def trial_fingerprint(ref: TrialRef, context: str) -> str | None:
    """Fingerprint of a trial and everything its review depends on; None when unreadable.

    Nested trials (a top-level directory holding trial markers) are left out: they are
    reviewed on their own.  A directory link is followed while it stays in the run root
    (the readers refuse the others: they count by their target)."""
    from bf_assets.ingest.discovery import TRIAL_ARTIFACT_DIRS, TRIAL_MARKERS

    h = hashlib.sha256(
        _enc(f"{context}\0{ref.root}\0{ref.rel_path}\0{ref.job_key}\0{ref.layout}\n")
    )
    real_root = os.path.realpath(ref.root)

    def within(p: str) -> bool:
        real = os.path.realpath(p)
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    def descend(e: os.DirEntry[str], rel: str) -> bool:
        return (
            "/" in rel
            or e.name in TRIAL_ARTIFACT_DIRS
            or not any(os.path.lexists(os.path.join(e.path, m)) for m in TRIAL_MARKERS)
        )

    try:
        os.scandir(ref.path).close()  # an unlistable trial has no fingerprint
        _digest_tree(h, ref.path, descend=descend, follow=within)
    except (OSError, _TooBig):
        return None
    return h.hexdigest()


class ReviewCache:
    def __init__(self, directory: str | os.PathLike[str], context: str) -> None:
        self.dir = Path(directory)
        self.context = hashlib.sha256(f"{code_digest()}\0{context}".encode()).hexdigest()
        self.hits = 0
        self.misses = 0

    def _path(self, fp: str) -> Path:
        return self.dir / fp[:2] / f"{fp}.json"

    def key(self, ref: TrialRef) -> str | None:
        return trial_fingerprint(ref, self.context)

    def get(self, ref: TrialRef, fp: str | None) -> Any:
        from bf_assets.findings import Finding
        from bf_assets.ingest.identity import Identity
        from bf_assets.ingest.scan import FileEntry
        from bf_assets.review.record import TrialReview

        if fp is None:
            return None
        try:
            data = orjson.loads(self._path(fp).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            self.misses += 1
            return None
        if data.get("fingerprint") != fp or data.get("format") != FORMAT:
            self.misses += 1
            return None
        self.hits += 1
        r = data["review"]
        return TrialReview(
            ref=ref,
            identity=Identity(**r["identity"]),
            layout=r["layout"],
            outcome=r["outcome"],
            healthy=r["healthy"],
            training_ready=r["training_ready"],
            verdict=r["verdict"],
            attribution=r["attribution"],
            findings=[Finding.from_dict(f) for f in r["findings"]],
            files=[FileEntry(**f) for f in r["files"]],
            skills=r["skills"],
            reward=r["reward"],
        )

    def put(self, fp: str | None, review: Any) -> None:
        if fp is None:
            return
        from bf_assets.ingest.readers import escape_name

        payload = {
            "format": FORMAT,
            "fingerprint": fp,
            "review": {
                "identity": review.identity.to_dict(),
                "layout": review.layout,
                "outcome": review.outcome,
                "healthy": review.healthy,
                "training_ready": review.training_ready,
                "verdict": review.verdict,
                "attribution": review.attribution,
                "findings": [f.to_dict() for f in review.findings],
                "files": [
                    {
                        "path": escape_name(f.path),
                        "size": f.size,
                        "sha256": f.sha256,
                        "lines": f.lines,
                        "issue": f.issue,
                    }
                    for f in review.files
                ],
                "skills": review.skills,
                "reward": review.reward,
            },
        }
        try:
            data = orjson.dumps(payload)
        except orjson.JSONEncodeError:
            return  # not writable as JSON: not cached (the review itself is reported)
        path = self._path(fp)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)  # atomic: a reader never sees half an entry
        except OSError:
            return  # a cache that cannot be written only costs time
