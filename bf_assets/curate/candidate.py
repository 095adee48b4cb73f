"""What curation needs of one trial it was handed: where its files are, its identity, its
verdict and findings, and the hashes of its artifacts (``rollout_id``).

Curation selects nothing: the dataset review (``bf_assets.dataset.decide``) decides which
trials are exported, and the callers build a :class:`Candidate` for each of those, from a
:class:`bf_assets.review.record.TrialReview` (CLI, tests) or from the warehouse tables (the
Dagster shell).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, ROWS_FILE
from bf_assets.review.record import TrialReview

RESULT_FILE = "result.json"
# The trial files curation reads into a row: each must hold the bytes the review read (its
# digest in the review's inventory), or the trial is a curation error.
CURATION_READS = (ROWS_FILE, RESULT_FILE)
KEPT_FILES = frozenset({*CURATION_READS, LLM_FILE, ACP_FILE})


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
    finding_checks: tuple[str, ...] = ()  # the check of each of its findings
    # ``sha256:`` over the sorted ``path\tsha256`` lines of the trial's artifacts
    rollout_id: str = ""
    # the hashes of the files curation reads or records (KEPT_FILES): a release holds a
    # candidate per exported trial, so not each one's whole inventory
    file_shas: dict[str, str | None] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.job, self.rollout)

    def file_sha(self, rel: str) -> str | None:
        """The reviewed hash of ``rel``, one of :data:`KEPT_FILES` (None for any other)."""
        return self.file_shas.get(rel)

    @classmethod
    def from_review(
        cls, t: TrialReview, files: Sequence[tuple[str, str | None]] | None = None
    ) -> Candidate:
        """From a review; ``files`` (``(rel path, sha256)``, e.g. the ``raw_trials``
        inventory) replaces the review's own inventory, whose missing hashes are computed."""
        ident = t.identity
        inventory = list(files) if files is not None else _complete_hashes(t)
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
            finding_checks=tuple(f.check for f in t.findings),
            rollout_id=rollout_digest(inventory),
            file_shas=_kept_shas(inventory),
        )


def _kept_shas(files: Sequence[tuple[str, str | None]]) -> dict[str, str | None]:
    """The hashes of :data:`KEPT_FILES` among ``files``, keyed by the shared names."""
    shas = dict(files)
    return {rel: shas[rel] for rel in KEPT_FILES if rel in shas}


def rollout_digest(files: Sequence[tuple[str, str | None]]) -> str:
    """``sha256:`` over the sorted ``path\\tsha256`` lines of ``(rel path, sha256)`` pairs
    (``-`` for a file without a hash)."""
    lines = sorted(f"{p}\t{s or '-'}" for p, s in files)
    return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _complete_hashes(t: TrialReview) -> list[tuple[str, str | None]]:
    """The review's inventory with the hashes the scan did not compute filled in from disk
    (``raw_trials`` hashes every file; both paths must give the same ``rollout_id``).  A
    file curation reads (:data:`CURATION_READS`) keeps only the review's own digest: one
    computed now would vouch for bytes no review read."""
    from pathlib import Path

    from bf_assets.ingest.readers import hash_file

    out: list[tuple[str, str | None]] = []
    for f in t.files:
        sha = f.sha256
        if sha is None and f.issue is None and f.path not in CURATION_READS:
            stats, _ = hash_file(Path(t.ref.path) / f.path, Path(t.ref.root))
            sha = stats.sha256 if stats is not None else None
        out.append((f.path, sha))
    return out


def inventory_hashes(files_json: Any) -> list[tuple[str, str | None]]:
    """``(rel path, sha256)`` pairs of a ``raw_trials`` ``files`` value (JSON text)."""
    import orjson

    if not isinstance(files_json, str) or not files_json:
        return []
    try:
        items = orjson.loads(files_json)
    except orjson.JSONDecodeError:
        return []
    return [(str(f["path"]), f.get("sha256")) for f in items if isinstance(f, dict) and "path" in f]
