"""Which trials are exported: the newest exportable attempt of each slot, and why not the rest.

A trial is *exportable* when it is a model run (not ``oracle``), healthy, training-ready
and ``publishable``.  Health is filtered **before** ranking: the newest exportable attempt
of a slot ``(task_id, harness, model, skill_mode, sandbox, trial_index)`` is exported even
when a newer attempt of the same slot is broken; every other exportable attempt is
``superseded``.  Newest = latest parsed ``started_at`` (unparsable or missing sorts
oldest), ties broken by rollout name, then job.

Works on :class:`Candidate` records, built from a :class:`bf_assets.review.record.TrialReview`
(CLI, tests) or from a ``validated_trials`` row (the Dagster shell).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bf_assets.contract import HEALTHY_OUTCOMES, Outcome, Severity, Verdict
from bf_assets.review.record import SLOT_FIELDS, TrialReview

# Exclusion reasons (the card and the manifest count them).
ORACLE = "oracle"
REJECTED = "rejected"
QUARANTINED = "quarantined"
UNHEALTHY = "unhealthy"
NOT_READY = "not training-ready"
SUPERSEDED = "superseded"
DUPLICATE = "duplicate"
CURATION_ERROR = "curation error"


@dataclass(slots=True)
class Candidate:
    """One reviewed trial, as much as curation needs of it."""

    job: str
    rollout: str
    rel_path: str
    trial_dir: str
    root: str
    slot: tuple[Any, ...]
    started_at: str | None
    finished_at: str | None
    source_ref: str | None
    task_digest: str | None
    outcome: str
    healthy: bool
    training_ready: bool
    verdict: str
    attribution: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    files: list[tuple[str, str | None]] = field(default_factory=list)  # (rel path, sha256)

    @property
    def key(self) -> tuple[str, str]:
        return (self.job, self.rollout)

    @property
    def slot_fields(self) -> dict[str, Any]:
        return dict(zip(SLOT_FIELDS, self.slot, strict=True))

    @property
    def exportable(self) -> bool:
        return (
            self.outcome != Outcome.ORACLE
            and self.outcome in HEALTHY_OUTCOMES
            and self.healthy
            and self.training_ready
            and self.verdict == Verdict.PUBLISHABLE
        )

    def checks_of(self, severity: str) -> list[str]:
        return sorted({f["check"] for f in self.findings if f.get("severity") == severity})

    def file_sha(self, rel: str) -> str | None:
        for path, sha in self.files:
            if path == rel:
                return sha
        return None

    @property
    def rollout_id(self) -> str:
        """``sha256:`` over the sorted ``path\\tsha256`` lines of the trial's artifacts."""
        lines = sorted(f"{p}\t{s or '-'}" for p, s in self.files)
        return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()

    @classmethod
    def from_review(cls, t: TrialReview) -> Candidate:
        ident = t.identity
        return cls(
            job=t.ref.job_key,
            rollout=t.ref.rollout,
            rel_path=t.ref.rel_path,
            trial_dir=t.ref.path,
            root=t.ref.root,
            slot=ident.slot(),
            started_at=ident.started_at,
            finished_at=None,
            source_ref=ident.source_ref,
            task_digest=ident.task_digest,
            outcome=t.outcome,
            healthy=t.healthy,
            training_ready=t.training_ready,
            verdict=t.verdict,
            attribution=t.attribution,
            findings=[f.to_dict() for f in t.findings],
            files=_complete_hashes(t),
        )

    @classmethod
    def from_tables(
        cls, validated: Mapping[str, Any], raw: Mapping[str, Any] | None, trial_dir: str, root: str
    ) -> Candidate:
        """From a ``validated_trials`` row (+ its ``raw_trials`` row for the file inventory)."""
        import orjson

        def _json(v: Any, default: Any) -> Any:
            if isinstance(v, str) and v:
                try:
                    return orjson.loads(v)
                except orjson.JSONDecodeError:
                    return default
            return default

        def _opt(v: Any) -> Any:
            return None if v is None or (isinstance(v, float) and v != v) or _is_na(v) else v

        slot = []
        for name in SLOT_FIELDS:
            v = _opt(validated.get(name))
            slot.append(int(v) if name == "trial_index" and v is not None else v)
        files = _json(raw.get("files"), []) if raw is not None else []
        return cls(
            job=str(validated["job"]),
            rollout=str(validated["rollout"]),
            rel_path=str(validated.get("path") or validated["rollout"]),
            trial_dir=trial_dir,
            root=root,
            slot=tuple(slot),
            started_at=_opt(validated.get("started_at")),
            finished_at=None,
            source_ref=_opt(validated.get("source_ref")),
            task_digest=_opt(validated.get("task_digest")),
            outcome=str(validated.get("outcome")),
            healthy=bool(validated.get("healthy")),
            training_ready=bool(validated.get("training_ready")),
            verdict=str(validated.get("verdict")),
            attribution=str(_opt(validated.get("attribution")) or "unknown"),
            findings=_json(validated.get("findings"), []),
            files=[
                (str(f["path"]), f.get("sha256"))
                for f in files
                if isinstance(f, dict) and "path" in f
            ],
        )


def _complete_hashes(t: TrialReview) -> list[tuple[str, str | None]]:
    """The review's inventory with the hashes the scan did not compute filled in from disk
    (``raw_trials`` hashes every file; both paths must give the same ``rollout_id``)."""
    from pathlib import Path

    from bf_assets.ingest.readers import hash_file

    out: list[tuple[str, str | None]] = []
    for f in t.files:
        sha = f.sha256
        if sha is None and f.issue is None:
            stats, _ = hash_file(Path(t.ref.path) / f.path, Path(t.ref.root))
            sha = stats.sha256 if stats is not None else None
        out.append((f.path, sha))
    return out


def _is_na(v: Any) -> bool:
    try:
        import pandas as pd

        return v is pd.NA or v is pd.NaT
    except ImportError:  # pragma: no cover
        return False


@dataclass(frozen=True, slots=True)
class Exclusion:
    job: str
    rollout: str
    rel_path: str
    slot: tuple[Any, ...]
    outcome: str
    verdict: str
    reason: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "rollout": self.rollout,
            "path": self.rel_path,
            **dict(zip(SLOT_FIELDS, self.slot, strict=True)),
            "outcome": self.outcome,
            "verdict": self.verdict,
            "reason": self.reason,
            "detail": self.detail,
        }


def exclude(c: Candidate, reason: str, detail: str = "") -> Exclusion:
    return Exclusion(c.job, c.rollout, c.rel_path, c.slot, c.outcome, c.verdict, reason, detail)


_TS_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f")
_OLDEST = datetime.min.replace(tzinfo=UTC)


def parse_started(value: Any) -> datetime:
    """A start time as an aware datetime (naive = UTC); unparsable or missing = oldest."""
    if not isinstance(value, str) or not value.strip():
        return _OLDEST
    text = value.strip()
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        ts = None
        for fmt in _TS_FORMATS:
            try:
                ts = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
        if ts is None:
            return _OLDEST
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def _rank(c: Candidate) -> tuple[datetime, str, str]:
    return (parse_started(c.started_at), c.rollout, c.job)


def why_not(c: Candidate) -> Exclusion | None:
    """The reason a trial can never be exported, or ``None`` when it is exportable."""
    if c.outcome == Outcome.ORACLE:
        return exclude(c, ORACLE, "oracle lane: reference solution, not model data")
    if c.verdict == Verdict.REJECTED:
        blockers = c.checks_of(Severity.BLOCKER)
        return exclude(c, REJECTED, ", ".join(blockers) or "rejected")
    if c.verdict == Verdict.QUARANTINED:
        held = c.checks_of(Severity.QUARANTINE)
        return exclude(c, QUARANTINED, ", ".join(held) or "manual quarantine")
    if c.verdict != Verdict.PUBLISHABLE:
        return exclude(c, REJECTED, f"verdict {c.verdict!r}")
    if not c.healthy or c.outcome not in HEALTHY_OUTCOMES:
        return exclude(c, UNHEALTHY, f"outcome {c.outcome}")
    if not c.training_ready:
        return exclude(c, NOT_READY, f"outcome {c.outcome}; the results.jsonl row is not ready")
    return None


def select_exports(
    reviews: Iterable[TrialReview | Candidate],
) -> tuple[list[Candidate], list[Exclusion]]:
    """``(selected, excluded)``: the newest exportable attempt per slot, and every other trial
    with its reason.  ``selected`` is ordered by slot; ``excluded`` by job and rollout."""
    cands = [r if isinstance(r, Candidate) else Candidate.from_review(r) for r in reviews]
    excluded: list[Exclusion] = []
    by_slot: dict[tuple[Any, ...], list[Candidate]] = {}
    for c in cands:
        reason = why_not(c)
        if reason is not None:
            excluded.append(reason)
        else:
            by_slot.setdefault(c.slot, []).append(c)
    selected: list[Candidate] = []
    for slot in sorted(by_slot, key=lambda s: tuple("" if v is None else str(v) for v in s)):
        ranked = sorted(by_slot[slot], key=_rank, reverse=True)
        winner = ranked[0]
        selected.append(winner)
        for loser in ranked[1:]:
            excluded.append(
                exclude(
                    loser,
                    SUPERSEDED,
                    f"newer healthy attempt {winner.job}/{winner.rollout} of the same slot",
                )
            )
    excluded.sort(key=lambda e: (e.job, e.rollout, e.rel_path))
    return selected, excluded


def selected_keys(candidates: Sequence[Candidate]) -> set[tuple[str, str]]:
    return {c.key for c in select_exports(candidates)[0]}
