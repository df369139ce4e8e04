"""When Python's cyclic garbage collector runs in our processes.

A pykubeadm process imports a few thousand modules' worth of objects (pydantic models, lightkube resources, aiohttp)
that live until it exits. With the default thresholds the collector walks them again and again while they are being
imported and once more at interpreter shutdown, which costs a CLI run or a component start tens of milliseconds.

* `for_startup()`: a high first-generation threshold while the command imports what it needs.
* `for_service()`: a long-running component has finished starting: move everything alive into the permanent
  generation (never scanned again) and go back to the default thresholds for the objects requests create.
* `before_exit()`: the same freeze just before a short command exits, so shutdown skips the collection.
"""

from __future__ import annotations

import gc

__all__ = ["before_exit", "for_service", "for_startup"]

_DEFAULT_THRESHOLDS = gc.get_threshold()
_STARTUP_THRESHOLDS = (50_000, 20, 20)


def for_startup() -> None:
    gc.set_threshold(*_STARTUP_THRESHOLDS)


def for_service() -> None:
    gc.freeze()
    gc.set_threshold(*_DEFAULT_THRESHOLDS)


def before_exit() -> None:
    gc.freeze()
