"""A review cache keyed by trial fingerprints: an unchanged trial is not read again.

A fingerprint covers every file of the trial directory (relative path, size, mtime, ctime
and inode, from one ``stat`` each: ``ctime`` moves on every write and cannot be set back by
a user, so a rewritten file is caught even when its mtime was restored), the trial's place
in the run root, the review options, the task tree the audits read, and the source of the
review code itself.  Any change to one of them is a miss.  Entries are JSON (never pickle):
a cache directory shared between users cannot run code.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from bf_assets.ingest.discovery import TrialRef

# Kept light on purpose: ``bf-assets review --cache-dir`` consults the run-level entry
# (bf_assets.runcache) before importing any review code.

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the whole bf_assets package
FORMAT = 1


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of the package's Python source: new review code never reuses old verdicts."""
    h = hashlib.sha256(f"format {FORMAT}".encode())
    for p in sorted(PACKAGE_DIR.rglob("*.py")):
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=64)
def tree_digest(path: str | None) -> str:
    """Stat digest of a directory tree (the task tree the skill audit reads)."""
    if not path:
        return "-"
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            h.update(
                f"{os.path.relpath(p, path)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n".encode()
            )
    return h.hexdigest()


def link_target_state(path: str) -> str:
    """What a link leads to: the target's own stat, so a rewritten target is a miss too."""
    try:
        st = os.stat(path)
    except OSError:
        return "dangling"
    return f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def trial_fingerprint(ref: TrialRef, context: str) -> str | None:
    """Fingerprint of a trial and everything its review depends on; None when unreadable."""
    from bf_assets.ingest.discovery import TRIAL_ARTIFACT_DIRS, TRIAL_MARKERS

    h = hashlib.sha256(
        f"{context}\0{ref.root}\0{ref.rel_path}\0{ref.job_key}\0{ref.layout}\n".encode()
    )
    base = ref.path
    stack = [(base, "")]
    try:
        while stack:
            d, prefix = stack.pop()
            entries = sorted(os.scandir(d), key=lambda e: e.name)
            for e in entries:
                rel = prefix + e.name
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    nested = (
                        not prefix
                        and e.name not in TRIAL_ARTIFACT_DIRS
                        and any(os.path.lexists(os.path.join(e.path, m)) for m in TRIAL_MARKERS)
                    )
                    if not nested:
                        stack.append((e.path, rel + "/"))
                    continue
                target = ""
                if stat.S_ISLNK(st.st_mode):
                    target = f"{os.readlink(e.path)}\0{link_target_state(e.path)}"
                h.update(
                    f"{rel}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0{target}\n".encode()
                )
    except OSError:
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
                        "path": f.path,
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
        path = self._path(fp)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(orjson.dumps(payload))
            os.replace(tmp, path)  # atomic: a reader never sees half an entry
        except OSError:
            return  # a cache that cannot be written only costs time
