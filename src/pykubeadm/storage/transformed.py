"""A Store wrapper that transforms values on their way to and from another Store, by key: the apiserver's encryption
at rest sits here, so every engine (SQLite, etcd, memory) holds the transformed bytes and everything above it, the
registry, the watch cache and the controllers, sees plain values.

`resolve(key)` names the value transformer of a key, or None to store the value unchanged. A value read with a
transformer other than the one that writes now comes back as a `StaleKeyValue`: an update rewrites such an object
even when it did not change (kube's "stale" read), so re-writing every object moves it to the current key.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pykubeadm.storage.interface import Event, KeyValue, ListResult, Store, StoreError

__all__ = ["StaleKeyValue", "TransformedStore", "ValueTransformError", "ValueTransformer", "is_stale"]


class ValueTransformer(Protocol):
    #: True when writing stores the value unchanged (reads may still need the transformer).
    writes_plain: bool

    def to_storage(self, data: bytes, key: str) -> bytes: ...

    def from_storage(self, data: bytes, key: str) -> tuple[bytes, bool]: ...


class ValueTransformError(StoreError):
    """A stored value that could not be transformed back (its key is named; the value never is)."""


@dataclass(frozen=True, slots=True)
class StaleKeyValue(KeyValue):
    """A record whose stored form was written by a transformer other than the current writing one."""


def is_stale(kv: KeyValue) -> bool:
    return isinstance(kv, StaleKeyValue)


class TransformedStore:
    """`Store` over `inner`, with values transformed per key by `resolve` (which may change between calls: a reloaded
    configuration applies to the next read or write)."""

    def __init__(self, inner: Store, resolve: Callable[[str], ValueTransformer | None]):
        self.inner = inner
        self.resolve = resolve

    def __getattr__(self, name: str) -> Any:  # engine extras (e.g. a SQLite store's path) pass through
        return getattr(self.inner, name)

    def _read(self, kv: KeyValue | None) -> KeyValue | None:
        if kv is None:
            return None
        t = self.resolve(kv.key)
        if t is None:
            return kv
        try:
            value, stale = t.from_storage(kv.value, kv.key)
        except Exception as e:
            raise ValueTransformError(f"unable to transform the value of key {kv.key}: {e}") from None
        cls = StaleKeyValue if stale else KeyValue
        return cls(kv.key, value, kv.create_revision, kv.mod_revision)

    def _write(self, key: str, value: bytes) -> bytes:
        t = self.resolve(key)
        return value if t is None else t.to_storage(value, key)

    def _with_value(self, stored: KeyValue, value: bytes) -> KeyValue:
        return KeyValue(stored.key, value, stored.create_revision, stored.mod_revision)

    async def get(self, key: str) -> KeyValue | None:
        return self._read(await self.inner.get(key))

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0, start_key: str | None = None) -> ListResult:
        page = await self.inner.list(prefix, revision=revision, limit=limit, start_key=start_key)
        items = [kv for kv in (self._read(kv) for kv in page.items) if kv is not None]
        return ListResult(items, page.revision, page.more, page.remaining)

    async def create(self, key: str, value: bytes) -> KeyValue:
        return self._with_value(await self.inner.create(key, self._write(key, value)), value)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        try:
            stored = await self.inner.update(key, self._write(key, value), expected_mod_revision)
        except StoreError as e:
            current = getattr(e, "current", None)
            if current is not None:
                e.current = self._read(current)  # type: ignore[attr-defined]
            raise
        return self._with_value(stored, value)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        try:
            kv = await self.inner.delete(key, expected_mod_revision)
        except StoreError as e:
            current = getattr(e, "current", None)
            if current is not None:
                e.current = self._read(current)  # type: ignore[attr-defined]
            raise
        out = self._read(kv)
        assert out is not None
        return out

    async def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        it = self.inner.watch(prefix, start_revision)
        try:
            async for ev in it:
                kv = self._read(ev.kv)
                assert kv is not None
                yield Event(ev.type, kv, self._read(ev.prev))
        finally:
            await it.aclose()

    async def current_revision(self) -> int:
        return await self.inner.current_revision()

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)

    async def close(self) -> None:
        await self.inner.close()
