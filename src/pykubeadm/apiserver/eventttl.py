"""--event-ttl (default 1h): Events are removed that long after they were last recorded. kube-apiserver attaches an
etcd lease to each Event write; our datastores have no leases, so a sweeper deletes Events whose newest time
(`series.lastObservedTime`, `lastTimestamp`, `eventTime`, `metadata.creationTimestamp`) is older than the TTL."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.apiserver.status import ApiError
from pykubeadm.util.apitime import parse_time

__all__ = ["event_last_seen", "event_ttl_sweeper"]

log = logging.getLogger("pykubeadm.apiserver")

_CTX = RequestContext()


def event_last_seen(ev: dict[str, Any]) -> float | None:
    """The newest of an Event's timestamps, in seconds since the epoch; None when it has none."""
    candidates = [
        ((ev.get("series") or {}).get("lastObservedTime")),
        ev.get("lastTimestamp"),
        ev.get("eventTime"),
        (ev.get("metadata") or {}).get("creationTimestamp"),
    ]
    seen = [t.timestamp() for t in (parse_time(c) for c in candidates if isinstance(c, str) and c) if t is not None]
    return max(seen) if seen else None


async def event_ttl_sweeper(state: ApiState, ttl: float) -> None:
    store = state.store("events")
    interval = max(0.5, min(ttl / 2, 60.0))
    while True:
        await asyncio.sleep(interval)
        try:
            cutoff = time.time() - ttl
            for ev in (await store.list(None)).items:
                last = event_last_seen(ev)
                if last is not None and last < cutoff:
                    meta = ev["metadata"]
                    with contextlib.suppress(ApiError):  # deleted meanwhile
                        await store.delete(meta.get("namespace", ""), meta["name"], _CTX)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("event TTL sweep failed", exc_info=True)
