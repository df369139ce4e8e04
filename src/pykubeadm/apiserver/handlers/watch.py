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
from pykubeadm.apiserver.handlers.codec import query_bool, query_int, table_rows, wants_table
from pykubeadm.apiserver.handlers.context import info_of, state_of
from pykubeadm.apiserver.handlers.read import selectors
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.selectors import FieldSelector
from pykubeadm.storage import interface as si
from pykubeadm.util import jsoncodec

__all__ = ["BOOKMARK_INTERVAL", "watch"]

BOOKMARK_INTERVAL = 5.0


class _Encoder:
    def __init__(self, request: web.Request, store: Store):
        self.table = wants_table(request)
        self.request = request
        self.store = store
        self.first = True

    def encode(self, type_: str, obj: dict[str, Any]) -> bytes:
        if self.table and type_ not in ("ERROR", "BOOKMARK"):
            from pykubeadm.apiserver.handlers.codec import include_object

            t = {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")},
                "columnDefinitions": self.store.strategy.table_columns() if self.first else None,
                "rows": table_rows(self.store.strategy, [obj], include_object(self.request)),
            }
            self.first = False
            obj = t
        return jsoncodec.dumps({"type": type_, "object": obj}) + b"\n"


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

    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    for obj in initial:
        await resp.write(enc.encode("ADDED", obj))
    if send_initial and bookmarks:
        # WatchList: the end of the initial state is marked by an annotated bookmark.
        end = {
            "kind": store.strategy.kind,
            "apiVersion": store.strategy.api_version,
            "metadata": {"resourceVersion": str(start - 1), "annotations": {"k8s.io/initial-events-end": "true"}},
        }
        await resp.write(enc.encode("BOOKMARK", end))

    deadline = time.monotonic() + timeout
    it = store.watch(info.namespace or None, start, labels, fields).__aiter__()
    last_rev = start - 1
    next_task: asyncio.Task | None = None
    try:
        while not state.shutting_down:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if next_task is None:
                next_task = asyncio.ensure_future(it.__anext__())
            done, _ = await asyncio.wait({next_task}, timeout=min(remaining, BOOKMARK_INTERVAL))
            if not done:
                if bookmarks:
                    bm = {
                        "kind": store.strategy.kind,
                        "apiVersion": store.strategy.api_version,
                        "metadata": {"resourceVersion": str(last_rev)},
                    }
                    await resp.write(enc.encode("BOOKMARK", bm))
                continue
            task, next_task = next_task, None
            try:
                ev = task.result()
            except StopAsyncIteration:
                break
            except si.CompactedError as e:
                err = st.expired(f"too old resource version: {rv} ({e.compacted})").to_status()
                await resp.write(enc.encode("ERROR", err))
                break
            last_rev = ev.revision
            await resp.write(enc.encode(ev.type, ev.object))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        if next_task is not None:
            next_task.cancel()
            with contextlib.suppress(BaseException):
                await next_task
        with contextlib.suppress(BaseException):
            await it.aclose()
    with contextlib.suppress(ConnectionResetError):
        await resp.write_eof()
    return resp
