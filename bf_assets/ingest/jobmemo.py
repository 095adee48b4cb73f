"""The ``new_job_dirs`` sensor's walk, tick after tick: job directories unchanged since the
last tick are not classified or fingerprinted again.

Every tick the sensor needs every job directory of the run roots with its fingerprint
(:func:`~bf_assets.ingest.discovery.discover_jobs`): the head of every ``result.json`` read
to classify its directory, then a stat walk of every trial, for a corpus that mostly
stands still.

:func:`discover_jobs_since` gives exactly what ``discover_jobs(roots)`` gives, using a
:class:`JobMemo` kept by the caller between calls.  The memo remembers, per *unit* (a job
directory not inside another job directory of the same walk), the stat digest of the unit's
whole tree (:func:`~bf_assets.ingest.treeprint.linkless_tree`: every entry's mode, size,
mtime, ctime and inode) and the job directories found in it with their fingerprints.  A unit
whose digest is unchanged is not entered: its job directories are taken from the memo.  What
the walk finds in a unit depends on nothing but that tree, as long as:

* the unit holds no link (a unit with one is never remembered);
* the walk meets no directory link inside a root (then the whole walk, and the memo is
  cleared), and the run roots do not lie inside one another (likewise).

The digest is taken *before* the unit is walked and fingerprinted, so a file that changes
while the tick reads the unit makes the next tick's digest differ.  A unit is remembered from
the second tick that finds it on (the first only learns where the units are).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from bf_assets.ingest.discovery import (
    JobDir,
    TrialRef,
    WholeWalkNeeded,
    _walk_root,
    _within,
    discover_jobs,
    group_jobs,
    roots_overlap,
)
from bf_assets.ingest.treeprint import linkless_tree


@dataclass(slots=True)
class _Unit:
    digest: str
    jobs: list[JobDir]


@dataclass(slots=True)
class JobMemo:
    """What the last walk of some run roots found, per unit (``path -> _Unit``), and the
    units to remember from the next walk on."""

    roots: tuple[str, ...] = ()
    units: dict[str, _Unit] = field(default_factory=dict)
    candidates: set[str] = field(default_factory=set)
    reused: int = 0  # units taken from the memo by the last walk
    walked: int = 0  # units walked by the last walk

    def clear(self) -> None:
        self.units.clear()
        self.candidates.clear()


class _Tick:
    """One walk's use of the memo: at each directory, whether the memo answers for it."""

    def __init__(self, memo: JobMemo) -> None:
        self.memo = memo
        self.hits: list[JobDir] = []
        self.hit_units: list[str] = []
        self.pending: dict[str, str | None] = {}  # unit path -> digest taken before its walk

    def __call__(self, d: str) -> bool:
        memo = self.memo
        if d not in memo.units and d not in memo.candidates:
            return False
        digest = linkless_tree(d)
        known = memo.units.get(d)
        if digest is not None and known is not None and known.digest == digest:
            self.hits.extend(known.jobs)
            self.hit_units.append(d)
            memo.reused += 1
            return True
        self.pending[d] = digest
        memo.walked += 1
        return False


def discover_jobs_since(roots: Sequence[str | os.PathLike[str]], memo: JobMemo) -> list[JobDir]:
    """``discover_jobs(roots)``, with the units ``memo`` knows unchanged taken from it; the
    memo learns this walk's units."""
    abs_roots = tuple(os.path.abspath(r) for r in roots)
    if memo.roots != abs_roots:
        memo.clear()
        memo.roots = abs_roots
    memo.reused = memo.walked = 0
    if roots_overlap(abs_roots):
        memo.clear()
        return discover_jobs(roots)
    tick = _Tick(memo)
    fresh: list[TrialRef] = []
    try:
        for root_s in abs_roots:
            if not os.path.isdir(root_s):
                raise NotADirectoryError(f"run root {root_s} is not a directory")
            fresh.extend(_walk_root(root_s, [], set(), reuse=tick))
    except WholeWalkNeeded:
        memo.clear()
        return discover_jobs(roots)
    jobs = [*tick.hits, *group_jobs(fresh)]
    if len({j.key for j in jobs}) != len(jobs):  # one job key in two places (two roots of one name)
        memo.clear()
        return discover_jobs(roots)
    _learn(memo, tick, jobs)
    return sorted(jobs, key=lambda j: j.key)


def _learn(memo: JobMemo, tick: _Tick, jobs: list[JobDir]) -> None:
    """The units of the next walk: each unit this walk took from the memo, each unit it
    walked with the digest taken before (one with a link, or unreadable, is dropped) and the
    job directories inside it (walked, or taken from a unit inside it); units this walk did
    not reach are dropped.  A job directory outside every unit is a unit from the next walk
    on."""
    units = {p: memo.units[p] for p in tick.hit_units}
    for path, digest in tick.pending.items():
        if digest is not None:
            inside = [j for j in jobs if j.path == path or _within(j.path, path)]
            units[path] = _Unit(digest, inside)
    memo.units = units
    memo.candidates = set()
    covered = list(tick.hit_units) + list(tick.pending)
    for path in sorted({j.path for j in jobs}, key=len):
        if not any(path == c or _within(path, c) for c in covered):
            memo.candidates.add(path)
            covered.append(path)
