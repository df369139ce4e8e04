"""Thin layer over lightkube for everything in pykubeadm that talks to a Kubernetes API server over HTTPS.

Used by kubeadm's phases (sync), the controller-manager, the scheduler and the kubelet (async). It owns:

* loading a kubeconfig file as kubeadm writes it (embedded or file cert/key/CA, bearer token) into a lightkube
  `AsyncClient` / `Client` (`async_client`, `sync_client`);
* `create_or_update` / `create_or_update_sync`: POST, and on AlreadyExists PUT over the live resourceVersion;
* `wait_for` / `wait_for_sync`: GET an object until a predicate holds (or a timeout), watching it in between (as
  `kubectl wait` does), or sleeping when the watch cannot be used;
  each pair is a thin sync/async shell over one generator that yields the client calls to make (STYLE rule 14);
* `JSONRequests`: plain JSON requests by path over an async client's connection (delegated auth's API client);
* `Informer`: list + watch with resume from the last resourceVersion and a fresh list on 410 Gone, keeping a cache and
  calling handlers (the shape of client-go's reflector/informer).

Errors stay lightkube's `ApiError` (it carries the server's Status); `status_code(err)` and `is_*` helpers classify them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import ssl
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import httpx2
import yaml
from lightkube import ApiError, AsyncClient, Client, KubeConfig
from lightkube.core import decoders
from lightkube.core.client import FieldSelector
from lightkube.core.exceptions import ConfigError, NotReadyError
from lightkube.core.selector import build_selector
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.types import OnErrorAction, OnErrorResult

from pykubeadm.errors import KubeconfigError
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "ApiError",
    "EventHandler",
    "Informer",
    "JSONRequests",
    "async_client",
    "create_or_update",
    "create_or_update_sync",
    "delete_with_uid",
    "is_already_exists",
    "is_conflict",
    "is_not_found",
    "load_kubeconfig",
    "object_key",
    "status_code",
    "sync_client",
    "wait_for",
    "wait_for_sync",
]

log = logging.getLogger(__name__)

R = TypeVar("R")
C = TypeVar("C", Client, AsyncClient)


class _Resource(Protocol):
    """What this module reads of a lightkube resource object."""

    @property
    def metadata(self) -> ObjectMeta | None: ...


#: A lightkube resource object (an instance of a class from `lightkube.resources`).
Res = TypeVar("Res", bound=_Resource)

#: Default per-request timeout (watches have no read timeout).
DEFAULT_TIMEOUT = 10.0


def load_kubeconfig(path: str | Path) -> KubeConfig:
    """Read a kubeconfig file (current-context; embedded `*-data` fields and `token` are supported)."""
    try:
        # As KubeConfig.from_file, with libyaml's parser (PyYAML's pure-Python one takes ~6 ms on a kubeconfig's base64)
        filepath = Path(path).expanduser()
        if not filepath.is_file():
            raise ConfigError(f"Configuration file {path} not found")
        data = load_yaml(filepath.read_bytes())
        if not isinstance(data, dict):
            raise ConfigError(f"Configuration file {path} is not a kubeconfig")
        return KubeConfig.from_dict(data, fname=filepath)
    except (ConfigError, OSError, KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as err:
        raise KubeconfigError(f"failed to load kubeconfig {path}: {err}") from err


def _config(kubeconfig: str | Path | KubeConfig) -> KubeConfig:
    return kubeconfig if isinstance(kubeconfig, KubeConfig) else load_kubeconfig(kubeconfig)


def _new_client(
    cls: type[C],
    kubeconfig: str | Path | KubeConfig,
    timeout: float,
    field_manager: str | None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> C:
    try:
        config = _config(kubeconfig)
        extra: dict[str, Any] = {}
        if transport is not None:
            extra["transport"] = transport
        elif cls is AsyncClient:
            extra["transport"] = async_transport(config)
        else:
            extra["transport"] = _sync_transport(config)
        return cls(config, timeout=httpx2.Timeout(timeout), field_manager=field_manager, trust_env=False, **extra)
    except (ConfigError, OSError) as err:
        raise KubeconfigError(f"invalid kubeconfig {kubeconfig}: {err}") from err


def _tls(kubeconfig: KubeConfig) -> tuple[ssl.SSLContext | None, bool]:
    """The TLS context of the kubeconfig's current context (server CA, client certificate; None for a plain-HTTP
    server), and whether there is a context with a user at all (if not, lightkube reports what is missing)."""
    from lightkube.config.client_adapter import verify_cluster

    single = kubeconfig.get()
    if single is None or single.user is None:
        return None, False
    tls = verify_cluster(single.cluster, single.user, single.abs_file, trust_env=False)
    return (tls if single.cluster.server.startswith("https") else None), True


def async_transport(kubeconfig: KubeConfig) -> httpx2.AsyncBaseTransport | None:
    """The transport of an async client for the kubeconfig's current context: its bytes go through aiohttp
    (util.aiohttptransport), not httpcore and anyio, with the context's TLS. None where the context has no user."""
    from pykubeadm.util.aiohttptransport import AiohttpTransport

    tls, usable = _tls(kubeconfig)
    return AiohttpTransport(tls) if usable else None


def _sync_transport(kubeconfig: KubeConfig) -> httpx2.BaseTransport | None:
    """The transport of a blocking client: http.client (util.httpclienttransport), with the context's TLS."""
    from pykubeadm.util.httpclienttransport import HTTPClientTransport

    tls, usable = _tls(kubeconfig)
    return HTTPClientTransport(tls) if usable else None


def async_client(
    kubeconfig: str | Path | KubeConfig,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    field_manager: str | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncClient:
    """An async lightkube client for the kubeconfig's current context. Proxy variables are ignored (loopback APIs).
    Clients given one `transport` (see async_transport) share its connections."""
    return _new_client(AsyncClient, kubeconfig, timeout, field_manager, transport)


def sync_client(
    kubeconfig: str | Path | KubeConfig, *, timeout: float = DEFAULT_TIMEOUT, field_manager: str | None = None
) -> Client:
    """A blocking lightkube client for the kubeconfig's current context."""
    return _new_client(Client, kubeconfig, timeout, field_manager)


class JSONRequests:
    """Plain JSON objects got and posted by path over a lightkube AsyncClient's connection (its server, credentials and
    TLS), failing with lightkube's errors: controllers.app.delegatedauth's ApiClient."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    async def _send(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        generic = self.client._client
        resp = await generic._client.request(method, path, json=body)
        generic.raise_for_status(resp)
        data = resp.json()
        return data if isinstance(data, dict) else {}

    async def get(self, path: str) -> dict[str, Any]:
        return await self._send("GET", path)

    async def post(self, path: str, body: Any) -> dict[str, Any]:
        return await self._send("POST", path, body)

    async def close(self) -> None:
        await self.client.close()


# --- error classification --------------------------------------------------------------------------------------------


def status_code(err: BaseException) -> int | None:
    """The HTTP status of an ApiError (None for transport errors)."""
    if isinstance(err, ApiError):
        return err.status.code or (err.response.status_code if err.response is not None else None)
    return None


def is_not_found(err: BaseException) -> bool:
    return status_code(err) == 404


def is_conflict(err: BaseException) -> bool:
    return status_code(err) == 409 and isinstance(err, ApiError) and err.status.reason != "AlreadyExists"


def is_already_exists(err: BaseException) -> bool:
    return status_code(err) == 409 and isinstance(err, ApiError) and err.status.reason == "AlreadyExists"


def object_key(obj: Any) -> str:
    """`namespace/name` (or `name` for cluster-scoped objects), like client-go's MetaNamespaceKeyFunc."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


# --- create or update / wait: one core, sync and async shells --------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One step of an algorithm shared by the sync and async clients: a client method call, a pause ("sleep"), or a
    watch of one object until a predicate holds or a deadline ("watch_until", see `_watch_until_sync`)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


#: A shared algorithm: yields the `_Call`s to make, receives each result (or has its error thrown in), returns R.
_Steps = Generator[_Call, Any, R]


def _run_sync(client: Client, steps: _Steps[R]) -> R:
    """Drive `steps` with a blocking client (`sleep` is time.sleep)."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            call = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return done.value
        result, error = None, None
        try:
            if call.method == "sleep":
                time.sleep(*call.args)
            elif call.method == "watch_until":
                result = _watch_until_sync(client, *call.args)
            else:
                result = getattr(client, call.method)(*call.args, **call.kwargs)
        except Exception as err:
            error = err


async def _run_async(client: AsyncClient, steps: _Steps[R]) -> R:
    """Drive `steps` with an async client (`sleep` is asyncio.sleep)."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            call = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return done.value
        result, error = None, None
        try:
            if call.method == "sleep":
                await asyncio.sleep(*call.args)
            elif call.method == "watch_until":
                result = await _watch_until_async(client, *call.args)
            else:
                result = await getattr(client, call.method)(*call.args, **call.kwargs)
        except Exception as err:
            error = err


def _create_or_update_steps(obj: Res, retries: int) -> _Steps[Res]:
    """POST; on AlreadyExists, PUT over the live resourceVersion, retrying on Conflict."""
    try:
        return (yield _Call("create", (obj,)))
    except ApiError as err:
        if not is_already_exists(err):
            raise
    meta = obj.metadata
    assert meta is not None  # AlreadyExists answers an object that was sent with a name
    res = type(obj)
    for attempt in range(retries):
        live = yield _Call("get", (res, meta.name), {"namespace": meta.namespace})
        meta.resourceVersion = live.metadata.resourceVersion
        try:
            return (yield _Call("replace", (obj,)))
        except ApiError as err:
            if not is_conflict(err) or attempt == retries - 1:
                raise
    raise AssertionError("unreachable")


async def create_or_update(client: AsyncClient, obj: Res, *, retries: int = 5) -> Res:
    """Create `obj`; if it exists, replace it, carrying the live resourceVersion (retrying on Conflict)."""
    return await _run_async(client, _create_or_update_steps(obj, retries))


def create_or_update_sync(client: Client, obj: Res, *, retries: int = 5) -> Res:
    """Blocking `create_or_update`."""
    return _run_sync(client, _create_or_update_steps(obj, retries))


# --- waiting ---------------------------------------------------------------------------------------------------------


#: Watches that may fail with a transport error or end early before a wait gives up watching and only polls.
_WATCH_ATTEMPTS = 3


class _WatchUnavailable(Exception):
    """A "watch_until" step could not watch. `permanent` when trying again is pointless: an error status (403, 405:
    this identity or server will not watch that object), a stream that is not watch events. Otherwise a transport
    error or a stream that ended before the deadline."""

    def __init__(self, cause: BaseException | str, *, permanent: bool) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.permanent = permanent


def _wait_steps(
    res: type[R], name: str, predicate: Callable[[R], bool], namespace: str | None, timeout: float, interval: float
) -> _Steps[R]:
    """GET until `predicate(obj)` holds; NotFound and transport errors count as "not yet"; TimeoutError at the end.

    After an answered GET it watches the object until the deadline rather than sleeping: the first watched state that
    satisfies `predicate` is the result. Once the watch cannot be used (`_WatchUnavailable`: for the rest of the wait
    if permanent, else for this round, at most `_WATCH_ATTEMPTS` times) it sleeps `interval` between GETs instead.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    watch_failures = 0
    while True:
        reachable = True
        try:
            obj = yield _Call("get", (res, name), {"namespace": namespace})
            if predicate(obj):
                return obj
        except (ApiError, httpx2.TransportError) as err:
            if isinstance(err, ApiError) and not is_not_found(err):
                raise
            last = err
            reachable = isinstance(err, ApiError)  # a watch would not get through either
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {res.__name__} {name}" + (f": {last}" if last else ""))
        if reachable and watch_failures < _WATCH_ATTEMPTS:
            try:
                found = yield _Call("watch_until", (res, name, predicate, namespace, deadline))
            except _WatchUnavailable as err:
                watch_failures = _WATCH_ATTEMPTS if err.permanent else watch_failures + 1
                log.debug("cannot watch %s %s (%s): polling every %ss", res.__name__, name, err, interval)
            else:
                if found is not None:
                    return cast("R", found)
                continue  # the deadline: one last GET (for the error to report), as polling ends
        yield _Call("sleep", (interval,))


def _watch_request(generic: Any, res: type, name: str, namespace: str | None, remaining: float) -> httpx2.Request:
    """A watch of the object `name` from its current state (no resourceVersion: the server first sends it as ADDED if
    it exists). The server ends it after `remaining` seconds rounded up (timeoutSeconds is whole seconds, at least 1);
    a read times out after `remaining` (the client's other timeouts apply as to any request)."""
    br = generic.prepare_request(
        "list",
        res=res,
        namespace=namespace,
        watch=True,
        params={
            "fieldSelector": build_selector({"metadata.name": name}, for_fields=True),
            "timeoutSeconds": max(1, math.ceil(remaining)),
        },
    )
    base: httpx2.Timeout = generic._client.timeout
    br.timeout = httpx2.Timeout(connect=base.connect, read=max(remaining, 0.001), write=base.write, pool=base.pool)
    request: httpx2.Request = generic.build_adapter_request(br)
    return request


def _status_error(response: httpx2.Response) -> httpx2.HTTPStatusError:
    """The error of a watch answered with an error status (its body read): ApiError for a Status, as lightkube's."""
    try:
        return ApiError(request=response.request, response=response)
    except Exception:  # not a JSON Status (a proxy's page)
        return httpx2.HTTPStatusError(f"HTTP {response.status_code}", request=response.request, response=response)


def _event_object(line: str, res: type) -> Any | None:
    """The object of an ADDED or MODIFIED watch event (None for a BOOKMARK or a DELETED); ApiError for an ERROR."""
    if not line:
        return None
    event = decoders.decode_watch_event(line)  # type: ignore[arg-type]  # msgspec decodes str as well as bytes
    if event.type == "ERROR":
        raise ApiError(status=decoders.decode_status(event.object))
    if event.type not in ("ADDED", "MODIFIED"):
        return None
    return decoders.decode_object(event.object, res)


def _watch_failure(err: Exception) -> _WatchUnavailable:
    """An error status, or events that do not decode (ValueError), will not change; a transport error may."""
    return _WatchUnavailable(err, permanent=isinstance(err, httpx2.HTTPStatusError | ValueError))


def _watch_events_sync(
    generic: Any, res: type, name: str, namespace: str | None, deadline: float
) -> Generator[Any, None, None]:
    """The objects of the ADDED/MODIFIED events of a watch of `name`, until the server ends it at the deadline or a read
    times out. The response is closed when this generator ends or is closed. Every failure is a `_WatchUnavailable`,
    and so is a stream that ends before the deadline."""
    response: httpx2.Response | None = None
    try:
        request = _watch_request(generic, res, name, namespace, deadline - time.monotonic())
        response = generic.send(request, stream=True)
        if response.is_error:
            response.read()
            raise _WatchUnavailable(_status_error(response), permanent=True)
        for line in response.iter_lines():
            obj = _event_object(line, res)
            if obj is not None:
                yield obj
    except httpx2.ReadTimeout:
        return  # quiet until the deadline
    except (httpx2.HTTPError, ValueError, OSError) as err:
        raise _watch_failure(err) from err
    finally:
        if response is not None:
            response.close()  # before the stream's end this drops the connection
    if time.monotonic() < deadline:
        raise _WatchUnavailable("the watch ended before the deadline", permanent=False)


async def _watch_events_async(
    generic: Any, res: type, name: str, namespace: str | None, deadline: float
) -> AsyncGenerator[Any, None]:
    """`_watch_events_sync` with an async client."""
    response: httpx2.Response | None = None
    try:
        request = _watch_request(generic, res, name, namespace, deadline - time.monotonic())
        response = await generic.send(request, stream=True)
        if response.is_error:
            await response.aread()
            raise _WatchUnavailable(_status_error(response), permanent=True)
        async for line in response.aiter_lines():
            obj = _event_object(line, res)
            if obj is not None:
                yield obj
    except httpx2.ReadTimeout:
        return
    except (httpx2.HTTPError, ValueError, OSError) as err:
        raise _watch_failure(err) from err
    finally:
        if response is not None:
            await response.aclose()
    if time.monotonic() < deadline:
        raise _WatchUnavailable("the watch ended before the deadline", permanent=False)


def _watch_until_sync(
    client: Client, res: type, name: str, predicate: Callable[[Any], bool], namespace: str | None, deadline: float
) -> Any | None:
    """The "watch_until" step with a blocking client: the first watched state of `name` that satisfies `predicate`, or
    None at `deadline`. Bounded by a read timeout of the time left when it starts, the deadline checked after every
    event, and the server's timeoutSeconds (the time left rounded up to a second).

    lightkube's `Client.watch` is not used: it reconnects when a stream ends (so the end is not seen), has no read
    timeout, and leaves the response open when its generator is closed early."""
    if time.monotonic() >= deadline:
        return None
    with contextlib.closing(_watch_events_sync(client._client, res, name, namespace, deadline)) as events:
        for obj in events:
            if predicate(obj):
                return obj
            if time.monotonic() >= deadline:
                return None
    return None


async def _watch_until_async(
    client: AsyncClient, res: type, name: str, predicate: Callable[[Any], bool], namespace: str | None, deadline: float
) -> Any | None:
    """`_watch_until_sync` with an async client, bounded exactly by the deadline (asyncio.timeout)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    events = _watch_events_async(client._client, res, name, namespace, deadline)
    timer = asyncio.timeout(remaining)
    try:
        async with timer:
            async for obj in events:
                if predicate(obj):
                    return obj
    except TimeoutError:
        if not timer.expired():
            raise
        return None
    finally:
        await events.aclose()
    return None


async def wait_for(
    client: AsyncClient,
    res: type[R],
    name: str,
    predicate: Callable[[R], bool],
    *,
    namespace: str | None = None,
    timeout: float = 60.0,
    interval: float = 0.5,
) -> R:
    """GET until `predicate(obj)` is true, watching the object in between (polling every `interval` when it cannot be
    watched); NotFound and transport errors count as "not yet". TimeoutError at the end of `timeout`."""
    return await _run_async(client, _wait_steps(res, name, predicate, namespace, timeout, interval))


def wait_for_sync(
    client: Client,
    res: type[R],
    name: str,
    predicate: Callable[[R], bool],
    *,
    namespace: str | None = None,
    timeout: float = 60.0,
    interval: float = 0.5,
) -> R:
    """Blocking `wait_for`."""
    return _run_sync(client, _wait_steps(res, name, predicate, namespace, timeout, interval))


# --- delete ----------------------------------------------------------------------------------------------------------


async def delete_with_uid(client: AsyncClient, res: type, name: str, uid: str, *, namespace: str | None = None) -> None:
    """DELETE with `preconditions.uid` (so a re-created object of the same name survives); lightkube lacks the body."""
    generic = client._client
    br = generic.prepare_request("delete", res=res, name=name, namespace=namespace)
    if uid:
        br.data = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
    request = generic.build_adapter_request(br)
    response = await generic.send(request)
    generic.raise_for_status(response)


# --- informer --------------------------------------------------------------------------------------------------------

#: handler(event_type, new_or_last_object, old_object_or_None); event_type is ADDED, MODIFIED or DELETED.
EventHandler = Callable[[str, Any, Any], Awaitable[None] | None]


def _resource_version(obj: _Resource) -> str | None:
    return obj.metadata.resourceVersion if obj.metadata is not None else None


def _raise(_err: Exception, _count: int) -> OnErrorResult:
    return OnErrorResult(OnErrorAction.RAISE)


class Informer(Generic[Res]):
    """List+watch one resource type into a cache and call handlers for every change.

    After the first list `synced` is set. A dropped watch resumes from the last resourceVersion seen; 410 Gone (or an
    ERROR event with code 410) triggers a fresh list whose differences with the cache become ADDED/MODIFIED/DELETED
    events, so handlers never miss a deletion. An object that does not decode is logged and the informer lists again
    after its back-off (client-go's reflector), never ending. `resync` (seconds) re-delivers every cached object as
    MODIFIED.
    """

    def __init__(
        self,
        client: AsyncClient,
        res: type[Res],
        *,
        namespace: str | None = None,
        fields: dict[str, str] | None = None,
        labels: dict[str, Any] | None = None,
        resync: float | None = None,
        watch_timeout: int = 300,
        backoff: float = 1.0,
    ):
        self.client = client
        self.res = res
        self.namespace = namespace
        self.fields: FieldSelector | None = dict(fields) if fields is not None else None
        self.labels = labels
        self.resync = resync
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.cache: dict[str, Res] = {}
        self.synced = asyncio.Event()
        self.resource_version: str | None = None
        self._handlers: list[EventHandler] = []

    def add_handler(self, handler: EventHandler) -> None:
        self._handlers.append(handler)

    def get(self, key: str) -> Res | None:
        return self.cache.get(key)

    def items(self) -> Iterable[Res]:
        return list(self.cache.values())

    async def _emit(self, event: str, obj: Any, old: Any) -> None:
        for handler in self._handlers:
            try:
                result = handler(event, obj, old)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # a faulty handler must not stop the watch (or the other handlers)
                log.exception("%s handler failed on %s %s", self.res.__name__, event, object_key(obj))

    def _ns_kwargs(self) -> dict[str, Any]:
        return {"namespace": self.namespace} if self.namespace is not None else {}

    def _api_res(self) -> type[Any]:
        """`res` for lightkube's list/watch, whose overloads type a resource class known statically to be global or
        namespaced; ours is chosen at run time (and gets a namespace only when it has one)."""
        return cast("type[Any]", self.res)

    async def _list(self) -> None:
        listing = self.client.list(self._api_res(), fields=self.fields, labels=self.labels, **self._ns_kwargs())
        fresh: dict[str, Res] = {}
        async for obj in listing:
            fresh[object_key(obj)] = obj
        try:
            self.resource_version = listing.resourceVersion
        except NotReadyError:
            self.resource_version = None
        old_cache, self.cache = self.cache, fresh
        for key, obj in fresh.items():
            old = old_cache.get(key)
            if old is None:
                await self._emit("ADDED", obj, None)
            elif _resource_version(old) != _resource_version(obj):
                await self._emit("MODIFIED", obj, old)
        for key, old in old_cache.items():
            if key not in fresh:
                await self._emit("DELETED", old, old)
        self.synced.set()

    async def _watch(self) -> None:
        stream = self.client.watch(
            self._api_res(),
            fields=self.fields,
            labels=self.labels,
            resource_version=self.resource_version,
            server_timeout=self.watch_timeout,
            on_error=_raise,
            **self._ns_kwargs(),
        )
        async for event, obj in stream:
            if event not in ("ADDED", "MODIFIED", "DELETED"):
                continue  # BOOKMARK
            rv = obj.metadata.resourceVersion
            if rv:
                self.resource_version = rv
            key = object_key(obj)
            old = self.cache.get(key)
            if event == "DELETED":
                self.cache.pop(key, None)
                await self._emit("DELETED", obj, old)
            else:
                self.cache[key] = obj
                await self._emit("ADDED" if old is None else "MODIFIED", obj, old)

    async def _resync_loop(self) -> None:
        assert self.resync is not None
        while True:
            await asyncio.sleep(self.resync)
            for obj in list(self.cache.values()):
                await self._emit("MODIFIED", obj, obj)

    async def run(self) -> None:
        """Run until cancelled."""
        resync_task = asyncio.create_task(self._resync_loop()) if self.resync else None
        need_list = True
        try:
            while True:
                try:
                    if need_list:
                        await self._list()
                        need_list = False
                    await self._watch()
                except ApiError as err:
                    if status_code(err) == 410:
                        log.info("%s watch expired (410 Gone); re-listing", self.res.__name__)
                        need_list = True
                        continue
                    log.warning("%s list/watch failed: %s", self.res.__name__, err)
                    need_list = need_list or self.resource_version is None
                    await asyncio.sleep(self.backoff)
                except (httpx2.HTTPError, OSError) as err:
                    log.info("%s watch interrupted: %s; resuming", self.res.__name__, err)
                    need_list = need_list or self.resource_version is None
                    await asyncio.sleep(self.backoff)
                except Exception as err:  # an object that does not decode: list again after the back-off, as a
                    # reflector does; the informer (and the component that runs it) goes on
                    log.error("%s list/watch failed to decode an object: %s; listing again", self.res.__name__, err)
                    need_list = True
                    await asyncio.sleep(self.backoff)
        finally:
            if resync_task:
                resync_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync_task
