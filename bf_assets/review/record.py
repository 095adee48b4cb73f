"""The per-trial record: what reviewing one trial produces, and what every later stage reads.

Below everything that uses it (the batch runner, the caches, the dataset review, curation):
it depends only on ingest's identity, reference and inventory types, the finding record and
the trial's story (:mod:`bf_assets.review.story`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bf_assets.findings import Finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.scan import FileEntry
from bf_assets.review.story import NO_STORY, TrialStory

# What reading a hostile trial can raise despite the readers' guards: turned into a finding
# on that trial so one trial never stops a batch.
TRIAL_ERRORS = (MemoryError, RecursionError, ValueError, TypeError, KeyError, OSError, UnicodeError)

SLOT_FIELDS = ("task_id", "harness", "model", "skill_mode", "sandbox", "trial_index")


@dataclass(slots=True)
class TrialReview:
    ref: TrialRef
    identity: Identity
    layout: str
    outcome: str
    healthy: bool
    training_ready: bool
    verdict: str
    attribution: str
    findings: list[Finding]
    files: list[FileEntry] = field(default_factory=list)
    skills: dict[str, Any] = field(default_factory=dict)
    reward: float | None = None
    story: TrialStory = NO_STORY  # how the run ended, its usage and tests (review.story)

    def to_json(self) -> dict[str, Any]:
        ident = self.identity
        out: dict[str, Any] = {"path": self.ref.rel_path, "root": self.ref.root}
        for name in SLOT_FIELDS:
            out[name] = getattr(ident, name)
        out.update(
            {
                "model_raw": ident.model_raw,
                "job": self.ref.job_key,
                "rollout": self.ref.rollout,
                "source_ref": ident.source_ref,
                "task_digest": ident.task_digest,
                "started_at": ident.started_at,
                "layout": self.layout,
                "outcome": self.outcome,
                "healthy": self.healthy,
                "training_ready": self.training_ready,
                "verdict": self.verdict,
                "attribution": self.attribution,
                "reward": self.reward,
                **self.story.to_dict(),
                "skills": self.skills,
                "findings": [f.to_dict() for f in self.findings],
            }
        )
        return out
