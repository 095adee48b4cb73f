"""Splitting job partitions into partition ranges, one run each (scale-out of the ingest).

A partition range is a run of ``ingest_job`` tagged ``dagster/asset_partition_range_start``
and ``…_end``: its single ``ingest_trials`` step reviews every trial of the range in one
batch, and the Parquet IO manager still writes one file per partition.  A big corpus is
spread over several machines by launching several such runs (a run launcher or
``dagster job execute``), each on its own executor (Celery workers, Kubernetes pods).

A range's run holds the reviews and tables of every trial in it, so ranges are cut to at most
:func:`ingest_run_trials` trials (``BF_INGEST_RUN_TRIALS``, the same bound as the runs of
``bf-assets release``): a corpus of any size is many bounded runs, queued or spread over the
workers, never one run per worker that grows with the corpus.

The functions are Dagster-free: the order is the instance's partition order
(``instance.get_dynamic_partitions``), since a range takes in every partition between its
ends in that order.  ``python -m bf_assets.defs.ranges [--ranges N] [--max-trials M]``
(Dagster imported there only) registers one partition per job directory of ``$BF_RUN_ROOTS``
in the instance of ``$DAGSTER_HOME`` and prints one JSON line per range: its partitions,
trials and run tags, ready for ``dagster job execute|launch --tags`` (see
``deploy/README.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
PARTITION = "dagster/partition"
# Trials per ingest run: a range of job partitions is ingested in runs of at most this many
# trials (``bf-assets release`` and the ranges of a scale-out alike), so the reviews and
# tables one run holds stay bounded however large the corpus.
INGEST_RUN_TRIALS_ENV = "BF_INGEST_RUN_TRIALS"
DEFAULT_INGEST_RUN_TRIALS = 2000


def _count_setting(name: str, default: int) -> int:
    """``$name`` as a count of at least 1; ``default`` when unset or not an integer."""
    raw = os.environ.get(name, "").strip()
    try:
        return max(1, int(raw)) if raw else default
    except ValueError:
        return default


def ingest_run_trials() -> int:
    """The most trials one ingest run takes in: ``$BF_INGEST_RUN_TRIALS`` (at least 1), else
    :data:`DEFAULT_INGEST_RUN_TRIALS`."""
    return _count_setting(INGEST_RUN_TRIALS_ENV, DEFAULT_INGEST_RUN_TRIALS)


# Job partitions per run of a backfill ("Materialize all" in the UI, a backfill of the
# ingest assets): one run per this many partitions, not one run over every partition (which
# would hold every trial of the corpus).  Partitions are job directories, not trials: with
# the generator's 100-trial jobs, 20 partitions are the 2,000 trials of one release run.
BACKFILL_PARTITIONS_ENV = "BF_BACKFILL_PARTITIONS_PER_RUN"
DEFAULT_BACKFILL_PARTITIONS = 20


def backfill_partitions_per_run() -> int:
    """The job partitions one backfill run of the ingest assets takes in:
    ``$BF_BACKFILL_PARTITIONS_PER_RUN`` (at least 1), else :data:`DEFAULT_BACKFILL_PARTITIONS`."""
    return _count_setting(BACKFILL_PARTITIONS_ENV, DEFAULT_BACKFILL_PARTITIONS)


def split_ranges(
    order: Sequence[str],
    n: int,
    weights: Mapping[str, int] | None = None,
    max_weight: int | None = None,
) -> list[list[str]]:
    """``order`` cut into consecutive, non-empty ranges of about equal weight (``weights[key]``,
    e.g. trials per job; 1 per partition when absent): ``n`` of them, or more where
    ``max_weight`` asks for more, since no range weighs more than ``max_weight`` unless it is
    a single key heavier than that.

    Every key lands in exactly one range, in order; fewer than ``n`` ranges come back when
    there are fewer partitions than ``n``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if max_weight is not None and max_weight < 1:
        raise ValueError(f"max_weight must be at least 1, got {max_weight}")
    keys = list(dict.fromkeys(order))
    if not keys:
        return []
    w = [max(0, int(weights.get(k, 1))) if weights is not None else 1 for k in keys]
    total = sum(w)
    if max_weight is not None:
        n = max(n, math.ceil(total / max_weight))
    ranges = _balanced(keys, w, min(n, len(keys)), total)
    if max_weight is None:
        return ranges
    weight = dict(zip(keys, w, strict=True))
    return [piece for r in ranges for piece in capped(r, weight, max_weight)]


def capped(keys: Sequence[str], weight: Mapping[str, int], most: int) -> list[list[str]]:
    """Consecutive ``keys`` cut greedily so no piece passes ``most`` (a key heavier than that
    is a piece of its own); a key missing from ``weight`` weighs nothing.  Cuts a balanced
    range (which can overshoot its share by up to one key's weight) and the blocks of
    ``bf-assets release``'s ingest runs."""
    out: list[list[str]] = []
    held = 0
    for k in keys:
        n = weight.get(k, 0)
        if out and held + n <= most:
            out[-1].append(k)
            held += n
        else:
            out.append([k])
            held = n
    return out


def _balanced(keys: list[str], w: list[int], n: int, total: int) -> list[list[str]]:
    """``keys`` cut into ``n`` (≤ ``len(keys)``) consecutive ranges of about ``total / n``."""
    ranges: list[list[str]] = []
    current: list[str] = []
    done = 0
    for i, (key, weight) in enumerate(zip(keys, w, strict=True)):
        current.append(key)
        done += weight
        left_keys = len(keys) - i - 1
        left_ranges = n - len(ranges) - 1
        # close the range once it reaches its share, keeping one key for each range still due
        share = total * (len(ranges) + 1) / n
        if left_ranges > 0 and (done >= share or left_keys == left_ranges):
            ranges.append(current)
            current = []
    if current:
        ranges.append(current)
    return ranges


def range_run_tags(block: Sequence[str]) -> dict[str, str]:
    """Run tags that make a run of ``ingest_job`` cover ``block`` (consecutive partitions):
    the range tags, or ``dagster/partition`` for a single partition."""
    if not block:
        raise ValueError("an empty partition range")
    if len(block) == 1:
        return {PARTITION: block[0]}
    return {RANGE_START: block[0], RANGE_END: block[-1]}


def register_ranges(
    n: int, roots: Sequence[str] | None = None, max_trials: int | None = None
) -> list[dict[str, Any]]:
    """Register one partition per job directory of ``roots`` (default the ``run_roots``
    default: ``$BF_RUN_ROOTS``) in the current instance and cut them into ranges balanced by
    trials, ``n`` or more, each of at most ``max_trials`` trials (default
    :func:`ingest_run_trials`; ``0``: no bound) unless one job holds more:
    ``[{"partitions", "trials", "tags"}]``."""
    import dagster as dg

    from bf_assets.defs.partitions import job_partitions
    from bf_assets.defs.resources import default_run_roots
    from bf_assets.ingest.discovery import discover_trials

    weights: dict[str, int] = {}
    for t in discover_trials(list(roots) if roots is not None else default_run_roots()):
        weights[t.job_key] = weights.get(t.job_key, 0) + 1
    instance = dg.DagsterInstance.get()
    name = job_partitions.name or "trial_jobs"
    known = set(instance.get_dynamic_partitions(name))
    new = [k for k in sorted(weights) if k not in known]
    if new:
        instance.add_dynamic_partitions(name, new)
    order = [k for k in instance.get_dynamic_partitions(name) if k in weights]
    return [
        {"partitions": b, "trials": sum(weights[k] for k in b), "tags": range_run_tags(b)}
        for b in split_ranges(order, n, weights, _bound(max_trials))
    ]


def _bound(max_trials: int | None) -> int | None:
    if max_trials is None:
        return ingest_run_trials()
    return max_trials if max_trials > 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bf_assets.defs.ranges",
        description="Register the job partitions of $BF_RUN_ROOTS and print their ranges "
        "(one JSON line each: partitions, trials, run tags), N or more, of bounded trials.",
    )
    p.add_argument(
        "--ranges", type=int, default=2, help="ranges at least (default 2: one per worker)"
    )
    p.add_argument(
        "--max-trials",
        type=int,
        default=None,
        help="trials per range at most (default $BF_INGEST_RUN_TRIALS or "
        f"{DEFAULT_INGEST_RUN_TRIALS:,}; 0: no bound, exactly --ranges ranges)",
    )
    p.add_argument("--roots", nargs="*", help="run roots (default $BF_RUN_ROOTS)")
    args = p.parse_args(argv)
    if args.ranges < 1:
        p.error("--ranges must be at least 1")
    if args.max_trials is not None and args.max_trials < 0:
        p.error("--max-trials must be 0 or more")
    for r in register_ranges(args.ranges, args.roots, args.max_trials):
        sys.stdout.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
