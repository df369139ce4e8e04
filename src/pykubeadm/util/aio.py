"""How our long-running servers run their asyncio main: on uvloop (libuv's event loop, a drop-in asyncio loop that
roughly halves the cost of the socket and TLS plumbing per request), or on the standard loop when
PYKUBEADM_EVENT_LOOP=asyncio asks for it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

from pykubeadm.util import gctuning

__all__ = ["EVENT_LOOP_ENV", "run"]

T = TypeVar("T")

#: "asyncio" selects the standard library's event loop instead of uvloop.
EVENT_LOOP_ENV = "PYKUBEADM_EVENT_LOOP"


def run(main: Coroutine[Any, Any, T], default: str = "uvloop") -> T:
    """`asyncio.run(main)` on $PYKUBEADM_EVENT_LOOP's loop, else `default`'s ("uvloop" or "asyncio": a component that
    serves little and counts its memory, such as metrics-server, spares uvloop's ~2 MB)."""
    gctuning.for_service()
    if os.environ.get(EVENT_LOOP_ENV, default) == "asyncio":
        return asyncio.run(main)
    import uvloop

    return uvloop.run(main)
