"""Watch handler: newline-delimited JSON events with kube-apiserver's resourceVersion semantics.

RV unset/"0" → synthetic ADDED for the current state, then changes; RV=N → changes after N; compacted N → one ERROR
event with a 410 Expired Status. BOOKMARKs when `allowWatchBookmarks`, stream ends after `timeoutSeconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import (
    PARTIAL,
    TABLE,
    encode_json,
    include_object,
    partial_metadata,
    query_bool,
    query_int,
    table_rows,
    transform_of,
)
from pykubeadm.apiserver.handlers.context import info_of, state_of
from pykubeadm.apiserver.handlers.read import selectors
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.watchcache import WatchClosed, Watcher, WatchEvent
from pykubeadm.apiserver.selectors import FieldSelector
from pykubeadm.storage import interface as si

__all__ = ["BOOKMARK_INTERVAL", "watch"]

BOOKMARK_INTERVAL = 5.0


class _Encoder:
    """A watch response's encoder: JSON events are encoded once per event and shared by every watcher that sends it
    (`WatchEvent.encoded`); Table events carry this response's own columns, so they are encoded per response."""

    def __init__(self, request: web.Request, store: Store):
        transform = transform_of(request, "watch")
        self.table = transform == TABLE
        self.partial = transform == PARTIAL
        self.request = request
        self.store = store
        self.first = True

    def encode(self, type_: str, obj: dict[str, Any]) -> bytes:
        if self.table and type_ not in ("ERROR", "BOOKMARK"):
            t = {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")},
                "columnDefinitions": self.store.strategy.table_columns() if self.first else None,
                "rows": table_rows(self.store.strategy, [obj], include_object(self.request)),
            }
            self.first = False
            obj = t
        elif self.partial and type_ != "ERROR":
            obj = partial_metadata(obj)
        return encode_json({"type": type_, "object": obj})

    def encode_event(self, ev: WatchEvent) -> bytes:
        if self.table or self.partial:
            return self.encode(ev.type, ev.object)
        data = ev.encoded.get("json")
        if data is None:
            data = ev.encoded["json"] = encode_json({"type": ev.type, "object": ev.object})
        return data


async def watch(request: web.Request, store: Store) -> web.StreamResponse:
    info = info_of(request)
    labels, fields = selectors(request, store)
    if info.name:  # /watch/.../name (legacy)
        fields = FieldSelector((*fields.reqs, ("metadata.name", True, info.name)))
    rv_raw = request.query.get("resourceVersion", "")
    try:
        rv = int(rv_raw) if rv_raw else 0
    except ValueError:
        raise st.bad_request(f'invalid resource version "{rv_raw}"') from None
    timeout = query_int(request, "timeoutSeconds", 0) or random.randint(1800, 3600)
    bookmarks = query_bool(request, "allowWatchBookmarks")
    enc = _Encoder(request, store)
    state = state_of(request)

    initial: list[Any] = []
    send_initial = query_bool(request, "sendInitialEvents")
    if rv == 0 or send_initial:
        page = await store.list(info.namespace or None, labels, fields)
        initial = page.items
        start = int(page.resource_version) + 1
    else:
        start = rv + 1

    # Registered before the response starts, so no change after `start` is missed while the initial state is sent.
    w = await store.open_watch(info.namespace or None, start, labels, fields)
    state.open_watchers.add(w)
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        if initial:
            await resp.write(b"".join(enc.encode("ADDED", obj) for obj in initial))
        initial = []
        if send_initial and bookmarks:
            # WatchList: the end of the initial state is marked by an annotated bookmark.
            end = {
                "kind": store.strategy.kind,
                "apiVersion": store.strategy.api_version,
                "metadata": {"resourceVersion": str(start - 1), "annotations": {"k8s.io/initial-events-end": "true"}},
            }
            await resp.write(enc.encode("BOOKMARK", end))
        await _stream(resp, w, enc, store, state, timeout, bookmarks, start - 1, rv)
    except (ConnectionResetError, asyncio.CancelledError):
        pass  # the client went away, or the server stops
    finally:
        state.open_watchers.discard(w)
        w.close()
    with contextlib.suppress(ConnectionResetError):
        await resp.write_eof()
    return resp


async def _stream(
    resp: web.StreamResponse,
    w: Watcher,
    enc: _Encoder,
    store: Store,
    state: Any,
    timeout: float,
    bookmarks: bool,
    last_rev: int,
    rv: int,
) -> None:
    """Write the watcher's events (every buffered one in one write) until the timeout, the watcher's end or shutdown;
    a BOOKMARK after each quiet `BOOKMARK_INTERVAL` when the client allows them."""
    now = time.monotonic()
    deadline = now + timeout
    last_write = now
    while not state.shutting_down:
        try:
            batch = w.drain()
        except WatchClosed:
            return
        except si.CompactedError as e:
            err = st.expired(f"too old resource version: {rv} ({e.compacted})").to_status()
            await resp.write(enc.encode("ERROR", err))
            return
        now = time.monotonic()
        if batch:
            last_rev = batch[-1].revision
            await resp.write(b"".join(enc.encode_event(ev) for ev in batch))
            last_write = now
            continue
        if now >= deadline:
            return
        if bookmarks and now - last_write >= BOOKMARK_INTERVAL:
            bm = {
                "kind": store.strategy.kind,
                "apiVersion": store.strategy.api_version,
                "metadata": {"resourceVersion": str(last_rev)},
            }
            await resp.write(enc.encode("BOOKMARK", bm))
            last_write = now
        await w.wait(min(deadline - now, BOOKMARK_INTERVAL))
