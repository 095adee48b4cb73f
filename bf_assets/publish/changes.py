"""What changed since the previous release, read from its manifest.

Compares the trials a new release exports and excludes with the ones the previous release's
``meta/manifest.json`` lists: trials **added** to the export, **removed** from it (with the
reason they are excluded now, when they still are reviewed), **re-reviewed** (exported in
both, but their artifacts changed: another ``rollout_id``) and **verdict flips** (the same
trial's verdict differs).  A release whose trials are exactly the previous release's keeps
the previous release's own changelog, so publishing unchanged input gives byte-identical
files (the release stays content-addressed and idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

Key = tuple[str, str]
SHOWN = 20  # trials listed per kind on the card (the manifest lists them all)


def load_previous(path: str | Path | None) -> dict[str, Any] | None:
    """The previous release's manifest, or ``None`` (no release yet, or unreadable)."""
    if path is None:
        return None
    try:
        doc = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("source_trials"), list) else None


def _key(d: Mapping[str, Any]) -> Key:
    return (str(d.get("job")), str(d.get("rollout")))


def _state(
    sources: Iterable[Mapping[str, Any]], excluded: Iterable[Mapping[str, Any]]
) -> tuple[dict[Key, str], dict[Key, tuple[str, str]]]:
    """``({key: rollout_id} of exported trials, {key: (verdict, reason)} of excluded ones)``."""
    exported = {_key(s): str(s.get("rollout_id")) for s in sources}
    held = {_key(e): (str(e.get("verdict")), str(e.get("reason"))) for e in excluded}
    return exported, held


def release_changes(
    previous: Mapping[str, Any] | None,
    sources: Sequence[Mapping[str, Any]],
    excluded: Sequence[Mapping[str, Any]],
) -> dict[str, Any] | None:
    """The changelog of a release against ``previous`` (``None`` for a first release)."""
    if previous is None:
        return None
    old_exp, old_held = _state(previous.get("source_trials") or [], previous.get("excluded") or [])
    new_exp, new_held = _state(sources, excluded)
    if (old_exp, old_held) == (new_exp, new_held):
        # the same trials as the release in place: keep its changelog (a first release's
        # ``None`` included), so the new files are byte for byte the ones published
        if "changes" in previous:
            kept = previous["changes"]
            return dict(kept) if isinstance(kept, dict) else None
        return _empty(previous)  # a manifest of an older version, without a changelog

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
        "previous_release": previous.get("release_tag"),
        "previous_verdict": previous.get("release_verdict"),
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
    out.append(
        f"Against `{prev}` (verdict {changes.get('previous_verdict') or 'unknown'}), read "
        "from its manifest:\n\n"
    )
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
            out.append(f"  - {item}\n")
        if len(items) > SHOWN:
            out.append(f"  - … {len(items) - SHOWN} more (all in `meta/manifest.json`)\n")
    return "".join(out)
