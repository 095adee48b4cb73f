"""Splitting job partitions into partition ranges, one run each (scale-out of the ingest).

A partition range is a run of ``ingest_job`` tagged ``dagster/asset_partition_range_start``
and ``…_end``: its single ``ingest_trials`` step reviews every trial of the range in one
batch, and the Parquet IO manager still writes one file per partition.  A big corpus is
spread over several machines by launching several such runs (a run launcher or
``dagster job execute``), each on its own executor (Celery workers, Kubernetes pods).

Dagster-free: the order is the instance's partition order
(``instance.get_dynamic_partitions``), since a range takes in every partition between its
ends in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
