"""The datastore interface under the built-in apiserver: the Store protocol, its records and its errors.

Engines (`sqlite.py`, `etcd.py`) implement `Store`; the apiserver only ever sees this module and
`await pykubeadm.storage.open_store(url, ca_file=…, cert_file=…, key_file=…)`, which picks the engine from the
--etcd-servers URL. Keys are kube-apiserver's etcd keys (`/registry/<resource>/<namespace>/<name>`), values are
opaque bytes (the objects' JSON), revisions are the store's global, strictly increasing revision numbers (an object's
`metadata.resourceVersion` is its `mod_revision`).

    StoreError
    ├── KeyExistsError        create of a key that exists
    ├── KeyNotFoundError      update/delete of a key that does not exist
    ├── ConflictError         update/delete whose expected mod_revision is stale (→ 409 Conflict); carries `current`
    ├── CompactedError        list/watch at a revision older than the compacted one (→ 410 Gone)
    ├── FutureRevisionError   list/compact at a revision newer than the current one (→ 504 "Too large resource version")
    └── StoreUnavailableError the engine cannot be reached (names the address) or the database is not ours
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "CompactedError",
    "ConflictError",
    "Event",
    "FutureRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "KeyValue",
    "ListResult",
    "Store",
    "StoreError",
    "StoreUnavailableError",
]


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int


@dataclass(frozen=True, slots=True)
class Event:
    """One change. `kv` is the new state (for DELETED: the key with the deleting revision as mod_revision and the
    last value); `prev` is the state before the change (None for ADDED)."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    kv: KeyValue
    prev: KeyValue | None = None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[KeyValue]
    #: The store revision the list was read at (the list's resourceVersion).
    revision: int
    #: True when `limit` cut the list; continue from `items[-1].key` + "\x00" at the same revision.
    more: bool = False
    #: Number of keys left after this page, when known (for `remainingItemCount`).
    remaining: int | None = None


class StoreError(Exception):
    pass


class KeyExistsError(StoreError):
    def __init__(self, key: str):
        self.key = key
        super().__init__(f"key exists: {key}")


class KeyNotFoundError(StoreError):
    def __init__(self, key: str):
        self.key = key
        super().__init__(f"key not found: {key}")


class ConflictError(StoreError):
    def __init__(self, key: str, expected: int, current: KeyValue | None):
        self.key = key
        self.expected = expected
        self.current = current
        got = current.mod_revision if current else "deleted"
        super().__init__(f"conflict on {key}: expected mod_revision {expected}, current {got}")


class CompactedError(StoreError):
    def __init__(self, requested: int, compacted: int):
        #: `compacted` is the store's compacted revision, 0 when the engine does not say (etcd's Range error).
        self.requested = requested
        self.compacted = compacted
        super().__init__(f"required revision {requested} has been compacted (compacted revision {compacted})")


class FutureRevisionError(StoreError):
    def __init__(self, requested: int, current: int):
        self.requested = requested
        self.current = current
        super().__init__(f"required revision {requested} is a future revision (current revision {current})")


class StoreUnavailableError(StoreError):
    pass


@runtime_checkable
class Store(Protocol):
    """One async datastore. All methods are coroutine functions except `watch`, an async iterator factory."""

    async def get(self, key: str) -> KeyValue | None:
        """The current value of `key`, or None."""
        ...

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0, start_key: str | None = None) -> ListResult:
        """Keys under `prefix` in key order, at `revision` (0 = current); at most `limit` (0 = all), starting at
        `start_key` (inclusive). Raises CompactedError for a compacted revision, FutureRevisionError for a revision
        above the current one."""
        ...

    async def create(self, key: str, value: bytes) -> KeyValue:
        """Create `key`; raises KeyExistsError if it exists. Returns the stored record."""
        ...

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        """Replace `key` if its mod_revision equals `expected_mod_revision` (0 = unconditional);
        raises ConflictError or KeyNotFoundError."""
        ...

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        """Delete `key` (guarded like update); returns the deleted record: its last value and create_revision, with
        `mod_revision` = the revision of the deletion (the same record as the DELETED event's `kv`)."""
        ...

    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        """Every change under `prefix` with revision >= `start_revision`, in revision order, without gaps or
        duplicates; raises CompactedError (at first iteration) when start_revision is compacted. 0 = changes after
        the current revision *when iteration starts* (the iterator is lazy: pass an explicit revision, e.g. a list's
        revision + 1, to not miss anything in between).

        It may also raise CompactedError later if the consumer falls so far behind that history it has not read yet
        is compacted (etcd cancels such a watcher the same way): the apiserver ends the watch and the client re-lists.
        Close the iterator (`aclose()`, or leave `async for` / cancel the task) to stop watching."""
        ...

    async def current_revision(self) -> int:
        """The store's current revision (1 on an empty store, as etcd; every write increments it by one)."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history before `revision`; later list/watch below it raise CompactedError. A revision at or below
        the compacted one is a no-op; above the current one raises FutureRevisionError."""
        ...

    async def close(self) -> None: ...
