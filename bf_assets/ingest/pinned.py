"""One walk of the run roots for a whole release: the trials found, pinned for its ingest runs.

``bf-assets release`` walks its run roots once, before any run, and ingests them in runs of a
few thousand trials.  Without a pin every run would walk every root again to find its own
partitions' trials (a 100,000-trial release in 50 runs: 50 walks of a million files).  Inside
:func:`pinned_discovery` the ingest step takes its trials from the release's walk, so every
run of one release reviews the corpus exactly as that walk found it; outside it (the UI, the
sensor, a backfill) each run walks the roots itself.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from bf_assets.ingest.discovery import TrialRef, discover_trials

# roots -> job key -> (position in the walk's order, trial)
_PINS: dict[tuple[str, ...], dict[str, list[tuple[int, TrialRef]]]] = {}


def _roots_key(roots: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    return tuple(os.path.abspath(r) for r in roots)


@contextmanager
def pinned_discovery(
    roots: Sequence[str | os.PathLike[str]], trials: Sequence[TrialRef]
) -> Iterator[None]:
    """Within the block, :func:`trials_of_jobs` over exactly ``roots`` answers from
    ``trials`` (the result of ``discover_trials(roots)``) instead of walking again."""
    key = _roots_key(roots)
    by_job: dict[str, list[tuple[int, TrialRef]]] = {}
    for i, t in enumerate(trials):
        by_job.setdefault(t.job_key, []).append((i, t))
    previous = _PINS.get(key)
    _PINS[key] = by_job
    try:
        yield
    finally:
        if previous is None:
            _PINS.pop(key, None)
        else:
            _PINS[key] = previous


def trials_of_jobs(
    roots: Sequence[str | os.PathLike[str]], job_keys: Collection[str]
) -> list[TrialRef]:
    """The trials of the job partitions ``job_keys``, in discovery order: from the pinned walk
    of these roots when there is one, else from a new walk."""
    pin = _PINS.get(_roots_key(roots))
    wanted = set(job_keys)
    if pin is None:
        return [t for t in discover_trials(roots) if t.job_key in wanted]
    picked = sorted((it for k in wanted for it in pin.get(k, ())), key=lambda it: it[0])
    return [t for _, t in picked]
