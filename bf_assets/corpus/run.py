"""Reviewing many trials: discover, review (on every core for large batches), then the
dataset review over all of them.

The CLI and the Dagster assets both call these functions.  One broken trial never stops a
batch: an unexpected error while reviewing a trial becomes a ``GATE_UNREADABLE`` finding on
that trial, and every trial discovered appears in the output.
"""

from __future__ import annotations

import itertools
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from bf_assets.corpus.summary import all_publishable, summarize
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.dataset.common import trial_key
from bf_assets.dataset.decide import ExportDecision
from bf_assets.dataset.store import StoreWriter
from bf_assets.ingest.discovery import TrialRef, discover, walk_roots
from bf_assets.ingest.readers import clear_path_cache, for_review_only
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import (
    JobPart,
    SlimTuple,
    TrialReview,
    slim_tuple,
)
from bf_assets.review.trial import crashed, review_uncached

if TYPE_CHECKING:  # the pool is imported where one is started (a small batch needs none)
    from bf_assets.corpus.pool import WorkerPool

T = TypeVar("T")


def review_context(opts: ReviewOptions) -> str:
    """What a trial's review depends on besides its files and the code: the options and the
    task tree's state (part of every cache key)."""
    from bf_assets.corpus.cache import tree_digest
    from bf_assets.ingest.models import model_table

    return (
        f"{opts.limits}|{opts.tasks_dir}|{tree_digest(opts.tasks_dir)}|{opts.audits}"
        f"|{opts.hash_files}|models {model_table().digest}"
    )


def review_trial(ref: TrialRef, options: ReviewOptions | None = None) -> TrialReview:
    """Scan and gate one trial; never raises for anything the trial contains."""
    opts = options or ReviewOptions()
    if opts.cache_dir:
        from bf_assets.corpus.cache import ReviewCache

        cache = ReviewCache(opts.cache_dir, review_context(opts))
        fp = cache.key(ref)
        hit = cache.get(ref, fp)
        if hit is not None:
            return hit
        review = review_uncached(ref, opts)
        if fp is not None and cache.key(ref) == fp and not crashed(review):
            cache.put(fp, review)  # only when nothing changed while it was read
        return review
    return review_uncached(ref, opts)


ProgressFn = Callable[[int, int, TrialRef], None]


@dataclass(slots=True)
class ReviewReport:
    """What a review batch prints: the dataset review of every trial found under ``roots``
    (its ``trials`` are the reviews after it), what was found that is not a trial, and the
    summary.  Close it when done (the dataset review's store, when it has one)."""

    roots: list[str]
    dataset: DatasetReview
    skipped: list[tuple[str, str]]
    summary: dict[str, Any]

    @property
    def trials(self) -> list[TrialReview]:
        return self.dataset.trials

    def to_json(self) -> dict[str, Any]:
        return {
            "trials": [orjson.loads(b) for b in self.trial_json()],
            "summary": self.summary,
        }

    def final_trials(self) -> Iterator[TrialReview]:
        """Each trial after the dataset review (its findings and verdict), in order."""
        return iter(self.dataset.trials)

    def all_publishable(self) -> bool:
        """The CLI's exit-0 condition: at least one trial, each healthy and publishable."""
        return all_publishable(self.dataset.trials)

    def trial_json(self) -> Iterator[bytes]:
        """Each trial's JSON (``TrialReview.to_json``) after the dataset review, in order,
        with its export decision (``exported``, ``export_reason``, ``export_detail``)."""
        ds = self.dataset
        for i, t in enumerate(ds.trials):
            yield _with_decision(ds.trial_json(i), ds.decision, t)

    def close(self) -> None:
        if self.dataset.store is not None:
            self.dataset.store.discard()


def _with_decision(data: bytes, decision: ExportDecision, t: TrialReview) -> bytes:
    """A trial's JSON object with its export decision's members spliced in before the
    closing brace."""
    d = decision.get(trial_key(t))
    if d is None or not data.endswith(b"}"):
        return data
    fields = orjson.dumps(
        {"exported": d.exported, "export_reason": d.reason, "export_detail": d.detail}
    )
    return data[:-1] + b"," + fields[1:]


PARALLEL_MIN_TRIALS = 64
CHUNK = 32
# Chunks sent per worker and not back yet, at most, while the walk goes on: the walk finds
# trials much faster than they are reviewed, and a trial found holds its ref until its
# review is back.
IN_FLIGHT = 4


def worker_count(n_refs: int, opts: ReviewOptions, *, more_to_come: bool = False) -> int:
    """Worker processes for ``n_refs`` trials: 1 (this process) for a small batch, else up to
    ``opts.workers`` (every core by default), at most one per chunk unless ``more_to_come``
    (a walk still finding trials)."""
    if n_refs < PARALLEL_MIN_TRIALS:
        return 1
    most = opts.workers or os.cpu_count() or 1
    return most if more_to_come else min(most, max(1, n_refs // CHUNK))


def worker_pool(workers: int) -> WorkerPool:
    """The worker pool of a review batch (:class:`bf_assets.corpus.pool.WorkerPool`): forked
    workers find what each of them reads already loaded (:func:`_preload`)."""
    from bf_assets.corpus.pool import WorkerPool, start_method

    if start_method() == "fork":
        _preload()
    return WorkerPool(workers)


def pooled_in_order(
    workers: int, fn: Callable[..., T], calls: Iterable[tuple[Any, ...]], *, ahead: int = 2
) -> Iterator[T]:
    """``fn(*args)`` for each ``args`` of ``calls``, in order, from a :func:`worker_pool` of
    ``workers`` (:meth:`~bf_assets.corpus.pool.WorkerPool.in_order`)."""
    with worker_pool(workers) as pool:
        yield from pool.in_order(fn, calls, ahead=ahead)


def _preload() -> None:
    """What every worker would otherwise load on its own after the fork: the secret rules
    (every finding with evidence is redacted; parsing the rule files costs ~0.1 s a process;
    this process loads them anyway for the dataset review's findings) and the bash grammar
    the shell audit reads commands with (its import and parser, a few ms a process)."""
    from bf_assets.audit.bashparse import available
    from bf_assets.redact import default_rules

    default_rules()
    available()


def _review_chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[TrialReview]:
    return [review_trial(ref, options) for ref in refs]


def _spill_chunk(refs: Sequence[TrialRef], options: ReviewOptions) -> list[tuple[bytes, SlimTuple]]:
    """Each review as ``(its JSON bytes, its slim form as plain values)``: serialised in the
    worker."""
    options = spill_options(options)
    out = []
    for ref in refs:
        r = review_trial(ref, options)
        out.append((orjson.dumps(r.to_json()), slim_tuple(r)))
    return out


def spill_options(options: ReviewOptions) -> ReviewOptions:
    """The options a stored review is made with: neither its JSON nor its slim form holds
    the file inventory, so the files are not hashed, nor the files no check reads sized (the
    same findings, verdicts and JSON; a review the cache keeps has its digests and sizes)."""
    if options.cache_dir or options.hash_files:
        return options
    limits = for_review_only(options.limits)
    return options if limits is options.limits else replace(options, limits=limits)


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
    out = []
    calls = ((refs[i : i + CHUNK], opts) for i in range(0, len(refs), CHUNK))
    for items in pooled_in_order(workers, _review_chunk, calls, ahead=IN_FLIGHT):
        out.extend(items)
        if progress is not None:
            progress(len(out), len(refs), refs[len(out) - 1])
    return out


def review_roots(
    roots: Sequence[str | os.PathLike[str]],
    options: ReviewOptions | None = None,
    progress: ProgressFn | None = None,
    *,
    slim: bool = False,
) -> ReviewReport:
    """Discover, review, and the dataset review (``assemble``) over every trial.  Without
    ``slim`` the whole reviews stay in memory.  With ``slim`` (the CLI) trials are reviewed
    while the walk finds them, only slim reviews stay in memory and each trial's whole review
    waits as JSON in the dataset review's store (``DatasetReview.trial_json`` and
    ``full_trial`` read it back); close the report when done."""
    opts = options or ReviewOptions()
    names = [str(r) for r in roots]
    if not slim:
        disc = discover(roots)
        trials = review_refs(disc.trials, opts, progress)
        ds = assemble(trials, plan_path=opts.plan_path, quarantine_path=opts.quarantine_path)
        return _report(names, ds, disc.skipped)
    writer = StoreWriter(unlinked=True)
    store = writer.store
    try:
        walk = _WalkReview(opts, writer, progress)
        reviewed = walk.run(roots)
        ds = assemble(
            reviewed,
            plan_path=opts.plan_path,
            quarantine_path=opts.quarantine_path,
            store=store,
        )
    except BaseException:
        store.discard()
        raise
    return _report(names, ds, walk.skipped)


def _report(roots: list[str], ds: DatasetReview, skipped: list[tuple[str, str]]) -> ReviewReport:
    summary = summarize(ds.trials)
    summary.update(ds.summary())
    return ReviewReport(roots, ds, skipped, summary)


def _prefix(part: JobPart) -> str:
    """What the paths of a directory's trials start with (``TrialReview.rel_path``)."""
    return part.rel_dir + "/" if part.rel_dir else ""


class _WalkReview:
    """Review trials while the walk is still finding them (the CLI path): chunks go to the
    worker pool as soon as they are discovered, whole reviews to the store as JSON, slim
    ones stay; at the end everything is put in ``discover``'s order."""

    def __init__(
        self, opts: ReviewOptions, writer: StoreWriter, progress: ProgressFn | None
    ) -> None:
        self.opts = opts
        self.writer = writer
        self.progress = progress
        self.skipped: list[tuple[str, str]] = []
        # each walked trial's ref until its slim review is back (then the slim one is kept)
        self.walked: list[TrialRef | None] = []
        self.root_of = array("I")  # each walked trial's run root (an index into the roots)
        self.stored_at = array("q")  # each walked trial's index in the store
        self.results: list[Any] = []
        self.order = array("I")  # discover's order, once the walk is over
        self.done = 0

    def keep(self, p: int, item: tuple[bytes, SlimTuple]) -> None:
        data, slim = item
        ref = self.walked[p]
        assert ref is not None
        self.stored_at[p], slim_review = self.writer.add_stored(data, slim, ref)
        self.results[p] = slim_review
        self.walked[p] = None  # the ref's names live on in the slim review
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
            for p, ref in enumerate(self.walked):
                assert ref is not None
                self.keep(p, _spill_chunk([ref], self.opts)[0])
        self._sort()
        self.writer.store.reorder([self.stored_at[p] for p in self.order])
        trials = [self.results[p] for p in self.order]
        self.walked, self.results = [], []  # the slim reviews hold what is still needed
        return trials

    def _sort(self) -> None:
        """Discover's order: by root, then path.  The slim reviews derive their paths, so
        the trials of one directory are sorted by rollout (no string per trial) and the
        directories by path; when a directory's path is a prefix of another's (a trial
        nested below another directory of trials) every path is compared whole."""
        order = self._sort_by_directory()
        if order is None:
            order = sorted(range(len(self.results)), key=lambda p: self.results[p].rel_path)
        order.sort(key=self.root_of.__getitem__)  # stable: by root, then as sorted
        self.order = array("I", order)

    def _sort_by_directory(self) -> list[int] | None:
        groups: dict[tuple[int, JobPart], list[int]] = {}
        for p, t in enumerate(self.results):
            if not t.derived_paths:
                return None
            groups.setdefault((self.root_of[p], t.job_part), []).append(p)
        heads = sorted(groups, key=lambda g: (g[0], _prefix(g[1])))
        for a, b in itertools.pairwise(heads):
            if a[0] == b[0] and _prefix(b[1]).startswith(_prefix(a[1])):
                return None
        order: list[int] = []
        for g in heads:
            order.extend(sorted(groups[g], key=lambda p: self.results[p].rollout))
        return order

    def _found(self, item: tuple[int, TrialRef]) -> None:
        self.root_of.append(item[0])
        self.stored_at.append(-1)
        self.walked.append(item[1])
        self.results.append(None)

    def _parallel(self, walk: Iterator[tuple[int, TrialRef]], workers: int) -> None:
        from concurrent.futures import FIRST_COMPLETED, as_completed, wait

        pending: dict[Any, int] = {}
        with worker_pool(workers) as pool:
            sent = 0

            def send(upto: int) -> None:
                nonlocal sent
                while sent < upto:
                    refs = self.walked[sent : min(sent + CHUNK, upto)]  # none back yet
                    pending[pool.submit(_spill_chunk, refs, self.opts)] = sent
                    sent += len(refs)

            for item in walk:
                self._found(item)
                if len(self.walked) - sent >= CHUNK:
                    send(len(self.walked))
                    self._collect(pool, pending, [f for f in pending if f.done()])
                    while len(pending) >= IN_FLIGHT * workers:  # the walk waits for the
                        done, _ = wait(list(pending), return_when=FIRST_COMPLETED)  # workers
                        self._collect(pool, pending, done)
            send(len(self.walked))
            self._collect(pool, pending, as_completed(list(pending)))

    def _collect(self, pool: WorkerPool, pending: dict[Any, int], ready: Iterable[Any]) -> None:
        for fut in ready:
            start = pending.pop(fut)  # a finished future holds its result: let it go
            for k, item in enumerate(pool.result(fut)):
                self.keep(start + k, item)
