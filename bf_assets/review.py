"""Review orchestration: discover, scan, gate, and report every trial of one or more run roots.

The CLI and the Dagster assets both call these functions.  One broken trial never stops a
batch: an unexpected error while reviewing a trial becomes a ``GATE_UNREADABLE`` finding on
that trial, and every trial discovered appears in the output.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bf_assets.audit import AuditContext, audit_trial
from bf_assets.contract import Outcome, ReleaseVerdict, Severity, Verdict
from bf_assets.findings import Finding, finding, sort_findings
from bf_assets.gate.run import run_gate
from bf_assets.gate.verdict import verdict_of
from bf_assets.ingest.discovery import TrialRef, discover
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.readers import DEFAULT_LIMITS, ReadLimits, clear_path_cache
from bf_assets.ingest.scan import FileEntry, TrialData, scan_trial

# What reading a hostile trial can raise despite the readers' guards: turned into a finding
# on that trial so one trial never stops a batch.
TRIAL_ERRORS = (MemoryError, RecursionError, ValueError, TypeError, KeyError, OSError, UnicodeError)

SLOT_FIELDS = ("task_id", "harness", "model", "skill_mode", "sandbox", "trial_index")


@dataclass(slots=True)
class ReviewOptions:
    limits: ReadLimits = DEFAULT_LIMITS
    tasks_dir: str | None = None
    plan_path: str | None = None
    quarantine_path: str | None = None
    hash_files: bool = False  # sha256 of files no check parses (the raw_trials inventory does)
    workers: int | None = None  # worker processes for large batches (None: every core)
    audits: bool = True  # False: the hard gate alone (the gate's own tests use this)
    cache_dir: str | None = None  # reuse reviews of unchanged trials (bf_assets.cache)


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

    def to_json(self) -> dict[str, Any]:
        ident = self.identity
        out: dict[str, Any] = {"path": self.ref.rel_path, "root": self.ref.root}
        for name in SLOT_FIELDS:
            out[name] = getattr(ident, name)
        out.update(
            {
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
                "skills": self.skills,
                "findings": [f.to_dict() for f in self.findings],
            }
        )
        return out


def review_data(data: TrialData, options: ReviewOptions | None = None) -> TrialReview:
    """The hard gate, then every per-trial audit, merged into one verdict."""
    opts = options or ReviewOptions()
    gate = run_gate(data)
    c = gate.classification
    if not opts.audits or data.ref.link_escape:
        return TrialReview(
            ref=data.ref,
            identity=data.identity,
            layout=data.layout,
            outcome=c.outcome,
            healthy=c.healthy,
            training_ready=c.training_ready,
            verdict=gate.verdict,
            attribution=c.attribution,
            findings=gate.findings,
            files=data.files,
            reward=gate.view.reward,
        )
    ctx = AuditContext(tasks_dir=Path(opts.tasks_dir) if opts.tasks_dir else None)
    audit = audit_trial(
        data,
        ctx,
        outcome=c.outcome,
        attribution=c.attribution,
        existing_checks=frozenset(f.check for f in gate.findings),
    )
    findings, attribution = merge_findings(gate.findings, audit.findings, c.outcome, c.attribution)
    healthy = c.healthy and attribution in ("n/a", "model_capability")
    return TrialReview(
        ref=data.ref,
        identity=data.identity,
        layout=data.layout,
        outcome=c.outcome,
        healthy=healthy,
        training_ready=c.training_ready and healthy,
        verdict=verdict_of(findings),
        attribution=attribution,
        findings=findings,
        files=data.files,
        skills=audit.skills,
        reward=gate.view.reward,
    )


def merge_findings(
    gate: list[Finding], audit: list[Finding], outcome: str, attribution: str
) -> tuple[list[Finding], str]:
    """Gate and audit findings together; the audit's attribution is the more specific one."""
    audit_attr = any(f.check == "ATTR_EXPERIMENT_FIDELITY" for f in audit)
    if audit_attr:
        gate = [f for f in gate if f.check not in ("ATTR_EXPERIMENT_FIDELITY", "ATTR_UNKNOWN")]
        if outcome in ("fail", "normal_timeout", "unhealthy"):
            attribution = "experiment_fidelity"
    return sort_findings([*gate, *audit]), attribution


def _cache_context(opts: ReviewOptions) -> str:
    from bf_assets.cache import tree_digest

    return f"{opts.limits}|{opts.tasks_dir}|{tree_digest(opts.tasks_dir)}|{opts.audits}|{opts.hash_files}"


def review_trial(ref: TrialRef, options: ReviewOptions | None = None) -> TrialReview:
    """Scan and gate one trial; never raises for anything the trial contains."""
    opts = options or ReviewOptions()
    if opts.cache_dir:
        from bf_assets.cache import ReviewCache

        cache = ReviewCache(opts.cache_dir, _cache_context(opts))
        fp = cache.key(ref)
        hit = cache.get(ref, fp)
        if hit is not None:
            return hit
        review = _review_uncached(ref, opts)
        if fp is not None and cache.key(ref) == fp and not _crashed(review):
            cache.put(fp, review)  # only when nothing changed while it was read
        return review
    return _review_uncached(ref, opts)


def _crashed(review: TrialReview) -> bool:
    return any("could not be reviewed safely" in f.message for f in review.findings)


def _review_uncached(ref: TrialRef, opts: ReviewOptions) -> TrialReview:
    try:
        return review_data(scan_trial(ref, opts.limits, hash_files=opts.hash_files), opts)
    except TRIAL_ERRORS as exc:
        f = finding(
            "GATE_UNREADABLE",
            f"the trial could not be reviewed safely: {type(exc).__name__}: {exc}",
            file=".",
        )
        return TrialReview(
            ref=ref,
            identity=Identity(job=ref.job, rollout=ref.rollout),
            layout=ref.layout,
            outcome=Outcome.UNHEALTHY.value,
            healthy=False,
            training_ready=False,
            verdict=Verdict.REJECTED.value,
            attribution="unknown",
            findings=[f],
        )


ProgressFn = Callable[[int, int, TrialRef], None]


@dataclass(slots=True)
class ReviewReport:
    roots: list[str]
    trials: list[TrialReview]
    skipped: list[tuple[str, str]]
    summary: dict[str, Any]
    dataset: Any = None  # bf_assets.dataset.assemble.DatasetReview

    def to_json(self) -> dict[str, Any]:
        return {"trials": [t.to_json() for t in self.trials], "summary": self.summary}


PARALLEL_MIN_TRIALS = 64
CHUNK = 32


def _review_chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[TrialReview]:
    return [review_trial(ref, options) for ref in refs]


def review_refs(
    refs: Sequence[TrialRef],
    options: ReviewOptions | None = None,
    progress: ProgressFn | None = None,
) -> list[TrialReview]:
    """Review trials in order; large batches are spread over worker processes (all cores)."""
    opts = options or ReviewOptions()
    clear_path_cache()
    workers = min(opts.workers or os.cpu_count() or 1, max(1, len(refs) // CHUNK))
    if workers <= 1 or len(refs) < PARALLEL_MIN_TRIALS:
        out = []
        for i, ref in enumerate(refs, start=1):
            out.append(review_trial(ref, opts))
            if progress is not None:
                progress(i, len(refs), ref)
        return out
    chunks = [list(refs[i : i + CHUNK]) for i in range(0, len(refs), CHUNK)]
    results: list[list[TrialReview]] = [[] for _ in chunks]
    done = 0
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(_review_chunk, chunk, opts): n for n, chunk in enumerate(chunks)}
        for fut in as_completed(futures):
            n = futures[fut]
            results[n] = fut.result()
            done += len(chunks[n])
            if progress is not None:
                progress(done, len(refs), chunks[n][-1])
    return [r for chunk in results for r in chunk]


def review_roots(
    roots: Sequence[str | os.PathLike[str]],
    options: ReviewOptions | None = None,
    progress: ProgressFn | None = None,
) -> ReviewReport:
    from bf_assets.dataset.assemble import assemble  # the dataset layer builds on this module

    opts = options or ReviewOptions()
    disc = discover(roots)
    trials = review_refs(disc.trials, opts, progress)
    ds = assemble(trials, plan_path=opts.plan_path, quarantine_path=opts.quarantine_path)
    summary = summarize(ds.trials)
    summary.update(ds.summary())
    report = ReviewReport([str(r) for r in roots], ds.trials, disc.skipped, summary)
    report.dataset = ds
    return report


def release_verdict(trials: Iterable[TrialReview]) -> str:
    """Gate-level release verdict (coverage and publish checks refine it downstream)."""
    ts = list(trials)
    model = [t for t in ts if t.outcome != Outcome.ORACLE]
    exportable = [t for t in model if t.verdict == Verdict.PUBLISHABLE and t.training_ready]
    if not exportable:
        return ReleaseVerdict.NOT_PUBLISHABLE.value
    if len(exportable) < len(model):
        return ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
    return ReleaseVerdict.PUBLISHABLE.value


def summarize(trials: Sequence[TrialReview]) -> dict[str, Any]:
    checks: Counter[str] = Counter()
    severities: Counter[str] = Counter()
    for t in trials:
        for f in t.findings:
            checks[f.check] += 1
            severities[f.severity] += 1
    return {
        "trials": len(trials),
        "healthy": sum(t.healthy for t in trials),
        "training_ready": sum(t.training_ready for t in trials),
        "by_outcome": dict(sorted(Counter(t.outcome for t in trials).items())),
        "by_verdict": dict(sorted(Counter(t.verdict for t in trials).items())),
        "by_layout": dict(sorted(Counter(t.layout for t in trials).items())),
        "by_attribution": dict(sorted(Counter(t.attribution for t in trials).items())),
        "findings_by_check": dict(sorted(checks.items())),
        "findings_by_severity": {s.value: severities.get(s.value, 0) for s in Severity},
        "release_verdict": release_verdict(trials),
    }


def all_publishable(trials: Sequence[TrialReview]) -> bool:
    """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
    return bool(trials) and all(t.healthy and t.verdict == Verdict.PUBLISHABLE for t in trials)


def ordered_findings(trials: Iterable[TrialReview]) -> list[tuple[TrialReview, Finding]]:
    pairs = [(t, f) for t in trials for f in sort_findings(t.findings)]
    return pairs
