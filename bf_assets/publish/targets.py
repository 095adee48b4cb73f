"""What every publish target shares: the bundle's files as its manifest lists them, the
result record and the error type.

A bundle folder (``bf_assets.publish.bundle``) holds ``README.md``, ``report/``,
``data/<config>/…``, ``meta/excluded.jsonl`` (every excluded trial with its reason, a line
each) and ``meta/manifest.json`` + ``meta/checksums.sha256``.  Every target
(``publish.local``, ``publish.hub``) publishes the files the manifest lists (plus the
manifest and checksums), idempotently: publishing an unchanged bundle changes nothing, and a
target always verifies what it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH
from bf_assets.publish.shards import sha256_file

OWNED_DIRS = ("data", "meta", "report")  # the publisher owns these folders of a target entirely
CARD = "README.md"
OWNED_FILES = (CARD, "LICENSE")  # top-level files the publisher owns


class PublishError(RuntimeError):
    """Publishing failed; the message says why and never contains a token."""


@dataclass(slots=True)
class PublishResult:
    target: str  # "local" or "hub"
    location: str  # folder or repo URL
    changed: bool
    files: int
    manifest_sha256: str
    verified: bool
    commit: str | None = None
    commit_url: str | None = None
    tag: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "location": self.location,
            "changed": self.changed,
            "files": self.files,
            "manifest_sha256": self.manifest_sha256,
            "verified": self.verified,
            "commit": self.commit,
            "commit_url": self.commit_url,
            "tag": self.tag,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class BundleFiles:
    """The files of a bundle as its manifest lists them: ``{path: (sha256, bytes)}``."""

    root: Path
    files: dict[str, tuple[str, int]]
    manifest_sha256: str

    @classmethod
    def read(cls, bundle_dir: Path) -> BundleFiles:
        root = Path(bundle_dir)
        try:
            doc = orjson.loads((root / MANIFEST_PATH).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise PublishError(
                f"bundle {root.name} has no readable {MANIFEST_PATH}: {exc}"
            ) from exc
        files = {str(f["path"]): (str(f["sha256"]), int(f["bytes"])) for f in doc["files"]}
        for extra in (MANIFEST_PATH, CHECKSUMS_PATH):
            p = root / extra
            if extra not in files and p.is_file():
                files[extra] = (sha256_file(p), p.stat().st_size)
        for rel, (sha, size) in files.items():
            p = root / rel
            if not p.is_file() or p.stat().st_size != size or sha256_file(p) != sha:
                raise PublishError(f"bundle file {rel} does not match its manifest checksum")
        return cls(root, files, files[MANIFEST_PATH][0])

    def ordered(self) -> list[str]:
        """Data first, then the card and checksums, the manifest last (the completion mark)."""

        def rank(p: str) -> tuple[int, str]:
            order = 0 if p.startswith("data/") else 3 if p == MANIFEST_PATH else 1
            return (order, p)

        return sorted(self.files, key=rank)
