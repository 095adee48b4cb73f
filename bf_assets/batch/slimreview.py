"""A reviewed trial in about 250 bytes: what the CLI keeps of each trial until it prints.

A :class:`~bf_assets.review.record.TrialReview` with its ``TrialRef`` and ``Identity`` is
three objects and some 600 bytes a trial even when every string in it is shared.  A
:class:`SlimReview` is one object: what the trials of a job share (run root, job names,
directory) and what the trials of a cell share (task, harness, model, skill mode, sandbox,
provenance) are one :class:`JobPart` / :class:`CellPart` for all of them, the outcome,
verdict and findings one :class:`StatePart` for every trial with the same ones; only the
rollout name, the start time, the trial index and the reward are the trial's own.

It reads like a ``TrialReview`` (``ref`` and ``identity`` are views with the attributes
of ``TrialRef`` and ``Identity``), which is all the dataset review reads, and
:meth:`SlimReview.review` gives the ``TrialReview`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bf_assets.findings import Finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.review.record import TrialReview

_NO_SOURCES: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class JobPart:
    root: str
    job_key: str
    job: str  # the directory's (escaped)
    ref_layout: str  # discovery's layout
    rel_dir: str  # rel_path without the rollout
    link_escape: bool
    identity_job: str | None  # Identity.job


@dataclass(frozen=True, slots=True)
class CellPart:
    task_id: str | None
    harness: str | None
    model: str | None
    skill_mode: str | None
    sandbox: str | None
    source_ref: str | None
    task_digest: str | None
    layout: str  # the review's layout


@dataclass(frozen=True, slots=True, eq=False)
class StatePart:
    outcome: str
    healthy: bool
    training_ready: bool
    verdict: str
    attribution: str
    findings: list[Finding]  # shared: never written to


class SlimReview:
    """One reviewed trial, read-only (see the module docstring)."""

    __slots__ = (
        "job_part",
        "cell",
        "state",
        "rollout",
        "identity_rollout",
        "started_at",
        "trial_index",
        "reward",
        "odd",
    )

    def __init__(
        self,
        job_part: JobPart,
        cell: CellPart,
        state: StatePart,
        ref: TrialRef,
        identity_rollout: str | None,
        started_at: str | None,
        trial_index: int | None,
        reward: float | None,
    ) -> None:
        self.job_part = job_part
        self.cell = cell
        self.state = state
        self.rollout = ref.rollout
        self.identity_rollout = identity_rollout
        self.started_at = started_at
        self.trial_index = trial_index
        self.reward = reward
        self.odd: tuple[str, str] | None = None
        if self.rel_path != ref.rel_path or self.path != ref.path:
            self.odd = (ref.rel_path, ref.path)  # not derivable: kept as they are

    # ------------------------------------------------------------------ TrialRef's names
    @property
    def rel_path(self) -> str:
        if self.odd is not None:
            return self.odd[0]
        d = self.job_part.rel_dir
        return f"{d}/{self.rollout}" if d else self.rollout

    @property
    def path(self) -> str:
        if self.odd is not None:
            return self.odd[1]
        root = self.job_part.root
        return (root if root.endswith("/") else root + "/") + self.rel_path

    @property
    def ref(self) -> RefView:
        return RefView(self)

    @property
    def identity(self) -> IdentityView:
        return IdentityView(self)

    # ------------------------------------------------------------------ TrialReview's
    @property
    def layout(self) -> str:
        return self.cell.layout

    @property
    def outcome(self) -> str:
        return self.state.outcome

    @property
    def healthy(self) -> bool:
        return self.state.healthy

    @property
    def training_ready(self) -> bool:
        return self.state.training_ready

    @property
    def verdict(self) -> str:
        return self.state.verdict

    @property
    def attribution(self) -> str:
        return self.state.attribution

    @property
    def findings(self) -> list[Finding]:
        return self.state.findings

    @property
    def files(self) -> list[Any]:
        return []

    @property
    def skills(self) -> dict[str, Any]:
        return {}

    def review(self) -> TrialReview:
        """The ``TrialReview`` this stands for (a new object each call)."""
        j, c, s = self.job_part, self.cell, self.state
        ref = TrialRef(
            root=j.root,
            path=self.path,
            rel_path=self.rel_path,
            job_key=j.job_key,
            job=j.job,
            rollout=self.rollout,
            layout=j.ref_layout,
            link_escape=j.link_escape,
        )
        ident = Identity(
            task_id=c.task_id,
            harness=c.harness,
            model=c.model,
            skill_mode=c.skill_mode,
            sandbox=c.sandbox,
            trial_index=self.trial_index,
            job=j.identity_job,
            rollout=self.identity_rollout,
            source_ref=c.source_ref,
            task_digest=c.task_digest,
            started_at=self.started_at,
            sources=_NO_SOURCES,
        )
        return TrialReview(
            ref=ref,
            identity=ident,
            layout=c.layout,
            outcome=s.outcome,
            healthy=s.healthy,
            training_ready=s.training_ready,
            verdict=s.verdict,
            attribution=s.attribution,
            findings=s.findings,
            files=[],
            skills={},
            reward=self.reward,
        )


class RefView:
    """``TrialRef``'s attributes of a :class:`SlimReview`."""

    __slots__ = ("t",)

    def __init__(self, t: SlimReview) -> None:
        self.t = t

    @property
    def root(self) -> str:
        return self.t.job_part.root

    @property
    def path(self) -> str:
        return self.t.path

    @property
    def rel_path(self) -> str:
        return self.t.rel_path

    @property
    def job_key(self) -> str:
        return self.t.job_part.job_key

    @property
    def job(self) -> str:
        return self.t.job_part.job

    @property
    def rollout(self) -> str:
        return self.t.rollout

    @property
    def layout(self) -> str:
        return self.t.job_part.ref_layout

    @property
    def link_escape(self) -> bool:
        return self.t.job_part.link_escape


class IdentityView:
    """``Identity``'s attributes of a :class:`SlimReview` (no ``sources``: never kept)."""

    __slots__ = ("t",)

    def __init__(self, t: SlimReview) -> None:
        self.t = t

    @property
    def task_id(self) -> str | None:
        return self.t.cell.task_id

    @property
    def harness(self) -> str | None:
        return self.t.cell.harness

    @property
    def model(self) -> str | None:
        return self.t.cell.model

    @property
    def skill_mode(self) -> str | None:
        return self.t.cell.skill_mode

    @property
    def sandbox(self) -> str | None:
        return self.t.cell.sandbox

    @property
    def trial_index(self) -> int | None:
        return self.t.trial_index

    @property
    def job(self) -> str | None:
        return self.t.job_part.identity_job

    @property
    def rollout(self) -> str | None:
        return self.t.identity_rollout

    @property
    def source_ref(self) -> str | None:
        return self.t.cell.source_ref

    @property
    def task_digest(self) -> str | None:
        return self.t.cell.task_digest

    @property
    def started_at(self) -> str | None:
        return self.t.started_at

    @property
    def sources(self) -> dict[str, str]:
        return _NO_SOURCES

    def slot(self) -> tuple[Any, ...]:
        c = self.t.cell
        return (c.task_id, c.harness, c.model, c.skill_mode, c.sandbox, self.t.trial_index)
