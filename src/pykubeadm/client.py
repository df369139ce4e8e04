"""Thin layer over lightkube for everything in pykubeadm that talks to a Kubernetes API server over HTTPS.

Used by kubeadm's phases (sync), the controller-manager, the scheduler and the kubelet (async). It owns:

* loading a kubeconfig file as kubeadm writes it (embedded or file cert/key/CA, bearer token) into a lightkube
  `AsyncClient` / `Client` (`async_client`, `sync_client`);
* `create_or_update` / `create_or_update_sync`: POST, and on AlreadyExists PUT over the live resourceVersion;
* `wait_for` / `wait_for_sync`: poll an object until a predicate holds (or a timeout);
  each pair is a thin sync/async shell over one generator that yields the client calls to make (STYLE rule 14);
* `Informer`: list + watch with resume from the last resourceVersion and a fresh list on 410 Gone, keeping a cache and
  calling handlers (the shape of client-go's reflector/informer).

Errors stay lightkube's `ApiError` (it carries the server's Status); `status_code(err)` and `is_*` helpers classify them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import httpx2
import yaml
from lightkube import ApiError, AsyncClient, Client, KubeConfig
from lightkube.core.client import FieldSelector
from lightkube.core.exceptions import ConfigError, NotReadyError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.types import OnErrorAction, OnErrorResult

from pykubeadm.errors import KubeconfigError
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "ApiError",
    "EventHandler",
    "Informer",
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


def _new_client(cls: type[C], kubeconfig: str | Path | KubeConfig, timeout: float, field_manager: str | None) -> C:
    try:
        config = _config(kubeconfig)
        extra: dict[str, Any] = {}
        if cls is AsyncClient:  # the bytes go through aiohttp (util.aiohttptransport), not httpcore and anyio
            from lightkube.config.client_adapter import verify_cluster

            from pykubeadm.util.aiohttptransport import AiohttpTransport

            single = config.get()
            if single is not None and single.user is not None:  # else lightkube reports what is missing
                tls = verify_cluster(single.cluster, single.user, single.abs_file, trust_env=False)
                extra["transport"] = AiohttpTransport(tls if single.cluster.server.startswith("https") else None)
        return cls(config, timeout=httpx2.Timeout(timeout), field_manager=field_manager, trust_env=False, **extra)
    except (ConfigError, OSError) as err:
        raise KubeconfigError(f"invalid kubeconfig {kubeconfig}: {err}") from err


def async_client(
    kubeconfig: str | Path | KubeConfig, *, timeout: float = DEFAULT_TIMEOUT, field_manager: str | None = None
) -> AsyncClient:
    """An async lightkube client for the kubeconfig's current context. Proxy variables are ignored (loopback APIs)."""
    return _new_client(AsyncClient, kubeconfig, timeout, field_manager)


def sync_client(
    kubeconfig: str | Path | KubeConfig, *, timeout: float = DEFAULT_TIMEOUT, field_manager: str | None = None
) -> Client:
    """A blocking lightkube client for the kubeconfig's current context."""
    return _new_client(Client, kubeconfig, timeout, field_manager)


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
    """One step of an algorithm shared by the sync and async clients: a client method call, or a pause ("sleep")."""

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


def _wait_steps(
    res: type[R], name: str, predicate: Callable[[R], bool], namespace: str | None, timeout: float, interval: float
) -> _Steps[R]:
    """GET until `predicate(obj)` holds; NotFound and transport errors count as "not yet"; TimeoutError at the end."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            obj = yield _Call("get", (res, name), {"namespace": namespace})
            if predicate(obj):
                return obj
        except (ApiError, httpx2.TransportError) as err:
            if isinstance(err, ApiError) and not is_not_found(err):
                raise
            last = err
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {res.__name__} {name}" + (f": {last}" if last else ""))
        yield _Call("sleep", (interval,))


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
    """Poll GET until `predicate(obj)` is true; NotFound and transport errors count as "not yet". TimeoutError."""
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
    events, so handlers never miss a deletion. `resync` (seconds) re-delivers every cached object as MODIFIED.
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
        finally:
            if resync_task:
                resync_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync_task
