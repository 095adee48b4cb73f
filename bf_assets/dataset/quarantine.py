"""Manual quarantine decisions (``quarantine.yaml`` or JSON) and the effective verdict.

The file is a list of entries::

    - trial: jobs/2026-11-02__10-00-00/citation-check__3f9a0c1d   # relative to a run root
      action: quarantine        # or release
      reason: "suspicious perfect score"
      by: reviewer-handle
      at: 2026-11-03

Every key is required and no other key is allowed (:class:`QuarantineError` otherwise).

**Matching rule.** An entry's ``trial`` path (posix, ``./`` and trailing ``/`` ignored) is
compared with the trial's full path *run root + rel_path*.  It matches when it is a suffix
of that full path, part-wise, and names at least the trial directory and its parent (or the
whole path when the trial is the root itself).  So ``<job>/<trial>``, ``jobs/<job>/<trial>``
and ``<root-name>/<job>/<trial>`` all match a trial at ``<root>/<job>/<trial>``, whatever the
run root is called, and a trial at ``<root>/jobs/<job>/<trial>`` is matched by
``<job>/<trial>`` too.  A ``quarantine`` entry that matches several trials holds them all; a
``release`` entry that matches several is ambiguous and raises.  When several entries hit one
trial the latest ``at`` wins, and on the same date ``quarantine`` wins over ``release``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any

from bf_assets.contract import Severity, Verdict
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.plan import load_document
from bf_assets.findings import Finding
from bf_assets.review.record import TrialReview

ACTIONS = ("quarantine", "release")
ENTRY_KEYS = ("trial", "action", "reason", "by", "at")


class QuarantineError(ValueError):
    """The quarantine file is unreadable, incomplete, or an entry is ambiguous."""


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    trial: str
    action: str
    reason: str
    by: str
    at: str  # ISO date (or date-time) as written
    index: int = 0  # position in the file, for messages

    @property
    def parts(self) -> tuple[str, ...]:
        return _parts(self.trial)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "action": self.action,
            "reason": self.reason,
            "by": self.by,
            "at": self.at,
        }


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", "."))


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise QuarantineError(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    return value.strip()


def _date(value: Any, where: str) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str) and value.strip():
        s = value.strip()
        try:
            datetime.fromisoformat(s)
        except ValueError:
            try:
                date.fromisoformat(s)
            except ValueError:
                raise QuarantineError(
                    f"{where}: 'at' must be an ISO date such as 2026-11-03, got {s!r}"
                ) from None
        return s
    raise QuarantineError(f"{where}: 'at' (the date of the decision) is required, got {value!r}")


def parse_quarantine(data: Any, origin: str = "quarantine") -> list[QuarantineEntry]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise QuarantineError(f"{origin}: must be a list of entries, got {type(data).__name__}")
    out = []
    for i, raw in enumerate(data):
        where = f"{origin}: entry {i + 1}"
        if not isinstance(raw, Mapping):
            raise QuarantineError(f"{where}: must be a mapping, got {type(raw).__name__}")
        unknown = sorted(str(k) for k in raw if k not in ENTRY_KEYS)
        if unknown:
            raise QuarantineError(
                f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(ENTRY_KEYS)}"
            )
        trial = _text(raw, "trial", where)
        if not _parts(trial) or PurePosixPath(trial).is_absolute() or ".." in _parts(trial):
            raise QuarantineError(f"{where}: 'trial' must be a path relative to a run root")
        action = _text(raw, "action", where)
        if action not in ACTIONS:
            raise QuarantineError(
                f"{where}: 'action' must be quarantine or release, got {action!r}"
            )
        reason = _text(raw, "reason", where)
        by = _text(raw, "by", where)
        at = _date(raw.get("at"), where)
        out.append(QuarantineEntry(trial, action, reason, by, at, index=i + 1))
    return out


def load_quarantine(path: str | os.PathLike[str]) -> list[QuarantineEntry]:
    return parse_quarantine(load_document(path, QuarantineError), str(path))


def full_parts(review: TrialReview) -> tuple[str, ...]:
    root = _parts(PurePosixPath(review.ref.root).as_posix())
    rel = _parts(review.ref.rel_path)
    return root + rel


def entry_matches(entry: QuarantineEntry, review: TrialReview) -> bool:
    """The matching rule of the module docstring."""
    e = entry.parts
    full = full_parts(review)
    if not e or len(e) > len(full) or full[len(full) - len(e) :] != e:
        return False
    return len(e) >= min(2, len(full))


def _wins(new: QuarantineEntry, old: QuarantineEntry) -> bool:
    if new.at != old.at:
        return new.at > old.at
    return new.action == "quarantine" and old.action == "release"


def apply_quarantine(
    reviews: Sequence[TrialReview], entries: Iterable[QuarantineEntry]
) -> dict[TrialKey, QuarantineEntry]:
    """Map each trial a quarantine entry names to the entry that decides it."""
    out: dict[TrialKey, QuarantineEntry] = {}
    for entry in entries:
        hits = [r for r in reviews if entry_matches(entry, r)]
        if entry.action == "release" and len(hits) > 1:
            names = ", ".join(sorted(r.ref.rel_path for r in hits)[:5])
            raise QuarantineError(
                f"entry {entry.index} ({entry.trial}): a release must name one trial, "
                f"it matches {len(hits)}: {names}; give the path from the run root"
            )
        for r in hits:
            key = trial_key(r)
            old = out.get(key)
            if old is None or _wins(entry, old):
                out[key] = entry
    return out


def unmatched_entries(
    reviews: Sequence[TrialReview], entries: Iterable[QuarantineEntry]
) -> list[QuarantineEntry]:
    """Entries that name no reviewed trial (report them: a typo silently releases nothing)."""
    return [e for e in entries if not any(entry_matches(e, r) for r in reviews)]


def effective_verdict(
    review: TrialReview,
    entry: QuarantineEntry | None = None,
    extra: Iterable[Finding] = (),
) -> str:
    """The trial's verdict after dataset-level findings (``extra``) and a manual decision.

    * any blocker (the gate's or ``extra``'s) → ``rejected``, whatever the entry says;
    * ``quarantine`` entry → ``quarantined``;
    * ``release`` entry → the trial's quarantine-severity findings are cleared → ``publishable``;
    * otherwise a quarantine-severity finding → ``quarantined``, else ``publishable``.
    """
    findings = [*review.findings, *extra]
    severities = {f.severity for f in findings}
    if review.verdict == Verdict.REJECTED or Severity.BLOCKER in severities:
        return Verdict.REJECTED.value
    if entry is not None and entry.action == "quarantine":
        return Verdict.QUARANTINED.value
    if entry is not None and entry.action == "release":
        return Verdict.PUBLISHABLE.value
    if review.verdict == Verdict.QUARANTINED or Severity.QUARANTINE in severities:
        return Verdict.QUARANTINED.value
    return Verdict.PUBLISHABLE.value


def effective_verdicts(
    reviews: Sequence[TrialReview],
    applied: Mapping[TrialKey, QuarantineEntry],
    extra: Mapping[TrialKey, Sequence[Finding]] | None = None,
) -> dict[TrialKey, str]:
    """``effective_verdict`` for every trial (``extra``: e.g. ``Coverage.trial_findings``)."""
    extra = extra or {}
    out = {}
    for r in reviews:
        k = trial_key(r)
        out[k] = effective_verdict(r, applied.get(k), extra.get(k, ()))
    return out
