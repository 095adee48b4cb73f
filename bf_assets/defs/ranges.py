"""Splitting job partitions into partition ranges, one run each (scale-out of the ingest).

A partition range is a run of ``ingest_job`` tagged ``dagster/asset_partition_range_start``
and ``…_end``: its single ``ingest_trials`` step reviews every trial of the range in one
batch, and the Parquet IO manager still writes one file per partition.  A big corpus is
spread over several machines by launching several such runs (a run launcher or
``dagster job execute``), each on its own executor (Celery workers, Kubernetes pods).

The functions are Dagster-free: the order is the instance's partition order
(``instance.get_dynamic_partitions``), since a range takes in every partition between its
ends in that order.  ``python -m bf_assets.defs.ranges [--ranges N]`` (Dagster imported
there only) registers one partition per job directory of ``$BF_RUN_ROOTS`` in the instance of
``$DAGSTER_HOME`` and prints one JSON line per range: its partitions, trials and run tags,
ready for ``dagster job execute|launch --tags`` (see ``deploy/README.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
PARTITION = "dagster/partition"


def split_ranges(
    order: Sequence[str], n: int, weights: Mapping[str, int] | None = None
) -> list[list[str]]:
    """``order`` cut into at most ``n`` consecutive, non-empty ranges of about equal weight
    (``weights[key]``, e.g. trials per job; 1 per partition when absent).

    Every key lands in exactly one range, in order; fewer than ``n`` ranges come back when
    there are fewer partitions than ``n``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    keys = list(dict.fromkeys(order))
    if not keys:
        return []
    n = min(n, len(keys))
    w = [max(0, int(weights.get(k, 1))) if weights is not None else 1 for k in keys]
    total = sum(w)
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


def register_ranges(n: int, roots: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Register one partition per job directory of ``roots`` (default the ``run_roots``
    default: ``$BF_RUN_ROOTS``) in the current instance and cut them into ``n`` ranges
    balanced by trials: ``[{"partitions", "trials", "tags"}]``."""
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
        for b in split_ranges(order, n, weights)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bf_assets.defs.ranges",
        description="Register the job partitions of $BF_RUN_ROOTS and print N ranges "
        "(one JSON line each: partitions, trials, run tags).",
    )
    p.add_argument("--ranges", type=int, default=2, help="number of ranges (default 2)")
    p.add_argument("--roots", nargs="*", help="run roots (default $BF_RUN_ROOTS)")
    args = p.parse_args(argv)
    for r in register_ranges(args.ranges, args.roots):
        sys.stdout.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
