"""Per-partition materialization metadata for a step that covers several partitions.

``StepExecutionContext.add_asset_metadata(..., partition_key=k)`` checks on every call that
``k`` is in the run's partition range, with three instance queries each time; for five
assets over a few dozen partitions that check cost seconds.  :func:`add_partition_metadata`
records the same metadata without the check, for callers that pass the step's own
partition keys, and falls back to the public method when Dagster's internals differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

if TYPE_CHECKING:
    from dagster._core.execution.context.system import StepExecutionContext


def add_partition_metadata(
    step: StepExecutionContext,
    asset_key: dg.AssetKey,
    partition_key: str,
    metadata: Mapping[str, Any],
) -> None:
    """Metadata for ``asset_key``'s materialization of ``partition_key`` (one of the step's
    own partitions)."""
    acc = getattr(step, "_metadata_accumulator", None)
    if acc is None or not hasattr(acc, "with_additional_asset_metadata"):
        step.add_asset_metadata(metadata, asset_key=asset_key, partition_key=partition_key)
        return
    step._metadata_accumulator = acc.with_additional_asset_metadata(  # noqa: SLF001
        asset_key=asset_key, partition_key=partition_key, metadata=metadata
    )
