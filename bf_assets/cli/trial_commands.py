"""The person in the loop: ``bf-assets show TRIAL`` and ``bf-assets quarantine hold|release``.

Both review the corpus the release would see (the run roots, task tree and plan, from the
flags or the same environment variables as the Dagster resources), run the dataset review
and find the named trial in it: a typo is an error that names near matches.

``show`` writes the trial's review page (and the index) and prints its path.
``quarantine`` checks the decision (a trial with a blocker is never released; an entry the
file already overrides is refused), appends the entry atomically, reviews again with the new
file and prints what the next release does with the trial.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bf_assets.contract import Severity
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.dataset.common import trial_key
from bf_assets.dataset.decide import Decision
from bf_assets.dataset.quarantine import (
    QuarantineError,
    append_entry,
    apply_quarantine,
    entry_matches,
    find_trial,
    new_entry,
    trial_path,
)
from bf_assets.review.record import TrialReview

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUNS = REPO_ROOT / "data" / "runs" / "jobs"
DEFAULT_TASKS = REPO_ROOT / "data" / "runs" / "tasks"
DEFAULT_QUARANTINE = "quarantine.yaml"


class DecideError(Exception):
    """Bad usage or a refused decision (the CLI prints it and exits 2)."""


@dataclass(slots=True)
class Corpus:
    roots: list[str]
    tasks: str | None
    plan: str | None
    reviews: list[TrialReview]


def _roots(args: argparse.Namespace) -> tuple[list[str], bool]:
    if args.runs:
        return list(args.runs), False
    env = [r for r in os.environ.get("BF_RUN_ROOTS", "").split(os.pathsep) if r.strip()]
    return (env, False) if env else ([str(DEFAULT_RUNS)], True)


def review_corpus(args: argparse.Namespace, progress: Callable[..., None] | None = None) -> Corpus:
    roots, default = _roots(args)
    for r in roots:
        if not Path(r).is_dir():
            raise DecideError(f"run root {r!r} is not a directory")
    tasks = args.tasks or os.environ.get("BF_TASKS_DIR") or None
    if tasks is None and default and DEFAULT_TASKS.is_dir():
        tasks = str(DEFAULT_TASKS)
    if tasks and not Path(tasks).is_dir():
        raise DecideError(f"--tasks {tasks!r} is not a directory")
    plan = args.plan or os.environ.get("BF_PLAN") or None
    if plan and not Path(plan).is_file():
        raise DecideError(f"--plan {plan!r} is not a file")
    if args.workers is not None and args.workers < 1:
        raise DecideError("--workers must be at least 1")
    from bf_assets.corpus.run import review_refs
    from bf_assets.ingest.discovery import discover
    from bf_assets.review.options import ReviewOptions

    opts = ReviewOptions(
        tasks_dir=tasks, plan_path=plan, workers=args.workers, cache_dir=args.cache_dir
    )
    found = discover(roots)
    reviews = review_refs(found.trials, opts, progress)
    return Corpus(roots, tasks, plan, reviews)


def _assemble(c: Corpus, quarantine: str | None) -> DatasetReview:
    try:
        return assemble(c.reviews, plan_path=c.plan, quarantine_path=quarantine)
    except ValueError as exc:  # PlanError, QuarantineError
        raise DecideError(str(exc)) from None


def _find(ds: DatasetReview, text: str) -> TrialReview:
    try:
        return find_trial(ds.trials, text)
    except QuarantineError as exc:
        raise DecideError(str(exc)) from None


def default_pages_dir(raw: bool) -> Path:
    """``<warehouse>/report/pages`` (``pages-raw`` for raw pages), the folder the
    ``trial_pages`` asset writes; ``$BF_WAREHOUSE`` as ``defs.resources.local_warehouse``
    reads it."""
    wh = os.environ.get("BF_WAREHOUSE") or str(REPO_ROOT / "data" / "warehouse")
    base = (
        REPO_ROOT / "data"
        if "://" in wh and not wh.startswith("file://")
        else Path(wh.removeprefix("file://"))
    )
    return base / "report" / ("pages-raw" if raw else "pages")


def show(args: argparse.Namespace, progress: Callable[..., None] | None = None) -> int:
    from bf_assets.pages.site import write_pages

    quarantine = args.quarantine or os.environ.get("BF_QUARANTINE") or None
    if quarantine and not Path(quarantine).is_file():
        raise DecideError(f"--quarantine {quarantine!r} is not a file")
    corpus = review_corpus(args, progress)
    ds = _assemble(corpus, quarantine)
    t = _find(ds, args.trial)
    out = Path(args.out) if args.out else default_pages_dir(args.raw)
    report = out.parent / "review.md"
    res = write_pages(
        ds,
        out,
        clean=not args.raw,
        only={trial_key(t)},
        report=report if report.is_file() else None,
    )
    path = res.pages[trial_key(t)].resolve()
    print(path)
    if args.raw:
        sys.stderr.write("bf-assets: raw page (uncleaned values): keep it on this machine\n")
    if args.open:
        import webbrowser

        webbrowser.open(path.as_uri())
    return 0


CLOCK_SLACK = timedelta(minutes=5)


def _when(ds: DatasetReview, t: TrialReview) -> datetime:
    """Now, to the second; just after the latest entry naming the trial when that one is
    dated within ``CLOCK_SLACK`` of now (a hold and a release in the same second still come
    in order).  An entry dated further ahead is left to refuse the decision."""
    now = datetime.now().replace(microsecond=0)
    latest = None
    for e in ds.entries:
        if entry_matches(e, t):
            try:
                at = datetime.fromisoformat(e.at).replace(tzinfo=None)
            except ValueError:
                continue
            latest = at if latest is None or at > latest else latest
    if latest is not None and now <= latest <= now + CLOCK_SLACK:
        return latest.replace(microsecond=0) + timedelta(seconds=1)
    return now


def _describe(d: Decision | None) -> str:
    if d is None:
        return "not reviewed"
    if d.exported:
        return f"exported ({d.detail})" if d.detail else "exported"
    return f"excluded: {d.reason}" + (f" ({d.detail})" if d.detail else "")


def quarantine(args: argparse.Namespace, progress: Callable[..., None] | None = None) -> int:
    action = "quarantine" if args.decision == "hold" else "release"
    file = Path(args.file or os.environ.get("BF_QUARANTINE") or DEFAULT_QUARANTINE)
    if file.exists() and not file.is_file():
        raise DecideError(f"--file {str(file)!r} is not a file")
    reason, by = args.reason.strip(), args.by.strip()
    if not reason or not by:
        raise DecideError("--reason and --by must not be empty")
    corpus = review_corpus(args, progress)
    before = _assemble(corpus, str(file) if file.exists() else None)
    t = _find(before, args.trial)
    key = trial_key(t)
    blockers = sorted({f.check for f in t.findings if f.severity == Severity.BLOCKER})
    if action == "release" and blockers:
        raise DecideError(
            f"refusing to release {trial_path(t)}: it has blocker finding(s) "
            f"{', '.join(blockers)}; a release clears quarantine-severity findings only"
        )
    try:
        entry = new_entry(trial_path(t), action, reason, by, at=_when(before, t))
        decides = apply_quarantine(corpus.reviews, [*before.entries, entry]).get(key)
    except QuarantineError as exc:
        raise DecideError(str(exc)) from None
    if decides is not entry:
        assert decides is not None
        raise DecideError(
            f"entry {decides.index} of {file} ({decides.action}, at {decides.at}) is dated "
            f"later and would still decide {trial_path(t)}; correct that entry first"
        )
    try:
        entries = append_entry(file, entry)
    except QuarantineError as exc:
        raise DecideError(str(exc)) from None
    after = _assemble(corpus, str(file))
    t_after = next(x for x in after.trials if trial_key(x) == key)
    print(f"appended to {file} (entry {len(entries)}): {action} {entry.trial}")
    print(f"  reason: {entry.reason}")
    print(f"  by {entry.by}, at {entry.at}")
    print(f"verdict: {t.verdict} -> {t_after.verdict}")
    print(f"next release: {_describe(after.decision.get(key))}")
    print(f"  before this entry: {_describe(before.decision.get(key))}")
    if action == "quarantine" and blockers:
        print(f"  (already rejected by {', '.join(blockers)}: the hold changes nothing yet)")
    print(f"release verdict: {before.release_verdict} -> {after.release_verdict}")
    print(f"the next release reading {file} applies it (bf-assets release --quarantine {file})")
    return 0
