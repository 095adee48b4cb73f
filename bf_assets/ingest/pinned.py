"""One walk of the run roots for a whole release: the trials found, pinned for its ingest runs.

``bf-assets release`` walks its run roots once, before any run, and ingests them in runs of a
few thousand trials.  Without a pin every run would walk every root again to find its own
partitions' trials (a 100,000-trial release in 50 runs: 50 walks of a million files).  Inside
:func:`pinned_discovery` the ingest step takes its trials from the release's walk, so every
run of one release reviews the corpus exactly as that walk found it; outside it (the UI, the
sensor, a backfill) each run walks only the way to its own job directories.  A pin may also
hold each job directory's fingerprint as the ``new_job_dirs`` sensor computes it, taken with
the walk, before any trial was read: the ingest records that one (a job directory edited
while it was read then differs from what was recorded, and the sensor ingests it again).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bf_assets.ingest.discovery import TrialRef, trials_in_jobs


@dataclass(slots=True)
class _Pinned:
    by_job: dict[str, list[tuple[int, TrialRef]]]  # job key -> (position in the walk, trial)
    watched: dict[str, str]  # job key -> its sensor fingerprint (none when not taken)


# roots -> what is pinned for them
_PINS: dict[tuple[str, ...], _Pinned] = {}


def _roots_key(roots: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    return tuple(os.path.abspath(r) for r in roots)


class Pin:
    """A pinned walk, a context manager: inside it (until :meth:`unpin`, which may come
    earlier) :func:`trials_of_jobs` over exactly its roots answers from its trials.  It keeps
    the trials indexed by job, not the list it was given."""

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]],
        trials: Sequence[TrialRef],
        watched: Mapping[str, str] | None = None,
    ) -> None:
        self._key = _roots_key(roots)
        self._pinned = _Pinned(_by_job(trials), dict(watched or {}))
        self._previous: _Pinned | None = None
        self._active = False

    def __enter__(self) -> Pin:
        self._previous = _PINS.get(self._key)
        _PINS[self._key] = self._pinned
        self._active = True
        return self

    def __exit__(self, *_exc: object) -> None:
        self.unpin()

    def unpin(self) -> None:
        """End the pin now: a walk's answers again, and its trials let go."""
        self._pinned = _Pinned({}, {})
        if not self._active:
            return
        self._active = False
        if self._previous is None:
            _PINS.pop(self._key, None)
        else:
            _PINS[self._key] = self._previous
        self._previous = None


def pinned_discovery(
    roots: Sequence[str | os.PathLike[str]],
    trials: Sequence[TrialRef],
    watched: Mapping[str, str] | None = None,
) -> Pin:
    """Pin ``trials`` (the result of ``discover_trials(roots)``) for ``roots``, with the job
    directories' sensor fingerprints ``watched`` when they were taken: ``with
    pinned_discovery(roots, trials) as pin: ...``."""
    return Pin(roots, trials, watched)


def _by_job(trials: Sequence[TrialRef]) -> dict[str, list[tuple[int, TrialRef]]]:
    by_job: dict[str, list[tuple[int, TrialRef]]] = {}
    for i, t in enumerate(trials):
        by_job.setdefault(t.job_key, []).append((i, t))
    return by_job


def trials_of_jobs(
    roots: Sequence[str | os.PathLike[str]], job_keys: Collection[str]
) -> list[TrialRef]:
    """The trials of the job partitions ``job_keys``, in discovery order: from the pinned walk
    of these roots when there is one, else from a walk of just those job directories
    (:func:`~bf_assets.ingest.discovery.trials_in_jobs`)."""
    pin = _PINS.get(_roots_key(roots))
    wanted = set(job_keys)
    if pin is None:
        return trials_in_jobs(roots, wanted)
    picked = sorted((it for k in wanted for it in pin.by_job.get(k, ())), key=lambda it: it[0])
    return [t for _, t in picked]


def pinned_fingerprints(
    roots: Sequence[str | os.PathLike[str]], job_keys: Collection[str]
) -> dict[str, str] | None:
    """The sensor fingerprints of the job directories ``job_keys`` taken with the pinned walk
    of these roots; None when there is no pin, or it lacks one of them."""
    pin = _PINS.get(_roots_key(roots))
    if pin is None or any(k not in pin.watched for k in job_keys):
        return None
    return {k: pin.watched[k] for k in job_keys}
