"""A service's garbage-collector policy: survivors of a full collection are frozen, unfrozen again for a periodic full
walk, and cyclic garbage is still reclaimed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from pykubeadm.util import gctuning


@pytest.fixture
def service_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    callbacks = list(gc.callbacks)
    last = gctuning._last_full_walk[0]
    try:
        gctuning.for_service()
        yield
    finally:
        gc.callbacks[:] = callbacks
        gc.set_threshold(*thresholds)
        gctuning._last_full_walk[0] = last
        gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_survivors_of_a_full_collection_are_frozen(service_gc: None) -> None:
    before = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]  # long-lived state
    gc.collect()
    assert gc.get_freeze_count() - before >= len(kept)
    assert gc.get_threshold()[0] == 10_000


def test_cycles_are_still_collected_and_the_periodic_walk_unfreezes(service_gc: None) -> None:
    node = _Node()
    ref = weakref.ref(node)
    del node
    gc.collect()  # young garbage: reclaimed by the first full collection
    assert ref() is None

    frozen_node = _Node()
    frozen_ref = weakref.ref(frozen_node)
    gc.collect()  # it survives and is frozen
    del frozen_node
    gc.collect()
    assert frozen_ref() is not None  # frozen: not walked until the periodic full walk
    gctuning._last_full_walk[0] -= gctuning.FULL_WALK_EVERY_S  # the walk is due
    gc.collect()  # this full collection unfreezes everything ...
    assert gc.get_freeze_count() == 0
    gc.collect()  # ... so the next one reclaims the cycle
    assert frozen_ref() is None
