"""The watch cache of one kind (kube-apiserver's Cacher), used by the registry `Store` for every watch it serves.

One storage watch per kind feeds it. Each change is decoded once and dispatched only to the watchers it concerns:
a watcher is filed under its most selective equality selector (a field such as `metadata.name` or `spec.nodeName`,
then a label `k=v`, then its namespace), so an event reaches the watchers indexed under its own (and its previous)
values plus the few with no indexable selector. Every watcher of an event receives the same `WatchEvent`, so the
handlers encode it once per content type (`WatchEvent.encoded`). A recent history (`HISTORY` events) lets a watch
start from a recent resourceVersion without reading storage; an older one falls back to a storage watch of its own.

Each watcher has a bounded buffer: a watcher that falls `buffer` events behind is closed, as kube-apiserver closes an
unresponsive watcher ("Forcing watcher close due to unresponsiveness"); the client re-watches or re-lists.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Reversible
from dataclasses import dataclass, field

from pykubeadm.apiserver.registry.base import Obj, Strategy
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.storage import interface as si

__all__ = [
    "HISTORY",
    "HISTORY_MAX",
    "HISTORY_SECONDS",
    "WATCH_BUFFER",
    "WatchCache",
    "WatchClosed",
    "WatchEvent",
    "Watcher",
]

log = logging.getLogger("pykubeadm.apiserver.watchcache")

#: Changes of one kind kept for watches that start from a recent resourceVersion: every change of the last
#: HISTORY_SECONDS (kube-apiserver's watch cache keeps 75 s), at least HISTORY and at most HISTORY_MAX of them. A
#: watch from before the history costs a storage watch of its own, so under a storm of writes the history must cover
#: the time between a client's list and its watch. Entries keep the stored bytes, not decoded objects.
HISTORY = 1024
HISTORY_SECONDS = 75.0
HISTORY_MAX = 100_000
#: Events a watcher may fall behind before it is closed (kube-apiserver's largest watcher channel).
WATCH_BUFFER = 1000


@dataclass(slots=True)
class WatchEvent:
    """One change as a watcher sees it. Shared by every watcher it reaches: read-only; `encoded` holds its wire forms
    by content type, filled by the first handler that writes it."""

    type: str  # ADDED MODIFIED DELETED
    object: Obj
    revision: int
    encoded: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)


class WatchClosed(Exception):
    """The watcher was closed (too slow, the cache restarted, the store closed): end the watch response."""


class _Change:
    """One storage change decoded once; the per-type `WatchEvent`s and the selector attributes are made on demand."""

    __slots__ = (
        "_attrs",
        "_events",
        "_kv",
        "_obj",
        "_pattrs",
        "_prev",
        "_prev_kv",
        "at",
        "cache",
        "name",
        "revision",
        "type",
    )

    def __init__(self, cache: WatchCache, ev: si.Event, at: float):
        self.cache = cache
        self.type = ev.type
        self.revision = ev.revision
        self.at = at
        self._kv = ev.kv
        self._obj: Obj | None = cache.decode(ev.kv)
        self.name: str = self._obj.get("metadata", {}).get("name", "")
        self._prev_kv = ev.prev
        self._prev: Obj | None = None
        self._attrs: dict[str, str] | None = None
        self._pattrs: dict[str, str] | None = None
        self._events: dict[str, WatchEvent] = {}

    @property
    def obj(self) -> Obj:
        if self._obj is None:
            self._obj = self.cache.decode(self._kv)
        return self._obj

    @property
    def prev(self) -> Obj | None:
        if self._prev is None and self._prev_kv is not None:
            self._prev = self.cache.decode(self._prev_kv)
        return self._prev

    @property
    def attrs(self) -> dict[str, str]:
        if self._attrs is None:
            self._attrs = self.cache.strategy.get_attrs(self.obj)
        return self._attrs

    @property
    def prev_attrs(self) -> dict[str, str] | None:
        if self._pattrs is None and self.prev is not None:
            self._pattrs = self.cache.strategy.get_attrs(self.prev)
        return self._pattrs

    def release(self) -> None:
        """Keep only the stored bytes (history): a decoded object costs several times its JSON, and most history
        entries are never replayed (a replay decodes them again). Events already delivered keep their objects."""
        self._obj = None
        self._prev = None
        self._attrs = None
        self._pattrs = None
        self._events = {}

    def event(self, type_: str) -> WatchEvent:
        ev = self._events.get(type_)
        if ev is None:
            ev = self._events[type_] = WatchEvent(type_, self.obj, self.revision)
        return ev


def _labels(obj: Obj | None) -> dict[str, str]:
    if obj is None:
        return {}
    return obj.get("metadata", {}).get("labels") or {}


class Watcher:
    """One watch: its filter, a bounded buffer of shared events, and a waiter the handler sleeps on."""

    __slots__ = (
        "_buf",
        "_waiter",
        "buffer",
        "error",
        "fields",
        "index_key",
        "labels",
        "namespace",
        "on_close",
        "start",
    )

    def __init__(
        self, namespace: str | None, start: int, labels: LabelSelector, fields: FieldSelector, buffer: int
    ) -> None:
        self.namespace = namespace
        self.start = start
        self.labels = labels
        self.fields = fields
        self.buffer = buffer
        self.index_key: tuple[str, str, str] | None = None
        self.on_close: Callable[[Watcher], None] | None = None
        self.error: BaseException | None = None
        self._buf: list[WatchEvent] = []  # drained whole, so a list (56 bytes empty; a deque takes ~700)
        self._waiter: asyncio.Future[None] | None = None

    @property
    def closed(self) -> bool:
        return self.error is not None

    @property
    def backlog(self) -> int:
        """Events buffered and not yet drained."""
        return len(self._buf)

    def _matches(self, obj: Obj, attrs: Callable[[], dict[str, str] | None]) -> bool:
        if not self.labels.empty() and not self.labels.matches(_labels(obj)):
            return False
        return self.fields.empty() or self.fields.matches(attrs() or {})

    def offer(self, ch: _Change) -> None:
        """Deliver `ch` if it concerns this watcher, as ADDED/MODIFIED/DELETED of *its* selection."""
        if ch.revision < self.start or self.error is not None:
            return
        if self.namespace is not None and ch.obj.get("metadata", {}).get("namespace") != self.namespace:
            return
        if self.labels.empty() and self.fields.empty():
            self.deliver(ch.event(ch.type))
            return
        now = ch.type != "DELETED" and self._matches(ch.obj, lambda: ch.attrs)
        prev = ch.prev
        before = prev is not None and self._matches(prev, lambda: ch.prev_attrs)
        if ch.type == "ADDED":
            type_ = "ADDED" if now else ""
        elif ch.type == "DELETED":
            type_ = "DELETED" if before or self._matches(ch.obj, lambda: ch.attrs) else ""
        elif now:
            type_ = "MODIFIED" if before else "ADDED"
        else:
            type_ = "DELETED" if before else ""
        if type_:
            self.deliver(ch.event(type_))

    def deliver(self, ev: WatchEvent) -> None:
        if self.error is not None:
            return
        if len(self._buf) >= self.buffer:
            self.close(WatchClosed(f"watcher fell {self.buffer} events behind"))
            return
        self._buf.append(ev)
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def close(self, error: BaseException | None = None) -> None:
        """Stop this watch: buffered events are dropped and the next `get` raises `error` (WatchClosed by default)."""
        if self.error is not None:
            return
        self.error = error or WatchClosed("watch closed")
        self._buf = []
        self._wake()
        if self.on_close is not None:
            cb, self.on_close = self.on_close, None
            cb(self)

    def drain(self) -> list[WatchEvent]:
        """Every buffered event (possibly none), without waiting; raises the close error once the buffer is empty."""
        if self._buf:
            out, self._buf = self._buf, []
            return out
        if self.error is not None:
            raise self.error
        return []

    async def wait(self, timeout: float) -> None:
        """Sleep until an event is buffered, the watcher is closed, or `timeout` seconds pass."""
        if self._buf or self.error is not None:
            return
        loop = asyncio.get_running_loop()
        fut = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, _settle, fut)
        try:
            await fut
        finally:
            timer.cancel()
            self._waiter = None

    async def events(self) -> AsyncIterator[WatchEvent]:
        """The events one by one until the watcher is closed (WatchClosed ends the iteration, other errors raise)."""
        try:
            while True:
                try:
                    batch = self.drain()
                except WatchClosed:
                    return
                for ev in batch:
                    yield ev
                if not batch:
                    await self.wait(3600.0)
        finally:
            self.close()


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


#: Fields an update never changes: the previous object's value is the current one's.
_IMMUTABLE_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def _admits(key: tuple[str, str, str], ch: _Change) -> bool:
    """Whether a watcher filed under `key` can care about `ch` (the index test `_dispatch` applies, for replays)."""
    kind, name, value = key
    if kind == "n":
        return ch.obj.get("metadata", {}).get("namespace", "") == value
    if kind == "f":
        prev = ch.prev_attrs if name not in _IMMUTABLE_FIELDS else None
        return ch.attrs.get(name, "") == value or (prev is not None and prev.get(name, "") == value)
    return _labels(ch.obj).get(name) == value or _labels(ch.prev).get(name) == value


class WatchCache:
    """The watchers of one kind over one storage watch. `decode` turns a storage record into an API object."""

    def __init__(self, strategy: Strategy, backend: si.Store, prefix: str, decode: Callable[[si.KeyValue], Obj]):
        self.strategy = strategy
        self.backend = backend
        self.prefix = prefix
        self.decode = decode
        self._history: deque[_Change] = deque()
        self._history_by_name: dict[str, deque[_Change]] = {}  # the same changes by object name (single-object watches)
        self._complete_from = 0  # every change with revision >= this is in history or still to come
        self._next = 0  # the revision after the newest change dispatched
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None
        # index: (kind, key, value) → watchers; kind "f" field, "l" label, "n" namespace; unindexed: every change
        self._index: dict[tuple[str, str, str], set[Watcher]] = {}
        self._fields: dict[str, int] = {}  # indexed field → number of index keys using it
        self._label_keys: dict[str, int] = {}
        self._unindexed: set[Watcher] = set()

    # -- life cycle ------------------------------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        if self._task is not None and not self._task.done():
            return
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return
        self._starting = asyncio.get_running_loop().create_future()
        try:
            rev = await self.backend.current_revision()
            self._history.clear()
            self._history_by_name.clear()
            self._complete_from = self._next = rev + 1
            self._task = asyncio.create_task(self._run(rev + 1), name=f"watchcache {self.prefix}")
            self._starting.set_result(None)
        except BaseException as e:
            self._starting.set_exception(e)
            self._starting.exception()  # retrieved: later waiters re-raise it through shield
            raise
        finally:
            self._starting = None

    async def _run(self, start: int) -> None:
        it = self.backend.watch(self.prefix, start)
        try:
            async for ev in it:
                self._dispatch(_Change(self, ev, time.monotonic()))
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.info("watch cache of %s lost its storage watch: %s", self.prefix, e)
        finally:
            with contextlib.suppress(BaseException):
                await it.aclose()
            self._task = None
            # Everyone still watching ends; clients re-watch (the next watch restarts the cache).
            for w in list(self._all_watchers()):
                w.close()

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    # -- watchers --------------------------------------------------------------------------------------------

    def _all_watchers(self) -> Iterable[Watcher]:
        yield from self._unindexed
        for ws in self._index.values():
            yield from ws

    def watcher_count(self) -> int:
        return sum(1 for _ in self._all_watchers())

    async def watch(
        self,
        namespace: str | None,
        start: int,
        labels: LabelSelector,
        fields: FieldSelector,
        buffer: int = WATCH_BUFFER,
    ) -> Watcher | None:
        """A watcher of changes with revision >= `start`, or None when history no longer covers `start` (the caller
        watches storage directly, which answers 410 Gone for a compacted revision)."""
        await self._ensure_started()
        if start <= 0:
            start = self._next
        if start < self._complete_from:
            return None
        w = Watcher(namespace, start, labels, fields, buffer)
        key = self._key_of(w)
        # Replay (only the changes after `start`, only those the watcher's index key admits) and registration happen
        # in one step: no change can slip in between.
        scanned = []
        history: Reversible[_Change] = self._history
        if key is not None and key[:2] == ("f", "metadata.name"):
            history = self._history_by_name.get(key[2], ())
        for ch in reversed(history):
            if ch.revision < start:
                break
            scanned.append(ch)
        for ch in reversed(scanned):
            if key is None or _admits(key, ch):
                w.offer(ch)
            ch.release()  # back to stored bytes
        self._add(w, key)
        return w

    @staticmethod
    def _key_of(w: Watcher) -> tuple[str, str, str] | None:
        eq = {f: v for f, is_eq, v in w.fields.reqs if is_eq}
        if "metadata.name" in eq:
            return ("f", "metadata.name", eq["metadata.name"])
        for f, v in sorted(eq.items()):
            if f != "metadata.namespace":
                return ("f", f, v)
        for r in w.labels.reqs:
            if r.op == "=" or (r.op == "in" and len(r.values) == 1):
                return ("l", r.key, r.values[0])
        ns = w.namespace if w.namespace is not None else eq.get("metadata.namespace")
        if ns is not None:
            return ("n", "", ns)
        return None

    def _add(self, w: Watcher, key: tuple[str, str, str] | None) -> None:
        w.index_key = key
        if key is None:
            self._unindexed.add(w)
        else:
            ws = self._index.get(key)
            if ws is None:
                ws = self._index[key] = set()
                counts = self._fields if key[0] == "f" else self._label_keys if key[0] == "l" else None
                if counts is not None:
                    counts[key[1]] = counts.get(key[1], 0) + 1
            ws.add(w)
        w.on_close = self._remove

    def _remove(self, w: Watcher) -> None:
        key = w.index_key
        if key is None:
            self._unindexed.discard(w)
            return
        ws = self._index.get(key)
        if ws is None:
            return
        ws.discard(w)
        if not ws:
            del self._index[key]
            counts = self._fields if key[0] == "f" else self._label_keys if key[0] == "l" else None
            if counts is not None:
                counts[key[1]] -= 1
                if not counts[key[1]]:
                    del counts[key[1]]

    # -- dispatch --------------------------------------------------------------------------------------------

    def _dispatch(self, ch: _Change) -> None:
        history = self._history
        while history and (
            len(history) >= HISTORY_MAX or (len(history) >= HISTORY and history[0].at < ch.at - HISTORY_SECONDS)
        ):
            old = history.popleft()
            self._complete_from = old.revision + 1
            same = self._history_by_name[old.name]
            same.popleft()  # the oldest change of the whole history is the oldest of its name
            if not same:
                del self._history_by_name[old.name]
        history.append(ch)
        self._history_by_name.setdefault(ch.name, deque()).append(ch)
        self._next = ch.revision + 1
        targets: set[Watcher] = set(self._unindexed)
        index = self._index
        ns = ch.obj.get("metadata", {}).get("namespace", "")
        ws = index.get(("n", "", ns))
        if ws:
            targets |= ws
        for f in self._fields:
            ws = index.get(("f", f, ch.attrs.get(f, "")))
            if ws:
                targets |= ws
            if f not in _IMMUTABLE_FIELDS and ch.prev_attrs is not None:
                ws = index.get(("f", f, ch.prev_attrs.get(f, "")))
                if ws:
                    targets |= ws
        if self._label_keys:
            for labels in (_labels(ch.obj), _labels(ch.prev)):
                for k, v in labels.items():
                    if k in self._label_keys:
                        ws = index.get(("l", k, v))
                        if ws:
                            targets |= ws
        for w in targets:
            w.offer(ch)
        ch.release()
