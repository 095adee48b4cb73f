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

**Limits** (``docs/plan-format.md``): the file is read within
:mod:`bf_assets.dataset.inputlimits` and holds at most ``$BF_QUARANTINE_MAX_ENTRIES``
entries (default 10,000); the reading stops at the first entry past the limit.  Entries are
matched to trials through an index of the trials' last two path parts, so the time taken
grows with entries plus trials, not their product.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from bf_assets.contract import Severity, Verdict
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.inputlimits import (
    DocumentLimits,
    env_limit,
    load_limited,
    max_bytes,
    parse_yaml,
    quarantine_values,
    shown,
)
from bf_assets.files import exclusive_lock, write_atomic
from bf_assets.findings import Finding
from bf_assets.review.record import TrialReview

ACTIONS = ("quarantine", "release")
ENTRY_KEYS = ("trial", "action", "reason", "by", "at")
MAX_ENTRIES_ENV = "BF_QUARANTINE_MAX_ENTRIES"
DEFAULT_MAX_ENTRIES = 10_000


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
    """``PurePosixPath(path)``'s parts (``\\`` taken for ``/``) without ``""`` and ``"."``, by
    string operations only: ``pathlib`` interns every part it parses, and the table of
    interned strings never shrinks, so parsing every trial's path would grow it for good."""
    p = path.replace("\\", "/")
    head: tuple[str, ...] = ()
    if p.startswith("/"):  # POSIX keeps exactly two leading slashes, collapses more to one
        head = ("//",) if p.startswith("//") and not p.startswith("///") else ("/",)
    return head + tuple(x for x in p.split("/") if x not in ("", "."))


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise QuarantineError(f"{where}: '{key}' must be a non-empty string, got {shown(value)}")
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
                    f"{where}: 'at' must be an ISO date such as 2026-11-03, got {shown(s)}"
                ) from None
        return s
    raise QuarantineError(
        f"{where}: 'at' (the date of the decision) is required, got {shown(value)}"
    )


def quarantine_limits() -> DocumentLimits:
    """The limits a quarantine file is read within (``$BF_QUARANTINE_MAX_ENTRIES``)."""
    entries = env_limit(MAX_ENTRIES_ENV, DEFAULT_MAX_ENTRIES, QuarantineError)
    return DocumentLimits(
        max_bytes=max_bytes(QuarantineError),
        max_values=quarantine_values(entries),
        max_items=entries,
        items_env=MAX_ENTRIES_ENV,
        kind="quarantine file",
    )


def parse_quarantine(data: Any, origin: str = "quarantine") -> list[QuarantineEntry]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise QuarantineError(f"{origin}: must be a list of entries, got {type(data).__name__}")
    limit = env_limit(MAX_ENTRIES_ENV, DEFAULT_MAX_ENTRIES, QuarantineError)
    if len(data) > limit:
        raise QuarantineError(
            f"{origin}: {len(data):,} entries, over the limit of {limit:,} "
            f"({MAX_ENTRIES_ENV} raises it)"
        )
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
                f"{where}: 'action' must be quarantine or release, got {shown(action)}"
            )
        reason = _text(raw, "reason", where)
        by = _text(raw, "by", where)
        at = _date(raw.get("at"), where)
        out.append(QuarantineEntry(trial, action, reason, by, at, index=i + 1))
    return out


def load_quarantine(path: str | os.PathLike[str]) -> list[QuarantineEntry]:
    return parse_quarantine(load_limited(path, QuarantineError, quarantine_limits()), str(path))


def full_parts(review: TrialReview) -> tuple[str, ...]:
    root = _parts(PurePosixPath(review.ref.root).as_posix())  # a few roots: parsed as before
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


class _TrialIndex:
    """The reviewed trials by the last two parts of their full path (every trial an entry
    can match ends with the entry's last two parts: see :func:`entry_matches`)."""

    def __init__(self, reviews: Sequence[TrialReview]) -> None:
        self.by_tail: dict[tuple[str, ...], list[TrialReview]] = {}
        for r in reviews:
            self.by_tail.setdefault(full_parts(r)[-2:], []).append(r)

    def hits(self, entry: QuarantineEntry) -> list[TrialReview]:
        tail = entry.parts[-2:]
        return [r for r in self.by_tail.get(tail, ()) if entry_matches(entry, r)]


def apply_quarantine(
    reviews: Sequence[TrialReview], entries: Iterable[QuarantineEntry]
) -> dict[TrialKey, QuarantineEntry]:
    """Map each trial a quarantine entry names to the entry that decides it."""
    out: dict[TrialKey, QuarantineEntry] = {}
    entries = list(entries)
    if not entries:
        return out
    index = _TrialIndex(reviews)
    for entry in entries:
        hits = index.hits(entry)
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
    entries = list(entries)
    if not entries:
        return []
    index = _TrialIndex(reviews)
    return [e for e in entries if not index.hits(e)]


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


# --------------------------------------------------------------------------- writing entries
#
# ``bf-assets quarantine hold|release`` appends entries instead of a person editing the file:
# the trial is named the way the matching rule expects, the entry is checked against the
# reviewed corpus first, and the file is replaced atomically with its old text (comments
# included) kept byte for byte in front of the new entry.

NEW_FILE_HEADER = (
    "# Manual quarantine decisions (plan-format.md): trial, action, reason, by, at.\n"
    "# Append with `bf-assets quarantine hold|release TRIAL --reason ... --by ...`.\n"
)


def trial_path(review: TrialReview) -> str:
    """The path an entry names ``review`` by: the run root's name, then the trial's path
    under it (``jobs/<job>/<trial>``); at least two parts (the matching rule's minimum)."""
    full = full_parts(review)
    rel = _parts(review.ref.rel_path)
    return "/".join(full[-max(2, len(rel) + 1) :])


def _near(text: str, reviews: Sequence[TrialReview], n: int = 3) -> list[str]:
    import difflib

    paths = sorted({trial_path(r) for r in reviews})
    given = _parts(text)
    scores: list[tuple[float, str]] = []
    for p in paths:
        parts = _parts(p)
        tail = "/".join(parts[-len(given) :]) if given else p
        ratio = max(
            difflib.SequenceMatcher(None, "/".join(given), tail).ratio(),
            difflib.SequenceMatcher(None, given[-1] if given else "", parts[-1]).ratio(),
        )
        scores.append((ratio, p))
    scores.sort(key=lambda s: (-s[0], s[1]))
    return [p for ratio, p in scores[:n] if ratio >= 0.5]


def find_trial(reviews: Sequence[TrialReview], text: str) -> TrialReview:
    """The one reviewed trial ``text`` names: a trial directory on disk, a path under a run
    root (the matching rule), or a rollout name.  Anything else raises, naming near matches."""
    given = text.strip()
    if not given:
        raise QuarantineError("name a trial: a path relative to a run root")
    if os.path.isdir(given):
        real = os.path.realpath(given)
        hits = [r for r in reviews if os.path.realpath(r.ref.path) == real]
        if len(hits) == 1:
            return hits[0]
    parts = _parts(given)
    if not PurePosixPath(given).is_absolute() and ".." not in parts and parts:
        probe = QuarantineEntry(given, "quarantine", "-", "-", "-")
        hits = [r for r in reviews if entry_matches(probe, r)]
        if not hits and len(parts) == 1:
            hits = [r for r in reviews if r.ref.rollout == parts[0]]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            names = ", ".join(sorted(trial_path(r) for r in hits)[:5])
            raise QuarantineError(
                f"{given!r} names {len(hits)} reviewed trials ({names}); give the path from the run root"
            )
    near = _near(given, reviews)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise QuarantineError(
        f"{given!r} names no reviewed trial ({len(reviews)} reviewed under the run roots){hint}"
    )


def new_entry(
    trial: str, action: str, reason: str, by: str, at: datetime | None = None
) -> QuarantineEntry:
    """An entry dated ``at`` (default: now, to the second; a later decision of the same day
    then wins over an earlier one, which a bare date could not say)."""
    if action not in ACTIONS:
        raise QuarantineError(f"action must be quarantine or release, got {action!r}")
    when = (at or datetime.now()).replace(microsecond=0)
    raw = {"trial": trial, "action": action, "reason": reason, "by": by, "at": when}
    [entry] = parse_quarantine([raw], "new entry")
    return entry


def _entry_yaml(entry: QuarantineEntry) -> str:
    import yaml

    d: dict[str, Any] = entry.to_dict()
    at = datetime.fromisoformat(entry.at)
    d["at"] = at.date() if len(entry.at) == 10 else at
    return yaml.safe_dump([d], sort_keys=False, allow_unicode=True, width=1 << 20)


def append_entry(path: str | os.PathLike[str], entry: QuarantineEntry) -> list[QuarantineEntry]:
    """Append ``entry`` to the quarantine file (created when absent) and return every entry
    of the new file.  The old text is kept as it is; the new file is checked to parse to the
    old entries plus this one before it replaces the old one (one atomic write, under a
    lock on ``.<name>.lock`` beside it so two appends never lose one)."""
    import json

    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder / f".{p.name}.lock"):
        exists = p.exists()
        old = load_quarantine(p) if exists else []  # within the limits, before the text
        old_text = p.read_text(encoding="utf-8") if exists else None
        limit = env_limit(MAX_ENTRIES_ENV, DEFAULT_MAX_ENTRIES, QuarantineError)
        if len(old) >= limit:
            raise QuarantineError(
                f"{p}: holds {len(old):,} entries, the limit ({MAX_ENTRIES_ENV} raises it); "
                "nothing was appended"
            )
        is_json = p.suffix.lower() == ".json"
        if is_json:
            data = json.loads(old_text) if old_text and old_text.strip() else []
            data = [*(data or []), entry.to_dict()]
            new_text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            base = NEW_FILE_HEADER if old_text is None else old_text
            if base and not base.endswith("\n"):
                base += "\n"
            new_text = base + _entry_yaml(entry)
        try:
            parsed = parse_quarantine(
                json.loads(new_text)
                if is_json
                else parse_yaml(new_text, str(p), QuarantineError, quarantine_limits()),
                str(p),
            )
        except (QuarantineError, ValueError) as exc:
            raise QuarantineError(
                f"{p}: cannot append without rewriting the file ({exc}); keep it a YAML block "
                "list ('- trial: ...' entries at the left margin)"
            ) from None
        want = [e.to_dict() for e in [*old, entry]]
        if [e.to_dict() for e in parsed] != want:
            raise QuarantineError(
                f"{p}: appending would not add exactly one entry; keep the file a YAML block "
                "list ('- trial: ...' entries at the left margin)"
            )
        mode = p.stat().st_mode & 0o777 if p.exists() else 0o644
        write_atomic(p, new_text.encode("utf-8"), mode=mode, fsync=True)
        return parsed
