"""Flat memory for big batches: each trial's full review goes to a spill file as the JSON
the CLI prints, and only a slim review (what the dataset layer reads) stays in memory.

The dataset layer (coverage, quarantine, release verdict) reads a trial's identity, ref,
outcome, health, verdict, reward and its findings' check, severity, file and line, never
messages, evidence, file inventories or skill details.  A slim review keeps exactly that,
with repeated strings and findings shared between trials (one ``SlimReview`` object a
trial, ``bf_assets.batch.slimreview``), so 20,000 trials cost a few MB.
When the dataset review adds findings to a trial or changes its verdict, its spilled JSON
is patched on the way out (``final_json``); otherwise the spilled bytes are printed as is.
"""

from __future__ import annotations

import math
import sys
import tempfile
from array import array
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from bf_assets.batch.slimreview import CellPart, JobPart, SlimReview, StatePart
from bf_assets.findings import Finding, sort_findings
from bf_assets.ingest.identity import Identity

if TYPE_CHECKING:
    from bf_assets.ingest.discovery import TrialRef
    from bf_assets.review.record import TrialReview

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


_CELL_TEXT = ("task_id", "harness", "model", "skill_mode", "sandbox", "source_ref", "task_digest")
_Part = TypeVar("_Part", JobPart, CellPart)


class Interner:
    """Shares equal strings, equal slim findings and equal finding lists between trials; a
    slim review's empty containers are shared too (slim reviews are never written to)."""

    def __init__(self) -> None:
        self.findings: dict[Finding, Finding] = {}
        self.lists: dict[tuple[Finding, ...], list[Finding]] = {}
        self.no_files: list[Any] = []
        self.no_skills: dict[str, Any] = {}
        self.no_sources: dict[str, str] = {}
        self.floats: dict[tuple[float, float], float] = {}
        self.parts: dict[Any, Any] = {}  # JobPart and CellPart, shared
        self.states: dict[tuple[Any, ...], StatePart] = {}

    def text(self, s: str | None) -> str | None:
        return sys.intern(s) if isinstance(s, str) else s

    def finding(self, f: Finding) -> Finding:
        slim = Finding(
            sys.intern(f.check), sys.intern(f.severity), "", self.text(f.file), f.line, None
        )
        return self.findings.setdefault(slim, slim)

    def finding_list(self, findings: list[Finding]) -> list[Finding]:
        key = tuple(self.finding(f) for f in findings)
        hit = self.lists.get(key)
        if hit is None:
            hit = self.lists[key] = list(key)
        return hit

    def identity(self, ident: Identity, ref: TrialRef | None = None) -> Identity:
        kw: dict[str, Any] = {name: self.text(getattr(ident, name)) for name in _IDENTITY_TEXT}
        if ref is not None and ident.rollout == ref.rollout:
            kw["rollout"] = ref.rollout  # unique per trial: the walk's own string, not a copy
        return Identity(
            trial_index=ident.trial_index,
            started_at=ident.started_at,
            sources=self.no_sources,
            **kw,
        )

    def from_slim(self, s: SlimTuple, ref: TrialRef) -> SlimReview:
        """The slim review of :func:`slim_tuple`'s ``s`` (what ``review`` makes of the full
        review, in one object: ``SlimReview``), with the walk's own ``ref``."""
        (
            texts,
            trial_index,
            started_at,
            layout,
            outcome,
            healthy,
            ready,
            verdict,
            attr,
            reward,
            execution,
            fs,
        ) = s
        kw: dict[str, Any] = dict(zip(_IDENTITY_TEXT, texts, strict=True))
        job_part = self._part(
            JobPart(
                ref.root,
                ref.job_key,
                ref.job,
                ref.layout,
                sys.intern(ref.rel_path.rpartition("/")[0]),
                ref.link_escape,
                self.text(kw["job"]),
            )
        )
        cell = self._part(
            CellPart(
                *(self.text(kw[n]) for n in _CELL_TEXT),
                layout=sys.intern(layout),
                model_raw=self.text(kw["model_raw"]),
            )
        )
        key = tuple(self.slim_finding(*f) for f in fs)
        findings = self.lists.get(key)
        if findings is None:
            findings = self.lists[key] = list(key)
        state_key = (outcome, healthy, ready, verdict, attr, id(findings), execution)
        state = self.states.get(state_key)
        if state is None:
            state = self.states[state_key] = StatePart(
                sys.intern(outcome),
                healthy,
                ready,
                sys.intern(verdict),
                sys.intern(attr),
                findings,
                self.text(execution),
            )
        rollout = kw["rollout"]
        return SlimReview(
            job_part,
            cell,
            state,
            ref,
            ref.rollout if rollout == ref.rollout else self.text(rollout),
            started_at,
            trial_index,
            self.reward(reward),
        )

    def _part(self, part: _Part) -> _Part:
        return self.parts.setdefault(part, part)  # type: ignore[return-value]

    def reward(self, value: Any) -> Any:
        """Equal float rewards share one object (a sign of zero and a NaN stay apart;
        anything else is kept as it is)."""
        if type(value) is not float or value != value:
            return value
        return self.floats.setdefault((value, math.copysign(1.0, value)), value)

    def slim_finding(
        self, check: str, severity: str, file: str | None, line: int | None
    ) -> Finding:
        f = Finding(sys.intern(check), sys.intern(severity), "", self.text(file), line, None)
        return self.findings.setdefault(f, f)

    def review(self, r: TrialReview, ref: TrialRef | None = None) -> TrialReview:
        """The slim review of ``r``; ``ref`` (the walk's own object) replaces its copy."""
        return replace(
            r,
            ref=ref if ref is not None else r.ref,
            identity=self.identity(r.identity, ref),
            layout=sys.intern(r.layout),
            outcome=sys.intern(r.outcome),
            verdict=sys.intern(r.verdict),
            attribution=sys.intern(r.attribution),
            findings=self.finding_list(r.findings),
            files=self.no_files,
            skills=self.no_skills,
        )


# What a worker sends back per trial besides its JSON: plain values only (no dataclass, whose
# pickling goes through Python-level __getstate__ / __setstate__ on both sides).
SlimTuple = tuple[Any, ...]


def slim_tuple(r: TrialReview) -> SlimTuple:
    """``(identity texts, trial_index, started_at, layout, outcome, healthy, training_ready,
    verdict, attribution, reward, execution, ((check, severity, file, line), ...))`` of ``r``:
    exactly what :meth:`Interner.from_slim` needs to rebuild its slim review (the rest of
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


def slim(r: TrialReview) -> TrialReview:
    """What travels back from a worker: no ref (the receiving side has the walk's own),
    inventory, skills, sources, messages or evidence (``Interner.review`` then shares equal
    strings)."""
    ident = replace(r.identity, sources={})
    findings = [Finding(f.check, f.severity, "", f.file, f.line, None) for f in r.findings]
    return replace(
        r,
        ref=None,  # type: ignore[arg-type]
        identity=ident,
        findings=findings,
        files=[],
        skills={},
    )


class Spill:
    """Per-trial JSON bytes in an anonymous temporary file, addressed by trial index."""

    def __init__(self, n: int = 0) -> None:
        self.file = tempfile.TemporaryFile(prefix="bf-assets-review-")  # noqa: SIM115 (closed by close())
        self.offset = array("q", [0]) * n
        self.length = array("q", [-1]) * n
        self.end = 0

    def reserve(self, n: int) -> None:
        """Room for ``n`` trials in all (the count grows while the walk goes on)."""
        if n > len(self.offset):
            grow = n - len(self.offset)
            self.offset.extend([0] * grow)
            self.length.extend([-1] * grow)

    def reorder(self, order: Sequence[int]) -> None:
        """Index ``i`` becomes what index ``order[i]`` was."""
        self.offset = array("q", (self.offset[p] for p in order))
        self.length = array("q", (self.length[p] for p in order))

    def put(self, index: int, data: bytes) -> None:
        self.reserve(index + 1)
        self.file.seek(self.end)
        self.file.write(data)
        self.offset[index], self.length[index] = self.end, len(data)
        self.end += len(data)

    def get(self, index: int) -> bytes:
        n = self.length[index]
        if n < 0:
            raise KeyError(f"trial {index} was never spilled")
        self.file.seek(self.offset[index])
        return self.file.read(n)

    def close(self) -> None:
        self.file.close()


def final_json(spilled: bytes, extra: list[Finding], verdict: str, old_verdict: str) -> bytes:
    """The spilled trial JSON with the dataset review's findings and verdict applied (the
    same result as serialising the assembled review)."""
    if not extra and verdict == old_verdict:
        return spilled
    data = orjson.loads(spilled)
    findings = [Finding.from_dict(f) for f in data["findings"]] + list(extra)
    data["findings"] = [f.to_dict() for f in sort_findings(findings)]
    data["verdict"] = verdict
    return orjson.dumps(data)
