"""The review cache, keyed by trial fingerprints: an unchanged trial is not read again.

A key is the trial's fingerprint (:func:`bf_assets.ingest.discovery.trial_fingerprint`)
under the review's context.  The fingerprint covers every file of the trial directory
(relative path, size, mtime, ctime and inode, from one ``stat`` each: ``ctime`` moves on
every write and cannot be set back by a user, so a rewritten file is caught even when its
mtime was restored) and the trial's place in the run root; the context, the review options,
the task tree the audits read, and the source of the review code itself.  Any change to one
of them is a miss.  Directory links are followed to what they point at (a linked
``trajectory/`` inside the run root, a linked skill directory of the task tree), each real
directory once (a link cycle ends there); a link the readers would not follow (out of the
run root) counts by its target and the target's own stat.  Entries are JSON (never
pickle): a cache directory shared between users cannot run code.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from bf_assets.files import write_atomic
from bf_assets.ingest.treeprint import TreeTooBig, digest_tree, in_context

if TYPE_CHECKING:
    from bf_assets.ingest.discovery import TrialRef

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
        digest_tree(h, path, descend=lambda e, rel: True, follow=lambda p: True)
    except TreeTooBig:
        return "uncacheable " + os.urandom(16).hex()
    return h.hexdigest()


class ReviewCache:
    def __init__(self, directory: str | os.PathLike[str], context: str) -> None:
        self.dir = Path(directory)
        self.context = hashlib.sha256(f"{code_digest()}\0{context}".encode()).hexdigest()

    def _path(self, fp: str) -> Path:
        return self.dir / fp[:2] / f"{fp}.json"

    def key(self, ref: TrialRef) -> str | None:
        """The trial's fingerprint under the review's context; None when it has none."""
        from bf_assets.ingest.discovery import trial_fingerprint

        fp = trial_fingerprint(ref)
        return None if fp is None else in_context(self.context, fp)

    def get(self, ref: TrialRef, fp: str | None) -> Any:
        from bf_assets.findings import Finding
        from bf_assets.ingest.identity import Identity
        from bf_assets.ingest.scan import FileEntry
        from bf_assets.review.record import TrialReview
        from bf_assets.review.story import TrialStory

        if fp is None:
            return None
        try:
            data = orjson.loads(self._path(fp).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if data.get("fingerprint") != fp or data.get("format") != FORMAT:
            return None
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
            story=TrialStory.from_dict(r.get("story")),
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
                "story": review.story.to_dict(),
            },
        }
        try:
            data = orjson.dumps(payload)
        except orjson.JSONEncodeError:
            return  # not writable as JSON: not cached (the review itself is reported)
        path = self._path(fp)
        try:
            write_atomic(path, data, mode=0o600)  # a reader never sees half an entry
        except OSError:
            return  # a cache that cannot be written only costs time
