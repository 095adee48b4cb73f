"""The allocator is settled for block reads once, only when a trial has a big file, and the
scan reads the same either way."""

from __future__ import annotations

from typing import Any

import pytest
from trialkit import Trial

from bf_assets.ingest import heap, scan


def test_settle_for_blocks_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_settled", False)
    heap.settle_for_blocks()
    assert heap.settled()
    heap.settle_for_blocks()  # a no-op the second time
    assert heap.settled()


def _settles(trial: Trial, monkeypatch: pytest.MonkeyPatch, big: int) -> tuple[list[int], Any]:
    calls: list[int] = []
    with monkeypatch.context() as m:
        m.setattr(scan, "PARALLEL_MIN_BYTES", big)
        m.setattr(scan, "settle_for_blocks", lambda: calls.append(1))
        data = scan.scan_trial(trial.ref())
    return calls, data


def test_only_a_big_trial_settles_and_reads_the_same(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_calls, small = _settles(trial, monkeypatch, 1 << 62)
    big_calls, big = _settles(trial, monkeypatch, 0)
    assert (small_calls, big_calls) == ([], [1])
    assert big == small
