"""Handing the heap's long-lived objects to the collector's permanent generation for a block
(``bf_assets.dataset.memory.frozen_heap``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from bf_assets.dataset.memory import frozen_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_what_is_alive_on_entry_is_frozen_and_handed_back_on_exit() -> None:
    before = gc.get_freeze_count()
    kept = [_Node() for _ in range(1000)]
    with frozen_heap():
        inside = gc.get_freeze_count()
        assert inside >= before + 1000  # the nodes (and the rest of the heap) are frozen
        assert not any(kept[0] is o for o in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == before
    assert any(kept[0] is o for o in gc.get_objects(generation=2))


def test_cyclic_garbage_made_frozen_is_collected_after_the_block() -> None:
    doomed = _Node()
    ref = weakref.ref(doomed)
    with frozen_heap():
        del doomed
        gc.collect()
        assert ref() is not None  # frozen: no collection inside the block frees it
    gc.collect()
    assert ref() is None


def test_the_heap_is_handed_back_when_the_block_fails() -> None:
    before = gc.get_freeze_count()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == before
