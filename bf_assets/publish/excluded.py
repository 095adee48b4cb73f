"""``meta/excluded.jsonl``: every trial a release excludes, with its reason, one per line.

The list grows with the corpus, so it is a file of its own: written one trial at a time as
the bundle is built, checksummed in the manifest like every other published file, and read
back line by line by the publish gate, never as one document.  ``meta/manifest.json`` keeps
the counts (per reason, per check) and a pointer to it (``excluded_trials``).

A line is the trial's export decision (``Decision.to_dict()``: job, rollout, path, slot
fields, outcome, verdict, reason, detail), cleaned like an export row, as compact JSON with
sorted keys.  Lines come in the decision's exclusion order (job, rollout, path), so the same
decision always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bf_assets.dataset.decide import Exclusion
from bf_assets.redact.clean import Cleaner

EXCLUDED_PATH = "meta/excluded.jsonl"
REQUIRED_KEYS = ("job", "rollout", "reason")


def excluded_line(e: Exclusion, cleaner: Cleaner | None = None) -> bytes:
    """One excluded trial's line (newline included), cleaned like an export row."""
    value = (cleaner or Cleaner()).value(e.to_dict())
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) + b"\n"


def write_excluded(path: Path, excluded: Iterable[Exclusion]) -> int:
    """Write the lines of ``excluded`` to ``path`` one at a time; the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cleaner = Cleaner()  # one cache of cleaned strings for the whole file
    n = 0
    with path.open("wb", buffering=1 << 20) as fh:
        for e in excluded:
            fh.write(excluded_line(e, cleaner))
            n += 1
    return n


@dataclass(frozen=True, slots=True)
class ExcludedLine:
    """A line as read back: its number (1-based), its bytes and its record (``None`` when
    the line is not a JSON object naming a job, a rollout and a reason)."""

    number: int
    raw: bytes
    record: dict[str, Any] | None


def read_excluded(path: Path) -> Iterator[ExcludedLine]:
    """The lines of an excluded-trials file, one at a time (raises ``OSError``)."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            yield ExcludedLine(n, raw, _record(raw))


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in REQUIRED_KEYS):
        return None
    return doc


def excluded_pointer(n: int) -> dict[str, Any]:
    """What the manifest says of the file (``excluded_trials``)."""
    return {"path": EXCLUDED_PATH, "trials": n}


def pointed_path(manifest: dict[str, Any]) -> str | None:
    """The excluded-trials file a manifest points at, when it names the expected one."""
    ptr = manifest.get("excluded_trials")
    path = ptr.get("path") if isinstance(ptr, dict) else None
    return path if path == EXCLUDED_PATH else None


def pointed_count(manifest: dict[str, Any]) -> int | None:
    ptr = manifest.get("excluded_trials")
    n = ptr.get("trials") if isinstance(ptr, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None
