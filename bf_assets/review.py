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
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bf_assets.audit import AuditContext, audit_trial
from bf_assets.contract import Outcome, ReleaseVerdict, Severity, Verdict
from bf_assets.findings import Finding, finding, sort_findings
from bf_assets.gate.run import run_gate
from bf_assets.gate.verdict import verdict_of
from bf_assets.ingest.discovery import TrialRef, discover, walk_roots
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.readers import DEFAULT_LIMITS, ReadLimits, clear_path_cache
from bf_assets.ingest.scan import FileEntry, TrialData, scan_trial
from bf_assets.spill import Interner, Spill, final_json, slim

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
    spill: Spill | None = None  # the trials' full JSON when reviewed with spill=True
    spilled_verdicts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "trials": [orjson.loads(b) for b in self.trial_json()],
            "summary": self.summary,
        }

    def trial_json(self) -> Iterator[bytes]:
        """Each trial's JSON (``TrialReview.to_json``) after the dataset review, in order."""
        if self.spill is None:
            for t in self.trials:
                yield orjson.dumps(t.to_json())
            return
        from bf_assets.dataset.common import trial_key

        extra = self.dataset.coverage.trial_findings if self.dataset is not None else {}
        for i, t in enumerate(self.trials):
            yield final_json(
                self.spill.get(i),
                extra.get(trial_key(t), []),
                t.verdict,
                self.spilled_verdicts[i],
            )

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()


PARALLEL_MIN_TRIALS = 64
CHUNK = 32


def worker_count(n_refs: int, opts: ReviewOptions, *, more_to_come: bool = False) -> int:
    """Worker processes for ``n_refs`` trials: 1 (this process) for a small batch, else up to
    ``opts.workers`` (every core by default), at most one per chunk unless ``more_to_come``
    (a walk still finding trials)."""
    if n_refs < PARALLEL_MIN_TRIALS:
        return 1
    most = opts.workers or os.cpu_count() or 1
    return most if more_to_come else min(most, max(1, n_refs // CHUNK))


def fork_pool(workers: int) -> ProcessPoolExecutor:
    """The worker pool of a review batch (fork where there is one: the workers share the
    parent's imports)."""
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


def _review_chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[TrialReview]:
    return [review_trial(ref, options) for ref in refs]


def _spill_chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[tuple[bytes, Any]]:
    """Each review as ``(its JSON bytes, its slim form)``: serialised in the worker."""
    out = []
    for ref in refs:
        r = review_trial(ref, options)
        out.append((orjson.dumps(r.to_json()), slim(r)))
    return out


def review_refs(
    refs: Sequence[TrialRef],
    options: ReviewOptions | None = None,
    progress: ProgressFn | None = None,
) -> list[TrialReview]:
    """Review trials in order; large batches are spread over worker processes (all cores)."""
    opts = options or ReviewOptions()
    clear_path_cache()
    workers = worker_count(len(refs), opts)
    if workers <= 1:
        out = []
        for i, ref in enumerate(refs, start=1):
            out.append(review_trial(ref, opts))
            if progress is not None:
                progress(i, len(refs), ref)
        return out
    results: list[Any] = [None] * len(refs)
    done = 0
    with fork_pool(workers) as pool:
        futures = {
            pool.submit(_review_chunk, refs[i : i + CHUNK], opts): i
            for i in range(0, len(refs), CHUNK)
        }
        for fut in as_completed(futures):
            start = futures.pop(fut)  # a finished future holds its result: let it go
            items = fut.result()
            results[start : start + len(items)] = items
            done += len(items)
            if progress is not None:
                progress(done, len(refs), refs[start + len(items) - 1])
    return results


def review_roots(
    roots: Sequence[str | os.PathLike[str]],
    options: ReviewOptions | None = None,
    progress: ProgressFn | None = None,
    *,
    spill: bool = False,
) -> ReviewReport:
    """Discover, review and assemble.  ``spill=True`` (the CLI) keeps slim reviews in
    memory and each trial's JSON on disk: read it back with ``ReviewReport.trial_json``;
    close the report when done."""
    from bf_assets.dataset.assemble import assemble  # the dataset layer builds on this module

    opts = options or ReviewOptions()
    store: Spill | None = None
    if spill:
        store = Spill()
        walk = _WalkReview(opts, store, progress)
        try:
            trials = walk.run(roots)
        except BaseException:
            store.close()
            raise
        skipped = walk.skipped
    else:
        disc = discover(roots)
        trials = review_refs(disc.trials, opts, progress)
        skipped = disc.skipped
    try:
        before = [t.verdict for t in trials] if store is not None else []
        ds = assemble(trials, plan_path=opts.plan_path, quarantine_path=opts.quarantine_path)
    except BaseException:
        if store is not None:
            store.close()
        raise
    summary = summarize(ds.trials)
    summary.update(ds.summary())
    report = ReviewReport([str(r) for r in roots], ds.trials, skipped, summary)
    report.dataset = ds
    report.spill = store
    report.spilled_verdicts = before
    return report


class _WalkReview:
    """Review trials while the walk is still finding them (the CLI path): chunks go to the
    worker pool as soon as they are discovered, full reviews to the spill file, slim ones
    stay; at the end everything is put in ``discover``'s order."""

    def __init__(self, opts: ReviewOptions, store: Spill, progress: ProgressFn | None) -> None:
        self.opts = opts
        self.store = store
        self.progress = progress
        self.skipped: list[tuple[str, str]] = []
        self.walked: list[tuple[int, TrialRef]] = []
        self.results: list[Any] = []
        self.interner = Interner()
        self.done = 0

    def keep(self, p: int, item: tuple[bytes, TrialReview]) -> None:
        data, review = item
        self.store.put(p, data)
        slim_review = self.interner.review(review, self.walked[p][1])
        self.results[p] = slim_review
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, len(self.walked), slim_review.ref)

    def run(self, roots: Sequence[str | os.PathLike[str]]) -> list[TrialReview]:
        clear_path_cache()
        walk = walk_roots(roots, self.skipped)
        more = False
        for item in walk:  # a small batch is reviewed in this process
            self._found(item)
            if len(self.walked) >= PARALLEL_MIN_TRIALS:
                more = True
                break
        workers = worker_count(len(self.walked), self.opts, more_to_come=more)
        if workers > 1:
            self._parallel(walk, workers)
        else:
            for item in walk:
                self._found(item)
            for p, (_, ref) in enumerate(self.walked):
                self.keep(p, _spill_chunk([ref], self.opts)[0])
        order = sorted(
            range(len(self.walked)), key=lambda p: (self.walked[p][0], self.walked[p][1].rel_path)
        )
        self.store.reorder(order)
        trials = [self.results[p] for p in order]
        self.walked, self.results = [], []  # the slim reviews hold what is still needed
        return trials

    def _found(self, item: tuple[int, TrialRef]) -> None:
        self.walked.append(item)
        self.results.append(None)

    def _parallel(self, walk: Iterator[tuple[int, TrialRef]], workers: int) -> None:
        pending: dict[Any, int] = {}
        with fork_pool(workers) as pool:
            sent = 0

            def send(upto: int) -> None:
                nonlocal sent
                while sent < upto:
                    refs = [ref for _, ref in self.walked[sent : min(sent + CHUNK, upto)]]
                    pending[pool.submit(_spill_chunk, refs, self.opts)] = sent
                    sent += len(refs)

            for item in walk:
                self._found(item)
                if len(self.walked) - sent >= CHUNK:
                    send(len(self.walked))
                    self._collect(pending, block=False)
            send(len(self.walked))
            self._collect(pending, block=True)

    def _collect(self, pending: dict[Any, int], *, block: bool) -> None:
        ready = as_completed(list(pending)) if block else [f for f in pending if f.done()]
        for fut in ready:
            start = pending.pop(fut)  # a finished future holds its result: let it go
            for k, item in enumerate(fut.result()):
                self.keep(start + k, item)


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
