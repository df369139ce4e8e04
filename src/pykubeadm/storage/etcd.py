"""The etcd v3 engine (`https://host:port,https://host2:port`, or http): the Store over a real etcd's gRPC API.

Client: the generated etcd v3 gRPC stubs shipped by `etcd3aio` (grpc.aio, so the event loop never blocks), one
channel per endpoint, TLS with the apiserver's --etcd-cafile/--etcd-certfile/--etcd-keyfile. etcd3aio's own retry and
watch-resume helpers are not used: we need "try the next member" failover and a watch that resumes from exactly the
last delivered revision + 1 and reports compaction (its watch silently skips forward).

Mutations are the transactions kube-apiserver sends: create = Txn{mod_revision(key) == 0 → Put}, update/delete =
Txn{mod_revision(key) == R → Put/DeleteRange, else Range} (R = 0 means "the key exists": version > 0). A failed compare
becomes KeyExistsError, KeyNotFoundError or ConflictError (with the current record).

Failover: unary calls that fail with UNAVAILABLE / DEADLINE_EXCEEDED / RESOURCE_EXHAUSTED go to the next endpoint
until `request_timeout` runs out (each attempt is bounded by 5 s, so a hung member costs at most that). Watches carry
etcd's `hasleader` metadata (a member that loses its leader cancels the stream instead of going silent), probe an idle
stream with progress requests every `watch_probe_interval` s (a hung member is detected within twice that), reconnect
to the next endpoint on any stream failure and resume from the last delivered revision + 1, skipping anything already
delivered. A create/update retried after a failed attempt that
etcd had in fact applied is recognised (the current record is exactly what we wrote) and reported as a success.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio
from etcd3aio._protobuf import (
    CompactionRequest,
    Compare,
    DeleteRangeRequest,
    KVStub,
    PutRequest,
    RangeRequest,
    RequestOp,
    TxnRequest,
    WatchCreateRequest,
    WatchRequest,
    WatchStub,
    rpc_pb2,
)

from pykubeadm.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    ListResult,
    StoreError,
    StoreUnavailableError,
)
from pykubeadm.storage.keys import prefix_end_bytes

__all__ = ["EtcdStore", "parse_endpoints"]

log = logging.getLogger(__name__)

_RETRY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)
_COMPACTED = "required revision has been compacted"
_FUTURE = "required revision is a future revision"
_WATCH_METADATA = (("hasleader", "true"),)
_PUT, _DELETE = 0, 1  # mvccpb.Event.EventType


def parse_endpoints(url: str) -> tuple[list[str], bool]:
    """`http(s)://h:p,http(s)://h2:p2` → (["h:p", "h2:p2"], tls); StoreUnavailableError on a malformed list."""
    targets, schemes = [], set()
    for part in (p.strip() for p in url.split(",")):
        if not part:
            continue
        u = urlsplit(part)
        if u.scheme not in ("http", "https") or not u.hostname or u.path not in ("", "/"):
            raise StoreUnavailableError(f"invalid etcd server URL {part!r} (want http(s)://host:port)")
        schemes.add(u.scheme)
        targets.append(f"{u.hostname if ':' not in u.hostname else '[' + u.hostname + ']'}:{u.port or 2379}")
    if not targets:
        raise StoreUnavailableError(f"no etcd server in {url!r}")
    if len(schemes) > 1:
        raise StoreUnavailableError(f"etcd server URLs mix http and https: {url!r}")
    return targets, schemes == {"https"}


def _read(path: str | Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise StoreUnavailableError(f"cannot read {what} {path}: {e.strerror}") from e


class _Probe:
    """Liveness of one watch stream: after `interval` s without a response it asks etcd for a progress notification
    (answered at once by a live member); a stream whose read has waited `2 * interval` s with no answer is dead
    (a hung member or a silently broken connection) and gets cancelled so the watch moves to another endpoint."""

    def __init__(self, interval: float):
        self.interval = interval
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.reading_since: float | None = None
        self.stop = asyncio.Event()
        self.dead = False

    async def requests(self, create: Any) -> AsyncIterator[Any]:
        yield WatchRequest(create_request=create)
        while not self.stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.interval)
            if not self.stop.is_set() and self.loop.time() - self.last >= self.interval:
                yield WatchRequest(progress_request=rpc_pb2.WatchProgressRequest())

    async def read(self, call: Any) -> Any:
        self.reading_since = self.loop.time()
        try:
            resp = await call.read()
        finally:
            self.reading_since = None
        self.last = self.loop.time()
        return resp

    async def watchdog(self, call: Any) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.interval / 2))
            since = self.reading_since
            if since is not None and self.loop.time() - max(since, self.last) > 2 * self.interval:
                self.dead = True
                call.cancel()
                return


def _kv(kv: Any) -> KeyValue:
    return KeyValue(kv.key.decode(), kv.value, kv.create_revision, kv.mod_revision)


class EtcdStore:
    """Store over etcd members. Create with `await EtcdStore.open(url, ca_file=..., cert_file=..., key_file=...)`."""

    def __init__(
        self,
        url: str,
        *,
        ca_file: str | Path | None = None,
        cert_file: str | Path | None = None,
        key_file: str | Path | None = None,
        request_timeout: float = 15.0,
        watch_probe_interval: float = 5.0,
    ):
        self.url = url
        self._targets, tls = parse_endpoints(url)
        self._timeout = request_timeout
        self._probe_interval = watch_probe_interval
        options = [
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.max_receive_message_length", 2**31 - 1),
            ("grpc.max_send_message_length", 2**31 - 1),
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2_000),
        ]
        if (cert_file is None) != (key_file is None):
            raise StoreUnavailableError("etcd client certificate and key must be given together")
        if tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(ca_file, "etcd CA file"),
                private_key=_read(key_file, "etcd client key file"),
                certificate_chain=_read(cert_file, "etcd client certificate file"),
            )
            self._channels = [grpc.aio.secure_channel(t, creds, options=options) for t in self._targets]
        else:
            self._channels = [grpc.aio.insecure_channel(t, options=options) for t in self._targets]
        self._kv = [KVStub(c) for c in self._channels]
        self._watch_stubs = [WatchStub(c) for c in self._channels]
        self._current = 0
        self._closed = False

    @classmethod
    async def open(cls, url: str, *, connect_timeout: float = 10.0, **options: Any) -> EtcdStore:
        """Connect and check that at least one member answers within `connect_timeout`."""
        store = cls(url, **options)
        saved, store._timeout = store._timeout, connect_timeout
        try:
            await store.current_revision()
        except BaseException:
            await store.close()
            raise
        store._timeout = saved
        return store

    # -- calls with failover ---------------------------------------------------------------------------------

    def _where(self) -> str:
        return ", ".join(self._targets)

    async def _call(self, method: str, request: Any, retried: list[int] | None = None) -> Any:
        """One unary call with failover; `retried` (if given) collects the failed attempts, which may have been
        applied by etcd before the error (a timeout after the request reached it)."""
        if self._closed:
            raise StoreUnavailableError(f"etcd store for {self._where()} is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        tried = 0
        while True:
            idx = self._current
            left = deadline - loop.time()
            try:
                return await getattr(self._kv[idx], method)(request, timeout=max(0.2, min(5.0, left)))
            except grpc.aio.AioRpcError as e:
                detail = e.details() or e.code().name
                if e.code() not in _RETRY:
                    raise self._map_error(e, request) from e
                tried += 1
                if retried is not None:
                    retried.append(idx)
                if self._current == idx:
                    self._current = (idx + 1) % len(self._targets)
                if deadline - loop.time() <= 0:
                    raise StoreUnavailableError(f"etcd unavailable at {self._where()}: {detail}") from e
                if tried % len(self._targets) == 0:
                    await asyncio.sleep(min(0.5, 0.05 * tried))

    def _map_error(self, e: grpc.aio.AioRpcError, request: Any) -> StoreError:
        detail = e.details() or ""
        rev = getattr(request, "revision", 0)
        if _COMPACTED in detail:
            return CompactedError(rev, 0)
        if _FUTURE in detail:
            return FutureRevisionError(rev, 0)
        if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            return StoreUnavailableError(f"etcd at {self._where()} refused the request: {detail}")
        return StoreError(f"etcd at {self._where()}: {e.code().name}: {detail}")

    # -- reads -----------------------------------------------------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        resp = await self._call("Range", RangeRequest(key=key.encode()))
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0, start_key: str | None = None) -> ListResult:
        p = prefix.encode()
        start = max(p, start_key.encode()) if start_key else p
        req = RangeRequest(key=start, range_end=prefix_end_bytes(p), revision=revision, limit=limit)
        try:
            resp = await self._call("Range", req)
        except FutureRevisionError:
            raise FutureRevisionError(revision, await self.current_revision()) from None
        items = [_kv(kv) for kv in resp.kvs]
        more = bool(resp.more)
        return ListResult(
            items=items,
            revision=revision or resp.header.revision,
            more=more,
            remaining=(resp.count - len(items)) if more else None,
        )

    async def current_revision(self) -> int:
        resp = await self._call("Range", RangeRequest(key=b"/registry/health", count_only=True))
        return int(resp.header.revision)

    # -- writes ----------------------------------------------------------------------------------------------

    def _guard(self, key: bytes, expected: int) -> Compare:
        if expected:
            return Compare(result=Compare.EQUAL, target=Compare.MOD, key=key, mod_revision=expected)
        return Compare(result=Compare.GREATER, target=Compare.VERSION, key=key, version=0)

    async def _txn(self, key: str, compare: Compare, op: RequestOp) -> tuple[Any, KeyValue | None, bool]:
        """Run Txn{compare → op, else Range(key)}: (response, current record when the compare failed, whether an
        earlier attempt failed in a way that may have applied it)."""
        k = key.encode()
        txn = TxnRequest(compare=[compare], success=[op], failure=[RequestOp(request_range=RangeRequest(key=k))])
        retried: list[int] = []
        resp = await self._call("Txn", txn, retried)
        if resp.succeeded:
            return resp, None, bool(retried)
        kvs = resp.responses[0].response_range.kvs
        return resp, (_kv(kvs[0]) if kvs else None), bool(retried)

    async def create(self, key: str, value: bytes) -> KeyValue:
        value = bytes(value)
        put = RequestOp(request_put=PutRequest(key=key.encode(), value=value))
        guard = Compare(result=Compare.EQUAL, target=Compare.MOD, key=key.encode(), mod_revision=0)
        resp, current, retried = await self._txn(key, guard, put)
        if not resp.succeeded:
            if retried and current and current.value == value and current.create_revision == current.mod_revision:
                return current  # our first attempt was applied before its answer got lost
            raise KeyExistsError(key)
        rev = int(resp.header.revision)
        return KeyValue(key, value, rev, rev)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        value = bytes(value)
        put = RequestOp(request_put=PutRequest(key=key.encode(), value=value, prev_kv=True))
        resp, current, retried = await self._txn(key, self._guard(key.encode(), expected_mod_revision), put)
        if not resp.succeeded:
            if current is None:
                raise KeyNotFoundError(key)
            if retried and current.value == value and current.mod_revision > expected_mod_revision > 0:
                return current  # our first attempt was applied before its answer got lost
            raise ConflictError(key, expected_mod_revision, current)
        prev = resp.responses[0].response_put.prev_kv
        rev = int(resp.header.revision)
        return KeyValue(key, value, prev.create_revision or rev, rev)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        op = RequestOp(request_delete_range=DeleteRangeRequest(key=key.encode(), prev_kv=True))
        resp, current, _ = await self._txn(key, self._guard(key.encode(), expected_mod_revision), op)
        if not resp.succeeded:
            if current is None:
                raise KeyNotFoundError(key)
            raise ConflictError(key, expected_mod_revision, current)
        dr = resp.responses[0].response_delete_range
        if not dr.prev_kvs:  # deleted by someone else between compare and delete: cannot happen in one txn
            raise KeyNotFoundError(key)
        prev = dr.prev_kvs[0]
        return KeyValue(key, prev.value, prev.create_revision, int(resp.header.revision))

    async def compact(self, revision: int) -> None:
        try:
            await self._call("Compact", CompactionRequest(revision=revision, physical=False))
        except CompactedError:
            return
        except FutureRevisionError:
            raise FutureRevisionError(revision, await self.current_revision()) from None

    # -- watch -----------------------------------------------------------------------------------------------

    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        return self._watch(prefix, start_revision)

    @staticmethod
    def _event(ev: Any) -> Event:
        prev = _kv(ev.prev_kv) if ev.HasField("prev_kv") else None
        if ev.type == _DELETE:
            last = prev or KeyValue(ev.kv.key.decode(), b"", 0, 0)
            return Event("DELETED", KeyValue(last.key, last.value, last.create_revision, ev.kv.mod_revision), prev)
        kv = _kv(ev.kv)
        if kv.create_revision == kv.mod_revision:
            return Event("ADDED", kv)
        return Event("MODIFIED", kv, prev)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncGenerator[Event, None]:
        key = prefix.encode()
        create = dict(key=key, range_end=prefix_end_bytes(key), prev_kv=True)
        nxt = start_revision if start_revision > 0 else await self.current_revision() + 1
        backoff = 0.05
        while not self._closed:
            idx = self._current
            probe = _Probe(self._probe_interval)
            call = self._watch_stubs[idx].Watch(
                probe.requests(WatchCreateRequest(start_revision=nxt, **create)), metadata=_WATCH_METADATA
            )
            watchdog = asyncio.ensure_future(probe.watchdog(call))
            reason = "stream ended"
            try:
                while True:
                    resp = await probe.read(call)
                    if resp is grpc.aio.EOF:
                        break
                    if resp.compact_revision:
                        raise CompactedError(nxt, int(resp.compact_revision))
                    if resp.canceled:
                        reason = f"watch canceled by etcd: {resp.cancel_reason or 'no reason'}"
                        break
                    for ev in resp.events:
                        if ev.kv.mod_revision < nxt:
                            continue  # already delivered before a reconnect
                        yield self._event(ev)
                        nxt = ev.kv.mod_revision + 1
                    backoff = 0.05
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                if self._closed:
                    return  # close() cancelled the call: the watch ends
                if not probe.dead:
                    raise
                reason = f"no answer for {probe.interval * 2:.0f}s"
            except grpc.aio.AioRpcError as e:
                if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    raise StoreUnavailableError(f"etcd at {self._where()} refused the watch: {e.details()}") from e
                reason = f"{e.code().name}: {e.details()}"
            finally:
                watchdog.cancel()
                probe.stop.set()
                call.cancel()
            if self._closed:
                break
            log.info("etcd watch on %s via %s: %s; resuming at revision %d", prefix, self._targets[idx], reason, nxt)
            if self._current == idx:
                self._current = (idx + 1) % len(self._targets)
            await asyncio.sleep(backoff)
            backoff = min(1.0, backoff * 2)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for c in self._channels:
            with contextlib.suppress(Exception):
                await c.close()
