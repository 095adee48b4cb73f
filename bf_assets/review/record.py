"""The per-trial record: what reviewing one trial produces, and what every later stage reads.

One type, :class:`TrialReview`, in two weights.  A *whole* review, as the review makes it,
holds everything: findings with their messages and evidence, the skills block, the trial's
story, its file inventory.  A *slim* review (:class:`SlimMaker`) holds what the dataset review
reads, about 100 bytes of its own a trial, so a corpus of 100,000 trials fits in memory:
what the trials of a directory share (run root, job names) is one :class:`JobPart`, what
the trials of a cell share (task, harness, model, skill mode, sandbox, provenance) one
:class:`CellPart`, the outcome, verdict, findings and execution state one :class:`StatePart`
for every trial with the same ones; the rollout, start time, trial index and reward are the
trial's own.  The rest of a slim review (messages, evidence, skills, the story beyond its
execution state) waits as the trial's JSON in a store, and
``bf_assets.dataset.store.full_review`` makes the whole review again.

Below everything that uses it (the batch runner, the caches, the dataset review, curation):
it depends only on ingest's identity, reference and inventory types, the finding record and
the trial's story (:mod:`bf_assets.review.story`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bf_assets.findings import Finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.scan import FileEntry
from bf_assets.review.story import NO_STORY, TrialStory, partial_story

# What reading a hostile trial can raise despite the readers' guards: turned into a finding
# on that trial so one trial never stops a batch.
TRIAL_ERRORS = (MemoryError, RecursionError, ValueError, TypeError, KeyError, OSError, UnicodeError)

SLOT_FIELDS = ("task_id", "harness", "model", "skill_mode", "sandbox", "trial_index")

_NO_SOURCES: dict[str, str] = {}
_NO_FILES: list[FileEntry] = []


@dataclass(frozen=True, slots=True)
class JobPart:
    """What the trials of one directory share."""

    root: str
    job_key: str
    job: str  # the directory's (escaped)
    ref_layout: str  # discovery's layout
    rel_dir: str  # rel_path without the rollout
    link_escape: bool
    identity_job: str | None  # Identity.job


@dataclass(frozen=True, slots=True)
class CellPart:
    """What the trials of one cell share."""

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
    """The review's outcome and findings (shared by trials with equal ones; never written to)."""

    outcome: str
    healthy: bool
    training_ready: bool
    verdict: str
    attribution: str
    findings: list[Finding]
    execution: str | None = None  # the story's execution state (review.story)


@dataclass(slots=True, eq=False)
class OwnPart:
    """What a review holds that its parts cannot give: paths that are not the derived ones,
    a file inventory, and a whole review's own ref, identity, skills and story."""

    paths: tuple[str, str] | None = None  # (rel_path, path) when not derived
    files: list[FileEntry] | None = None
    ref: TrialRef | None = None
    identity: Identity | None = None
    skills: dict[str, Any] | None = None
    story: TrialStory | None = None


class TrialReview:
    """One reviewed trial, whole or slim (see the module docstring); read-only once made."""

    __slots__ = (
        "job_part",
        "cell",
        "state",
        "rollout",
        "identity_rollout",
        "started_at",
        "trial_index",
        "reward",
        "own",
    )

    job_part: JobPart
    cell: CellPart
    state: StatePart
    rollout: str
    identity_rollout: str | None
    started_at: str | None
    trial_index: int | None
    reward: float | None
    own: OwnPart | None

    def __init__(
        self,
        ref: TrialRef,
        identity: Identity,
        layout: str,
        outcome: str,
        healthy: bool,
        training_ready: bool,
        verdict: str,
        attribution: str,
        findings: list[Finding],
        files: list[FileEntry] | None = None,
        skills: dict[str, Any] | None = None,
        reward: float | None = None,
        story: TrialStory = NO_STORY,  # how the run ended, its usage and tests (review.story)
    ) -> None:
        """A whole review."""
        self.job_part = _job_part(ref, identity.job, _same)
        self.cell = _cell_part([getattr(identity, n) for n in _IDENTITY_TEXT], layout, _same)
        self.state = StatePart(
            outcome, healthy, training_ready, verdict, attribution, findings, story.execution
        )
        self.rollout = ref.rollout
        self.identity_rollout = identity.rollout
        self.started_at = identity.started_at
        self.trial_index = identity.trial_index
        self.reward = reward
        self.own = OwnPart(
            paths=_odd_paths(self.job_part, ref),
            files=files if files is not None else [],
            ref=ref,
            identity=identity,
            skills=skills if skills is not None else {},
            story=story,
        )

    # ------------------------------------------------------------------ where it is
    @property
    def rel_path(self) -> str:
        own = self.own
        if own is not None and own.paths is not None:
            return own.paths[0]
        d = self.job_part.rel_dir
        return f"{d}/{self.rollout}" if d else self.rollout

    @property
    def path(self) -> str:
        own = self.own
        if own is not None and own.paths is not None:
            return own.paths[1]
        root = self.job_part.root
        return (root if root.endswith("/") else root + "/") + self.rel_path

    @property
    def key(self) -> tuple[str, str]:
        """``(job_key, rollout)``: the trial's identity across the dataset review."""
        return (self.job_part.job_key, self.rollout)

    @property
    def derived_paths(self) -> bool:
        """Whether ``rel_path`` and ``path`` are the ones the job part and rollout give."""
        return self.own is None or self.own.paths is None

    @property
    def ref(self) -> TrialRef:
        own = self.own
        if own is not None and own.ref is not None:
            return own.ref
        j = self.job_part
        return TrialRef(
            root=j.root,
            path=self.path,
            rel_path=self.rel_path,
            job_key=j.job_key,
            job=j.job,
            rollout=self.rollout,
            layout=j.ref_layout,
            link_escape=j.link_escape,
        )

    @property
    def identity(self) -> Identity:
        own = self.own
        if own is not None and own.identity is not None:
            return own.identity
        c = self.cell
        return Identity(
            task_id=c.task_id,
            harness=c.harness,
            model=c.model,
            skill_mode=c.skill_mode,
            sandbox=c.sandbox,
            trial_index=self.trial_index,
            job=self.job_part.identity_job,
            rollout=self.identity_rollout,
            source_ref=c.source_ref,
            task_digest=c.task_digest,
            started_at=self.started_at,
            sources=_NO_SOURCES,
            model_raw=c.model_raw,
        )

    # ------------------------------------------------------------------ what it found
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
        """Whole: every finding as made; slim: without messages (but blockers') and evidence."""
        return self.state.findings

    @property
    def files(self) -> list[FileEntry]:
        own = self.own
        return own.files if own is not None and own.files is not None else _NO_FILES

    @property
    def skills(self) -> dict[str, Any]:
        own = self.own
        return own.skills if own is not None and own.skills is not None else {}

    @property
    def story(self) -> TrialStory:
        """Whole: the story; slim: the execution state and what the reward says (the rest is
        in the trial's stored JSON)."""
        own = self.own
        if own is not None and own.story is not None:
            return own.story
        return partial_story(self.state.execution, self.reward)

    @property
    def whole(self) -> bool:
        """Whether this is a whole review (a slim one's messages, evidence, skills and story
        are in the trial's stored JSON)."""
        return self.own is not None and self.own.story is not None

    # ------------------------------------------------------------------ as a value
    def fields(self) -> dict[str, Any]:
        """The review as the keyword arguments that make it again."""
        return {
            "ref": self.ref,
            "identity": self.identity,
            "layout": self.layout,
            "outcome": self.outcome,
            "healthy": self.healthy,
            "training_ready": self.training_ready,
            "verdict": self.verdict,
            "attribution": self.attribution,
            "findings": self.findings,
            "files": self.files,
            "skills": self.skills,
            "reward": self.reward,
            "story": self.story,
        }

    def replace(self, **changes: Any) -> TrialReview:
        """A whole review with ``changes`` (the keyword arguments of the constructor)."""
        return TrialReview(**{**self.fields(), **changes})

    def restated(
        self,
        findings: list[Finding],
        verdict: str,
        shared: dict[tuple[Any, ...], StatePart] | None = None,
    ) -> TrialReview:
        """This review, whole or slim, with other findings and verdict (the dataset review's);
        equal states are one :class:`StatePart` across the calls that pass the same
        ``shared``."""
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
        return _record_from(*self._values(state))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not TrialReview:
            return NotImplemented
        return self.fields() == other.fields()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TrialReview({self.rel_path!r}, {self.outcome}, {self.verdict})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its parts and its own values (the parts are shared within a pickle)."""
        return (_record_from, self._values(self.state))

    def _values(self, state: StatePart) -> tuple[Any, ...]:
        return (
            self.job_part,
            self.cell,
            state,
            self.rollout,
            self.identity_rollout,
            self.started_at,
            self.trial_index,
            self.reward,
            self.own,
        )

    def to_json(self) -> dict[str, Any]:
        ident = self.identity
        out: dict[str, Any] = {"path": self.rel_path, "root": self.job_part.root}
        for name in SLOT_FIELDS:
            out[name] = getattr(ident, name)
        out.update(
            {
                "model_raw": ident.model_raw,
                "job": self.job_part.job_key,
                "rollout": self.rollout,
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


def _record_from(
    job_part: JobPart,
    cell: CellPart,
    state: StatePart,
    rollout: str,
    identity_rollout: str | None,
    started_at: str | None,
    trial_index: int | None,
    reward: float | None,
    own: OwnPart | None,
) -> TrialReview:
    t = TrialReview.__new__(TrialReview)
    t.job_part, t.cell, t.state = job_part, cell, state
    t.rollout, t.identity_rollout, t.started_at = rollout, identity_rollout, started_at
    t.trial_index, t.reward, t.own = trial_index, reward, own
    return t


def _same(s: Any) -> Any:
    return s


def _text(s: Any) -> Any:
    """``s`` interned when it is a string (equal texts of many trials: one object)."""
    return sys.intern(s) if isinstance(s, str) else s


def _job_part(ref: TrialRef, identity_job: str | None, text: Callable[[Any], Any]) -> JobPart:
    return JobPart(
        text(ref.root),
        text(ref.job_key),
        text(ref.job),
        text(ref.layout),
        text(ref.rel_path.rpartition("/")[0]),
        ref.link_escape,
        text(identity_job),
    )


def _cell_part(texts: Sequence[str | None], layout: str, text: Callable[[Any], Any]) -> CellPart:
    kw = dict(zip(_IDENTITY_TEXT, texts, strict=True))
    return CellPart(
        text(kw["task_id"]),
        text(kw["harness"]),
        text(kw["model"]),
        text(kw["skill_mode"]),
        text(kw["sandbox"]),
        text(kw["source_ref"]),
        text(kw["task_digest"]),
        text(layout),
        text(kw["model_raw"]),
    )


def _odd_paths(part: JobPart, ref: TrialRef) -> tuple[str, str] | None:
    """``(rel_path, path)`` of ``ref`` when they are not the ones its part and rollout give."""
    d, root = part.rel_dir, part.root
    rel = f"{d}/{ref.rollout}" if d else ref.rollout
    path = (root if root.endswith("/") else root + "/") + rel
    return None if rel == ref.rel_path and path == ref.path else (ref.rel_path, ref.path)


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
_JOB, _ROLLOUT = _IDENTITY_TEXT.index("job"), _IDENTITY_TEXT.index("rollout")


def slim_tuple(r: TrialReview) -> SlimTuple:
    """``(identity texts, trial_index, started_at, layout, outcome, healthy, training_ready,
    verdict, attribution, reward, execution, ((check, severity, file, line), ...))`` of ``r``:
    exactly what :meth:`SlimMaker.from_tuple` needs to make its slim review (the rest of the
    trial's story travels in its JSON)."""
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

    def make(self, t: TrialReview, findings: list[Finding]) -> TrialReview:
        """The slim review of ``t`` with ``findings`` (the caller shares equal lists; never
        written to) in place of its own; the file inventory, when there is one, is kept."""
        ident = t.identity
        return self._slim(
            t.ref,
            [getattr(ident, name) for name in _IDENTITY_TEXT],
            ident.trial_index,
            ident.started_at,
            t.layout,
            (t.outcome, t.healthy, t.training_ready, t.verdict, t.attribution),
            t.reward,
            t.story.execution,
            findings,
            t.files,
        )

    def from_tuple(self, s: SlimTuple, ref: TrialRef) -> TrialReview:
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
    ) -> TrialReview:
        job_part = self._share(_job_part(ref, texts[_JOB], _text))
        cell = self._share(_cell_part(texts, layout, _text))
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
        paths = _odd_paths(job_part, ref)
        own = OwnPart(paths=paths, files=files) if paths is not None or files else None
        rollout = texts[_ROLLOUT]
        return _record_from(
            job_part,
            cell,
            part,
            ref.rollout,
            ref.rollout if rollout == ref.rollout else _text(rollout),
            started_at,
            trial_index,
            self.reward(reward),
            own,
        )

    def _share(self, part: Any) -> Any:
        return self.parts.setdefault(part, part)

    def reward(self, value: Any) -> Any:
        """Equal float rewards share one object (signed zeros and NaN stay apart)."""
        if type(value) is not float or value != value:
            return value
        return self.floats.setdefault((value, math.copysign(1.0, value)), value)
