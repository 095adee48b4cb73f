"""What changed since the previous release, read from its manifest.

Compares the trials a new release exports and excludes with the ones the previous release's
``meta/manifest.json`` and ``meta/excluded.jsonl`` list: trials **added** to the export, **removed** from it (with the
reason they are excluded now, when they still are reviewed), **re-reviewed** (exported in
both, but their artifacts changed: another ``rollout_id``) and **verdict flips** (the same
trial's verdict differs).  A release whose trials are exactly the previous release's keeps
the previous release's own changelog, so publishing unchanged input gives byte-identical
files (the release stays content-addressed and idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bf_assets.dataset.decide import Exclusion
from bf_assets.dataset.reportmarkup import md_code, md_text
from bf_assets.publish.excluded import pointed_path, read_excluded

Key = tuple[str, str]
SHOWN = 20  # trials listed per kind on the card (the manifest lists them all)


@dataclass(slots=True)
class Previous:
    """The release in place: its manifest and, per excluded trial, ``(verdict, reason)``."""

    manifest: dict[str, Any]
    held: dict[Key, tuple[str, str]]

    @classmethod
    def of(cls, manifest: dict[str, Any], excluded: Iterable[Mapping[str, Any]]) -> Previous:
        held = {_key(e): (str(e.get("verdict")), str(e.get("reason"))) for e in excluded}
        return cls(manifest, held)


def load_previous(path: str | Path | None) -> Previous | None:
    """The previous release, from its manifest and the excluded-trials file it points at
    (read a line at a time; a version-1 manifest lists them itself), or ``None`` (no release
    yet, or unreadable)."""
    if path is None:
        return None
    try:
        doc = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("source_trials"), list):
        return None
    listed = doc.pop("excluded", None)
    if isinstance(listed, list):  # manifest version 1
        return Previous.of(doc, (e for e in listed if isinstance(e, dict)))
    rel = pointed_path(doc)
    if rel is None:
        return None
    try:
        return Previous.of(doc, _records(Path(path).parent.parent / rel))
    except (OSError, ValueError):
        return None


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in read_excluded(path):
        if line.record is None:
            raise ValueError(f"{path} line {line.number} is not an excluded trial")
        yield line.record


def _key(d: Mapping[str, Any]) -> Key:
    return (str(d.get("job")), str(d.get("rollout")))


def _exported(sources: Iterable[Mapping[str, Any]]) -> dict[Key, str]:
    """``{key: rollout_id}`` of exported trials (``source_trials`` records)."""
    return {_key(s): str(s.get("rollout_id")) for s in sources}


def release_changes(
    previous: Previous | None,
    sources: Sequence[Mapping[str, Any]],
    excluded: Iterable[Exclusion],
) -> dict[str, Any] | None:
    """The changelog of a release against ``previous`` (``None`` for a first release)."""
    if previous is None:
        return None
    manifest = previous.manifest
    old_exp, old_held = _exported(manifest.get("source_trials") or []), previous.held
    new_exp = _exported(sources)
    new_held = {e.key: (e.verdict, e.reason) for e in excluded}
    if (old_exp, old_held) == (new_exp, new_held):
        # the same trials as the release in place: keep its changelog (a first release's
        # ``None`` included), so the new files are byte for byte the ones published
        if "changes" in manifest:
            kept = manifest["changes"]
            return dict(kept) if isinstance(kept, dict) else None
        return _empty(manifest)  # a manifest of an older version, without a changelog

    def show(k: Key) -> str:
        return f"{k[0]}/{k[1]}"

    added = sorted(show(k) for k in new_exp.keys() - old_exp.keys())
    removed = sorted(
        f"{show(k)} ({new_held[k][1] if k in new_held else 'no longer reviewed'})"
        for k in old_exp.keys() - new_exp.keys()
    )
    re_reviewed = sorted(
        show(k) for k in new_exp.keys() & old_exp.keys() if new_exp[k] != old_exp[k]
    )
    old_verdict = {k: "publishable" for k in old_exp} | {k: v for k, (v, _) in old_held.items()}
    new_verdict = {k: "publishable" for k in new_exp} | {k: v for k, (v, _) in new_held.items()}
    flips = sorted(
        f"{show(k)}: {old_verdict[k]} -> {new_verdict[k]}"
        for k in old_verdict.keys() & new_verdict.keys()
        if old_verdict[k] != new_verdict[k]
    )
    return {
        "previous_release": manifest.get("release_tag"),
        "previous_verdict": manifest.get("release_verdict"),
        "added": added,
        "removed": removed,
        "re_reviewed": re_reviewed,
        "verdict_flips": flips,
    }


def _empty(previous: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "previous_release": previous.get("release_tag"),
        "previous_verdict": previous.get("release_verdict"),
        "added": [],
        "removed": [],
        "re_reviewed": [],
        "verdict_flips": [],
    }


def changes_markdown(changes: Mapping[str, Any] | None) -> str:
    """The card's section: counts per kind and the first trials of each."""
    out = ["## Changes since the previous release\n\n"]
    if changes is None:
        out.append("This is the first release of this dataset folder.\n")
        return "".join(out)
    prev = changes.get("previous_release") or "the previous release"
    verdict = changes.get("previous_verdict") or "unknown"
    out.append(f"Against {md_code(prev)} (verdict {md_text(verdict)}), read from its manifest:\n\n")
    kinds = (
        ("added", "added to the export"),
        ("removed", "removed from the export (why, now)"),
        ("re_reviewed", "re-reviewed: exported again with changed artifacts"),
        ("verdict_flips", "verdict changed"),
    )
    for key, what in kinds:
        items = list(changes.get(key) or [])
        out.append(f"- {len(items)} {what}\n")
        for item in items[:SHOWN]:
            out.append(f"  - {md_text(item)}\n")
        if len(items) > SHOWN:
            out.append(f"  - … {len(items) - SHOWN} more (all in `meta/manifest.json`)\n")
    return "".join(out)
