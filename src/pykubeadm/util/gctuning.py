"""When Python's cyclic garbage collector runs in our processes.

A pykubeadm process imports a few thousand modules' worth of objects (config models, lightkube resources, aiohttp)
that live until it exits. With the default thresholds the collector walks them again and again while they are being
imported and once more at interpreter shutdown, which costs a CLI run or a component start tens of milliseconds.

* `for_startup()`: a high first-generation threshold while the command imports what it needs.
* `for_service()`: a long-running component has finished starting: move everything alive into the permanent
  generation (never scanned again), then collect the objects requests create in young generations of 10,000, and
  move what survives each full collection into the permanent generation too (see `_after_collection`).
* `before_exit()`: the same freeze just before a short command exits, so shutdown skips the collection.
"""

from __future__ import annotations

import gc
import time
from typing import Any

__all__ = ["before_exit", "for_service", "for_startup"]

_DEFAULT_THRESHOLDS = gc.get_threshold()
_STARTUP_THRESHOLDS = (50_000, 20, 20)
#: A service's thresholds: a young generation of 10,000 objects (a few ms to walk) rather than 700, so fewer of the
#: objects of requests in flight are caught alive and promoted towards the old generation.
_SERVICE_THRESHOLDS = (10_000, 10, 10)
#: How often a service's full collection walks every object again (cycles among frozen survivors are reclaimed then).
FULL_WALK_EVERY_S = 600.0
_last_full_walk = [0.0]


def for_startup() -> None:
    gc.set_threshold(*_STARTUP_THRESHOLDS)


def for_service() -> None:
    gc.freeze()
    gc.set_threshold(*_SERVICE_THRESHOLDS)
    _last_full_walk[0] = time.monotonic()
    if _after_collection not in gc.callbacks:
        gc.callbacks.append(_after_collection)


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    """After a full collection, freeze its survivors, so the next one walks only what became long-lived since.

    A full collection walks every tracked object in the old generation: in an apiserver holding thousands of nodes,
    leases and connections that stopped the event loop for 0.3-1.4 s every few seconds under 5000 Lease renewers
    (benchmarks/bootstrap_storm.py --lease-nodes 5000; the renewals' p99 was the pause). Survivors of a full
    collection are the long-lived state; refcounting still frees them when they are dropped, and every
    FULL_WALK_EVERY_S they are unfrozen so that the next full collection reclaims cycles among them.
    """
    if phase != "stop" or info.get("generation") != 2:
        return
    now = time.monotonic()
    if now - _last_full_walk[0] >= FULL_WALK_EVERY_S:
        _last_full_walk[0] = now
        gc.unfreeze()  # the next full collection walks everything
    else:
        gc.freeze()


def before_exit() -> None:
    gc.freeze()
