"""The embedded SQLite engine (`sqlite:///abs/path/state.db`): the Store on top of `sqlite_log.SqliteLog`.

Threads: one writer thread owns the only write connection; writes queue up and the writer commits everything that
is waiting in ONE transaction (group commit: one fsync for many writes), then resolves each caller's future. Reads run
on two reader threads with their own connections (WAL readers never block the writer). The event loop never touches
SQLite.

Durability: WAL with `synchronous=FULL` by default, i.e. the WAL is fsynced before a write is acknowledged, so an
acknowledged write survives kill -9 *and* power loss; group commit keeps that cheap (see benchmarks/store.py).
`?sync=normal` trades power-loss durability for speed (still safe against a killed process: the WAL is in the OS).

Watch: a single tail task per store reads new rows (`id > last`) whenever the local writer commits, or every
`poll_interval` seconds to see other processes' writes, and fans events out to watchers filtered by prefix. A new
watcher first replays the log from its start revision, then switches to the live feed; a watcher whose queue
overflows (a slow consumer) goes back to replaying from the log, so nothing is lost or duplicated.

Compaction: every `compact_interval` seconds the store compacts to `current - compact_min_retain` (kine's defaults:
5 min, 1000 revisions); `compact()` does it on demand (the apiserver's own compaction loop).

URL options: `sqlite:///abs/path/state.db?sync=full|normal&compact_interval=300&compact_min_retain=1000`.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import sqlite3
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pykubeadm.storage.interface import (
    CompactedError,
    Event,
    FutureRevisionError,
    KeyValue,
    ListResult,
    StoreError,
    StoreUnavailableError,
)
from pykubeadm.storage.sqlite_log import Op, Row, SqliteLog

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_BATCH = 512
_TAIL_BATCH = 1000
_WATCH_QUEUE_MAX = 10_000
_RESYNC = object()
_CLOSED = object()


class _Watcher:
    __slots__ = ("prefix", "queue", "resync")

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.resync = True  # replay from the log before taking live events


class SqliteStore:
    """Store over one SQLite file. Create with `await SqliteStore.open(path)`."""

    def __init__(
        self,
        path: Path,
        *,
        sync: str = "full",
        compact_interval: float = 300.0,
        compact_min_retain: int = 1000,
        poll_interval: float = 0.5,
    ):
        sync = sync.upper()
        if sync not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreUnavailableError(f"unsupported sqlite sync mode {sync!r} (use full or normal)")
        self.path = Path(path)
        self._log = SqliteLog(self.path, sync)
        self._compact_interval = compact_interval
        self._compact_min_retain = compact_min_retain
        self._poll_interval = poll_interval
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._loop_reader: sqlite3.Connection | None = None
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="sqlite-writer")
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="sqlite-reader")
        self._pending: list[tuple[Op, asyncio.Future[KeyValue]]] = []
        self._writing = False
        self._closed = False
        self._watchers: set[_Watcher] = set()
        self._last = 0  # newest revision the tail task has dispatched
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SqliteStore:
        store = cls(Path(path), **options)
        try:
            await store._in(store._writer, lambda _c: None, initialize=True)
            store._last, _ = await store._read(store._log.current)
        except BaseException:
            await store.close()
            raise
        loop = asyncio.get_running_loop()
        store._tasks.append(loop.create_task(store._tail_loop(), name=f"sqlite-tail {path}"))
        if store._compact_interval > 0:
            store._tasks.append(loop.create_task(store._compact_loop(), name=f"sqlite-compact {path}"))
        return store

    # -- threads ---------------------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._log.connect()
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    async def _in(
        self,
        pool: ThreadPoolExecutor,
        fn: Callable[[sqlite3.Connection], T],
        *,
        initialize: bool = False,
        closing: bool = False,
    ) -> T:
        if self._closed and not (initialize or closing):
            raise StoreUnavailableError(f"SQLite datastore {self.path} is closed")

        def run() -> T:
            if initialize:
                self._log.initialize()
            return fn(self._conn())

        try:
            return await asyncio.get_running_loop().run_in_executor(pool, run)
        except (StoreError, asyncio.CancelledError):
            raise
        except sqlite3.Error as e:
            if getattr(e, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
                # the datastore is there but refuses the write (disk full): kube-apiserver answers such a storage
                # error with a 500 (etcd's "mvcc: database space exceeded"), not as an unavailable datastore
                raise StoreError(f"SQLite datastore {self.path}: {e}") from e
            raise StoreUnavailableError(f"SQLite datastore {self.path}: {e}") from e

    def _read(self, fn: Callable[..., T], *args: Any) -> Coroutine[Any, Any, T]:
        return self._in(self._readers, lambda c: fn(c, *args))

    # -- writes: group commit --------------------------------------------------------------------------------

    def _submit(self, op: Op) -> asyncio.Future[KeyValue]:
        if self._closed:
            raise StoreUnavailableError(f"SQLite datastore {self.path} is closed")
        fut: asyncio.Future[KeyValue] = asyncio.get_running_loop().create_future()
        self._pending.append((op, fut))
        if not self._writing:
            self._start_batch()
        return fut

    def _start_batch(self) -> None:
        batch, self._pending = self._pending[:_MAX_BATCH], self._pending[_MAX_BATCH:]
        self._writing = True
        ops = [op for op, _ in batch]
        task = asyncio.ensure_future(self._in(self._writer, lambda c: self._log.write_batch(c, ops), closing=True))
        task.add_done_callback(lambda t: self._batch_done(t, batch))

    def _batch_done(
        self, task: asyncio.Future[tuple[list[KeyValue | StoreError], list[Row]]], batch: list[Any]
    ) -> None:
        self._writing = False
        exc = task.exception() if not task.cancelled() else StoreUnavailableError("write cancelled")
        results, rows = task.result() if exc is None else ([], [])
        for i, (_, fut) in enumerate(batch):
            if fut.done():
                continue
            if exc is not None:
                fut.set_exception(exc if isinstance(exc, StoreError) else StoreUnavailableError(str(exc)))
                continue
            res = results[i]
            if isinstance(res, StoreError):
                fut.set_exception(res)
            else:
                fut.set_result(res)
        if rows and rows[0].id == self._last + 1:
            self._dispatch(rows)  # our own commit follows the last fanned-out revision: no need to read it back
        elif rows:
            self._wake.set()  # someone else wrote in between: the tail task reads the log in order
        if self._pending:
            self._start_batch()

    async def create(self, key: str, value: bytes) -> KeyValue:
        return await self._submit(("create", key, bytes(value), 0))

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        return await self._submit(("update", key, bytes(value), expected_mod_revision))

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        return await self._submit(("delete", key, b"", expected_mod_revision))

    async def compact(self, revision: int) -> None:
        current, compacted = await self._read(self._log.current)
        if revision > current:
            raise FutureRevisionError(revision, current)
        if revision <= compacted:
            return
        # Let the tail task pass `revision` first so live watchers never miss a row compaction removes.
        await self._caught_up(revision)
        n = await self._in(self._writer, lambda c: self._log.compact(c, revision))
        if n:
            log.debug("compacted %s to revision %d: %d rows", self.path, revision, n)

    # -- reads -----------------------------------------------------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        # A point read by primary key costs a few microseconds: run it on the event loop's own connection rather than
        # paying a thread hand-off; if SQLite is busy (a checkpoint), never wait on the loop: use a reader thread.
        if self._closed:
            raise StoreUnavailableError(f"SQLite datastore {self.path} is closed")
        try:
            return self._log.get(self._loop_conn(), key)
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise StoreUnavailableError(f"SQLite datastore {self.path}: {e}") from e
        except sqlite3.Error as e:
            raise StoreUnavailableError(f"SQLite datastore {self.path}: {e}") from e
        return await self._read(self._log.get, key)

    def _loop_conn(self) -> sqlite3.Connection:
        """The event-loop thread's read connection (busy timeout 0: it must never block the loop)."""
        conn = self._loop_reader
        if conn is None:
            conn = self._log.connect()
            conn.execute("PRAGMA busy_timeout = 0")
            self._loop_reader = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0, start_key: str | None = None) -> ListResult:
        items, at, more, remaining = await self._read(self._log.list, prefix, revision, limit, start_key)
        return ListResult(items=items, revision=at, more=more, remaining=remaining)

    async def current_revision(self) -> int:
        return (await self._read(self._log.current))[0]

    # -- watch -----------------------------------------------------------------------------------------------

    def _dispatch(self, rows: builtins.list[Row]) -> None:
        """Fan rows out to the watchers, in order, each row once (both the writer's fast path and the tail task
        call this; rows at or below `_last` were already sent)."""
        for row in rows:
            if row.id <= self._last:
                continue
            ev = row.event()
            for w in self._watchers:
                if w.resync or not row.name.startswith(w.prefix):
                    continue
                if w.queue.qsize() >= _WATCH_QUEUE_MAX:
                    w.resync = True  # slow consumer: drop its queue, it replays from the log
                    while not w.queue.empty():
                        w.queue.get_nowait()
                    w.queue.put_nowait(_RESYNC)
                else:
                    w.queue.put_nowait(ev)
            self._last = row.id

    async def _tail_once(self) -> None:
        while True:
            rows, current, _ = await self._read(self._log.tail, self._last, None, None, _TAIL_BATCH)
            self._dispatch(rows)
            if len(rows) < _TAIL_BATCH:
                self._last = max(self._last, current, rows[-1].id if rows else 0)
                return

    async def _tail_loop(self) -> None:
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll_interval)
            self._wake.clear()
            try:
                await self._tail_once()
            except StoreUnavailableError as e:
                if self._closed:
                    return
                log.warning("watch tail: %s", e)
                await asyncio.sleep(self._poll_interval)

    async def _caught_up(self, revision: int) -> None:
        while self._last < revision and not self._closed:
            self._wake.set()
            await asyncio.sleep(0.005)

    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        return self._watch(prefix, start_revision)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        if start_revision <= 0:
            start_revision = await self.current_revision() + 1
        else:
            _, compacted = await self._read(self._log.current)
            if start_revision < compacted:
                raise CompactedError(start_revision, compacted)
        w = _Watcher(prefix)
        self._watchers.add(w)
        nxt = start_revision
        try:
            while True:
                if w.resync:
                    while not w.queue.empty():
                        w.queue.get_nowait()
                    w.resync = False
                    upto = self._last  # live events after `upto` now queue up while we replay
                    while nxt <= upto:
                        if self._closed:
                            return
                        rows, _, compacted = await self._read(self._log.tail, nxt - 1, upto, prefix, _TAIL_BATCH)
                        if nxt < compacted:
                            raise CompactedError(nxt, compacted)
                        for row in rows:
                            yield row.event()
                            nxt = row.id + 1
                        if len(rows) < _TAIL_BATCH:
                            break
                    nxt = max(nxt, upto + 1)
                    continue
                ev = await w.queue.get()
                if ev is _CLOSED:
                    return
                if ev is _RESYNC or ev.revision < nxt:
                    continue
                yield ev
                nxt = ev.revision + 1
        finally:
            self._watchers.discard(w)

    # -- background ------------------------------------------------------------------------------------------

    async def _compact_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self._compact_interval)
            try:
                current, compacted = await self._read(self._log.current)
                target = current - self._compact_min_retain
                if target > compacted:
                    await self.compact(target)
            except StoreError as e:
                log.warning("periodic compaction of %s: %s", self.path, e)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        while self._writing or self._pending:  # let acknowledged-to-be writes finish
            if not self._writing:
                self._start_batch()
            await asyncio.sleep(0.001)
        for w in self._watchers:  # open watches end (the apiserver closes its watch responses)
            w.resync = False
            w.queue.put_nowait(_CLOSED)
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await asyncio.get_running_loop().run_in_executor(None, self._shutdown_threads)

    def _shutdown_threads(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._conns_lock:
            for conn in self._conns:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._conns.clear()
