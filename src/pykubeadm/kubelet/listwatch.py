"""The kubelet's list-then-watch loop over one collection with the node's client: list (resourceVersion), watch from
there, relist after a 410 Gone (status or ERROR event), retry other failures with back-off 0.2 s doubling to 7 s.
Used by the API Pod source (pods.py) and the Service cache (servicelinks.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pykubeadm.kubelet.api import ApiError

__all__ = ["list_then_watch"]

Obj = dict[str, Any]


async def list_then_watch(
    client: Callable[[], Any],
    path: str,
    on_list: Callable[[list[Obj]], Awaitable[None]],
    on_event: Callable[[str, Obj], Awaitable[None]],
    *,
    field_selector: str | None = None,
    what: str,
    log: logging.Logger,
) -> None:
    """Run forever: `on_list(items)` after each (re)list, `on_event(type, object)` for each watch event but BOOKMARK
    and ERROR; `what` names the watch in the retry log line."""
    rv: str | None = None
    delay = 0.2
    while True:
        c = client()
        try:
            if rv is None:
                params = {"fieldSelector": field_selector} if field_selector else None
                listing = await c.get(path, params=params)
                rv = str((listing.get("metadata") or {}).get("resourceVersion") or "")
                await on_list(list(listing.get("items") or []))
            async for kind, obj in c.watch(path, resource_version=rv, field_selector=field_selector):
                delay = 0.2
                if kind == "ERROR":
                    rv = None if obj.get("code") == 410 else rv
                    break
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if kind == "BOOKMARK":
                    continue
                await on_event(kind, obj)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if isinstance(e, ApiError) and e.status == 410:
                rv = None
            log.info("%s ended: %s; retrying in %.1fs", what, e, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 7.0)
