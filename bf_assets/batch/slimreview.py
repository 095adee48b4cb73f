"""A reviewed trial in about 250 bytes: what the CLI keeps of each trial until it prints.

A :class:`~bf_assets.review.record.TrialReview` with its ``TrialRef`` and ``Identity`` is
three objects and some 600 bytes a trial even when every string in it is shared.  A
:class:`SlimReview` is one object: what the trials of a job share (run root, job names,
directory) and what the trials of a cell share (task, harness, model, skill mode, sandbox,
provenance) are one :class:`JobPart` / :class:`CellPart` for all of them, the outcome,
verdict, findings and execution state one :class:`StatePart` for every trial with the same
ones; only the rollout name, the start time, the trial index and the reward are the trial's
own.  Of the trial's story (:class:`~bf_assets.review.story.TrialStory`) only the execution
state is kept: its usage, error and tests are in the trial's stored JSON, which
``bf_assets.dataset.store.full_review`` reads back.

It reads like a ``TrialReview`` (``ref`` and ``identity`` are views with the attributes
of ``TrialRef`` and ``Identity``), which is all the dataset review reads, and
:meth:`SlimReview.review` gives the ``TrialReview`` itself.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bf_assets.findings import Finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.scan import FileEntry
from bf_assets.review.record import TrialReview
from bf_assets.review.story import TrialStory, partial_story

_NO_SOURCES: dict[str, str] = {}
_NO_FILES: list[FileEntry] = []


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
    model_raw: str | None = None  # the model as recorded (``model`` is canonical)


@dataclass(frozen=True, slots=True, eq=False)
class StatePart:
    outcome: str
    healthy: bool
    training_ready: bool
    verdict: str
    attribution: str
    findings: list[Finding]  # shared: never written to
    execution: str | None = None  # the story's execution state (review.story)


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
        "files",
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
        files: list[FileEntry] | None = None,
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
        self.files: list[FileEntry] = files or _NO_FILES  # sandbox parity reads inventories
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
    def story(self) -> TrialStory:
        """The execution state and what the reward says; the rest of the story is in the
        trial's stored JSON."""
        return partial_story(self.state.execution, self.reward)

    @property
    def skills(self) -> dict[str, Any]:
        return {}

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its parts and its own values (the parts are shared within a pickle)."""
        return (_slim_from, self._args(self.state))

    def _args(self, state: StatePart) -> tuple[Any, ...]:
        """The arguments of :func:`_slim_from` that make this trial with ``state``."""
        return (
            self.job_part,
            self.cell,
            state,
            self.rollout,
            self.identity_rollout,
            self.started_at,
            self.trial_index,
            self.reward,
            self.odd,
            self.files,
        )

    def restated(
        self,
        findings: list[Finding],
        verdict: str,
        shared: dict[tuple[Any, ...], StatePart] | None = None,
    ) -> SlimReview:
        """This trial with other findings and verdict (the dataset review's); equal states
        are one :class:`StatePart` across the calls that pass the same ``shared``."""
        s = self.state
        key = (
            s.outcome,
            s.healthy,
            s.training_ready,
            verdict,
            s.attribution,
            id(findings),
            s.execution,
        )
        state = shared.get(key) if shared is not None else None
        if state is None or state.findings is not findings:
            state = StatePart(
                s.outcome,
                s.healthy,
                s.training_ready,
                verdict,
                s.attribution,
                findings,
                s.execution,
            )
            if shared is not None:
                shared[key] = state
        return _slim_from(*self._args(state))

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
            model_raw=c.model_raw,
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
            files=self.files,
            skills={},
            reward=self.reward,
            story=self.story,
        )


def _slim_from(
    job_part: JobPart,
    cell: CellPart,
    state: StatePart,
    rollout: str,
    identity_rollout: str | None,
    started_at: str | None,
    trial_index: int | None,
    reward: float | None,
    odd: tuple[str, str] | None,
    files: list[FileEntry],
) -> SlimReview:
    s = SlimReview.__new__(SlimReview)
    s.job_part, s.cell, s.state = job_part, cell, state
    s.rollout, s.identity_rollout, s.started_at = rollout, identity_rollout, started_at
    s.trial_index, s.reward, s.odd, s.files = trial_index, reward, odd, files
    return s


def _text(s: str | None) -> str | None:
    return sys.intern(s) if isinstance(s, str) else s


# What a worker sends back per trial besides its JSON: plain values only (no dataclass, whose
# pickling goes through Python-level __getstate__ / __setstate__ on both sides).
SlimTuple = tuple[Any, ...]
SLIM_VERDICT = 7  # where a slim tuple holds the verdict

_IDENTITY_TEXT = (
    "task_id",
    "harness",
    "model",
    "skill_mode",
    "sandbox",
    "job",
    "rollout",
    "source_ref",
    "task_digest",
    "model_raw",
)


def slim_tuple(r: TrialReview) -> SlimTuple:
    """``(identity texts, trial_index, started_at, layout, outcome, healthy, training_ready,
    verdict, attribution, reward, execution, ((check, severity, file, line), ...))`` of ``r``:
    exactly what :meth:`SlimMaker.from_tuple` needs to rebuild its slim review (the rest of
    the trial's story travels in its JSON)."""
    ident = r.identity
    return (
        tuple([getattr(ident, name) for name in _IDENTITY_TEXT]),
        ident.trial_index,
        ident.started_at,
        r.layout,
        r.outcome,
        r.healthy,
        r.training_ready,
        r.verdict,
        r.attribution,
        r.reward,
        r.story.execution,
        tuple([(f.check, f.severity, f.file, f.line) for f in r.findings]),
    )


class SlimMaker:
    """Makes slim reviews, sharing what trials share: equal job, cell and state parts are one
    object each, equal slim findings and finding lists one object, equal rewards one float."""

    def __init__(self) -> None:
        self.parts: dict[Any, Any] = {}
        self.states: dict[tuple[Any, ...], StatePart] = {}
        self.floats: dict[tuple[float, float], float] = {}
        self.findings: dict[Finding, Finding] = {}
        self.lists: dict[tuple[Finding, ...], list[Finding]] = {}

    # ------------------------------------------------------------------ findings
    def slim_finding(
        self, check: str, severity: str, file: str | None, line: int | None
    ) -> Finding:
        """The finding without message and evidence (what the dataset review reads)."""
        f = Finding(sys.intern(check), sys.intern(severity), "", _text(file), line, None)
        return self.findings.setdefault(f, f)

    def finding_list(self, findings: Iterable[Finding]) -> list[Finding]:
        """One shared list of ``findings`` (kept as they are: the caller slims them)."""
        key = tuple(findings)
        hit = self.lists.get(key)
        if hit is None:
            hit = self.lists[key] = list(key)
        return hit

    def slim_findings(self, findings: Iterable[Finding]) -> list[Finding]:
        return self.finding_list(
            self.slim_finding(f.check, f.severity, f.file, f.line) for f in findings
        )

    # ------------------------------------------------------------------ reviews
    def make(self, t: TrialReview, findings: list[Finding]) -> SlimReview:
        """The slim review of ``t`` with ``findings`` (the caller shares equal lists; never
        written to) in place of its own; skills, identity sources and all of the story but
        its execution state are not kept, the file inventory when there is one is."""
        ref, ident = t.ref, t.identity
        texts = [getattr(ident, name) for name in _IDENTITY_TEXT]
        return self._slim(
            ref,
            texts,
            ident.trial_index,
            ident.started_at,
            t.layout,
            (t.outcome, t.healthy, t.training_ready, t.verdict, t.attribution),
            t.reward,
            t.story.execution,
            findings,
            t.files,
        )

    def from_tuple(self, s: SlimTuple, ref: TrialRef) -> SlimReview:
        """The slim review of :func:`slim_tuple`'s ``s`` with the walk's own ``ref``."""
        (texts, trial_index, started_at, layout, *state, reward, execution, fs) = s
        findings = self.finding_list(self.slim_finding(*f) for f in fs)
        return self._slim(
            ref, texts, trial_index, started_at, layout, state, reward, execution, findings
        )

    def _slim(
        self,
        ref: TrialRef,
        texts: Sequence[str | None],
        trial_index: int | None,
        started_at: str | None,
        layout: str,
        state: Sequence[Any],
        reward: Any,
        execution: str | None,
        findings: list[Finding],
        files: list[FileEntry] | None = None,
    ) -> SlimReview:
        kw = dict(zip(_IDENTITY_TEXT, texts, strict=True))
        job_part = self._share(
            JobPart(
                sys.intern(ref.root),
                sys.intern(ref.job_key),
                sys.intern(ref.job),
                sys.intern(ref.layout),
                sys.intern(ref.rel_path.rpartition("/")[0]),
                ref.link_escape,
                _text(kw["job"]),
            )
        )
        cell = self._share(
            CellPart(
                _text(kw["task_id"]),
                _text(kw["harness"]),
                _text(kw["model"]),
                _text(kw["skill_mode"]),
                _text(kw["sandbox"]),
                _text(kw["source_ref"]),
                _text(kw["task_digest"]),
                sys.intern(layout),
                _text(kw["model_raw"]),
            )
        )
        outcome, healthy, ready, verdict, attribution = state
        key = (outcome, healthy, ready, verdict, attribution, id(findings), execution)
        part = self.states.get(key)
        if part is None or part.findings is not findings:
            part = self.states[key] = StatePart(
                sys.intern(outcome),
                healthy,
                ready,
                sys.intern(verdict),
                sys.intern(attribution),
                findings,
                _text(execution),
            )
        rollout = kw["rollout"]
        return SlimReview(
            job_part,
            cell,
            part,
            ref,
            ref.rollout if rollout == ref.rollout else _text(rollout),
            started_at,
            trial_index,
            self.reward(reward),
            files,
        )

    def _share(self, part: Any) -> Any:
        return self.parts.setdefault(part, part)

    def reward(self, value: Any) -> Any:
        """Equal float rewards share one object (signed zeros and NaN stay apart)."""
        if type(value) is not float or value != value:
            return value
        return self.floats.setdefault((value, math.copysign(1.0, value)), value)


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
    def model_raw(self) -> str | None:
        return self.t.cell.model_raw

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
