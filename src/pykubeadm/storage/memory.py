"""An in-memory `Store` (the fake of storage/interface.py) for unit tests and `--etcd-servers=memory://`.

Keeps the whole revision log in a list so list-at-revision, watch-from-revision and compaction behave like the real
engines: one global revision counter, create/update/delete guarded by mod_revision, watches replay history then follow.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncGenerator

from pykubeadm.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    ListResult,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """A single-process Store: current values in a dict, every change in an append-only event log."""

    def __init__(self) -> None:
        self._rev = 0
        self._compacted = 0
        self._data: dict[str, KeyValue] = {}
        self._keys: list[str] = []  # sorted keys of _data
        self._log: list[Event] = []
        self._cond = asyncio.Condition()

    async def get(self, key: str) -> KeyValue | None:
        return self._data.get(key)

    async def current_revision(self) -> int:
        return self._rev

    def _state_at(self, revision: int) -> dict[str, KeyValue]:
        state = dict(self._data)
        for ev in reversed(self._log):
            if ev.revision <= revision:
                break
            if ev.prev is None:
                state.pop(ev.kv.key, None)
            else:
                state[ev.kv.key] = ev.prev
        return state

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0, start_key: str | None = None) -> ListResult:
        if revision and revision < self._compacted:
            raise CompactedError(revision, self._compacted)
        at = revision if revision and revision < self._rev else self._rev
        lo = max(prefix, start_key or "")
        if at == self._rev:
            keys, state = self._keys, self._data
            i = bisect.bisect_left(keys, lo)
        else:
            state = self._state_at(at)
            keys = sorted(state)
            i = bisect.bisect_left(keys, lo)
        items: list[KeyValue] = []
        while i < len(keys) and keys[i].startswith(prefix):
            if limit and len(items) >= limit:
                remaining = sum(1 for k in keys[i:] if k.startswith(prefix))
                return ListResult(items=items, revision=at, more=True, remaining=remaining)
            items.append(state[keys[i]])
            i += 1
        return ListResult(items=items, revision=at)

    async def _append(self, ev: Event) -> None:
        self._log.append(ev)
        async with self._cond:
            self._cond.notify_all()

    async def create(self, key: str, value: bytes) -> KeyValue:
        if key in self._data:
            raise KeyExistsError(key)
        self._rev += 1
        kv = KeyValue(key, value, self._rev, self._rev)
        self._data[key] = kv
        bisect.insort(self._keys, key)
        await self._append(Event("ADDED", kv, None))
        return kv

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        cur = self._data.get(key)
        if cur is None:
            raise KeyNotFoundError(key)
        if expected_mod_revision and cur.mod_revision != expected_mod_revision:
            raise ConflictError(key, expected_mod_revision, cur)
        self._rev += 1
        kv = KeyValue(key, value, cur.create_revision, self._rev)
        self._data[key] = kv
        await self._append(Event("MODIFIED", kv, cur))
        return kv

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        cur = self._data.get(key)
        if cur is None:
            raise KeyNotFoundError(key)
        if expected_mod_revision and cur.mod_revision != expected_mod_revision:
            raise ConflictError(key, expected_mod_revision, cur)
        self._rev += 1
        del self._data[key]
        self._keys.pop(bisect.bisect_left(self._keys, key))
        kv = KeyValue(key, cur.value, cur.create_revision, self._rev)
        await self._append(Event("DELETED", kv, cur))
        return cur

    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        return self._watch(prefix, start_revision)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        if start_revision and start_revision < self._compacted:
            raise CompactedError(start_revision, self._compacted)
        next_rev = start_revision or self._rev + 1
        while True:
            # The log is ordered by revision: find the first event at or after next_rev.
            lo = bisect.bisect_left(self._log, next_rev, key=lambda e: e.revision)
            pending = self._log[lo:]
            for ev in pending:
                next_rev = ev.revision + 1
                if ev.kv.key.startswith(prefix):
                    yield ev

            def reached(rev: int = next_rev) -> bool:
                return self._rev >= rev

            async with self._cond:
                await self._cond.wait_for(reached)

    async def compact(self, revision: int) -> None:
        if revision <= self._compacted:
            return
        self._compacted = min(revision, self._rev)
        self._log = [e for e in self._log if e.revision > self._compacted]

    async def close(self) -> None:
        return None
