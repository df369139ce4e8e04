"""The aggregator's control loop, started by server.py: registers a Local APIService for every group version this
apiserver serves (kube-apiserver's autoregister controller, removing stale `onstart` ones), keeps an in-memory view of
the non-local APIServices the proxy routes by, and runs kube-aggregator's AvailableConditionController checks for each
(Service present → port served → Endpoints with addresses → discovery GET through the front-proxy client answers 2xx),
writing the Available condition with kube's reasons and messages and caching the backend's APIResourceList for
discovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.aggregator.apiservice import (
    AUTOMANAGED_LABEL,
    apiservice_name,
    available_condition,
    is_local,
    local_apiservice,
)
from pykubeadm.apiserver.aggregator.proxy import Backend, ProxyTransport, resolve_backends
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector, parse_label_selector

__all__ = ["Aggregator", "RemoteGroupVersion"]

log = logging.getLogger("pykubeadm.apiserver.aggregator")

_CTX = RequestContext()


@dataclass
class RemoteGroupVersion:
    """A non-local APIService as the proxy and discovery see it."""

    name: str
    group: str
    version: str
    spec: Obj
    available: bool = False
    #: The backend's APIResourceList from the last successful discovery check.
    resources: Obj | None = None
    group_priority: int = 0
    version_priority: int = 0
    #: Endpoint addresses from the last check (refreshed whenever Services/Endpoints/APIServices change).
    backends: list[Backend] = field(default_factory=list)


@dataclass
class Aggregator:
    """Shared by the proxy (route), discovery (groups) and the availability loop (run)."""

    state: Any
    transport: ProxyTransport
    served: dict[str, list[str]]
    interval: float = 5.0
    remote: dict[tuple[str, str], RemoteGroupVersion] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    #: bumped whenever the set of remote group versions or their availability changes (discovery caches by it).
    generation: int = 0

    def route(self, group: str, version: str) -> RemoteGroupVersion | None:
        if not self.remote:
            return None
        return self.remote.get((group, version))

    def recheck(self) -> None:
        """Ask for an availability check now (a proxied request failed, or an object changed)."""
        self._wake.set()

    async def resolve(self, rgv: RemoteGroupVersion) -> Backend:
        """An endpoint of the group version: from the last check (kube resolves from its informers' caches too)."""
        backends = rgv.backends or await resolve_backends(self.state, rgv.spec)
        return random.choice(backends)

    # --- autoregister ---------------------------------------------------------------------------------------------

    async def register_local(self) -> None:
        store = self.state.store("apiservices.apiregistration.k8s.io")
        want = {apiservice_name(g, v): (g, v) for g, vs in self.served.items() for v in vs}
        for name, (g, v) in want.items():
            if await store.try_get("", name) is None:
                with contextlib.suppress(st.ApiError):
                    await store.create("", local_apiservice(g, v), _CTX)
        page = await store.list(None, parse_label_selector(f"{AUTOMANAGED_LABEL}=onstart"))
        for obj in page.items:
            if obj["metadata"]["name"] not in want and is_local(obj):
                with contextlib.suppress(st.ApiError):
                    await store.delete("", obj["metadata"]["name"], _CTX)

    # --- availability ---------------------------------------------------------------------------------------------

    async def _check(self, obj: Obj) -> tuple[str, str, str, Obj | None, list[Backend]]:
        """(status, reason, message, APIResourceList, endpoints) for one non-local APIService."""
        spec = obj.get("spec") or {}
        try:
            backends = await resolve_backends(self.state, spec)
        except LookupError as e:
            return "False", e.args[0], e.args[1], None, []
        backend = random.choice(backends)
        url = f"/apis/{spec.get('group', '')}/{spec.get('version', '')}"
        where = backend.url(url)
        try:
            code, body = await self.transport.get(backend, url, timeout=5.0)
        except Exception as e:
            return "False", "FailedDiscoveryCheck", f"failing or missing response from {where}: {e}", None, []
        if not 200 <= code < 300:
            why = f"failing or missing response from {where}: bad status from {where}: {code}"
            return "False", "FailedDiscoveryCheck", why, None, []
        return "True", "Passed", "all checks passed", body if isinstance(body, dict) else None, backends

    async def sync(self) -> None:
        store = self.state.store("apiservices.apiregistration.k8s.io")
        page = await store.list(None)
        remote: dict[tuple[str, str], RemoteGroupVersion] = {}
        for obj in page.items:
            if is_local(obj):
                continue
            spec = obj.get("spec") or {}
            gv = (spec.get("group", ""), spec.get("version", ""))
            if gv[0] in self.served and gv[1] in self.served[gv[0]]:
                continue  # served locally: local wins
            status, reason, message, resources, backends = await self._check(obj)
            prev = self.remote.get(gv)
            rgv = RemoteGroupVersion(
                obj["metadata"]["name"],
                gv[0],
                gv[1],
                spec,
                available=status == "True",
                resources=resources or (prev.resources if prev else None),
                group_priority=int(spec.get("groupPriorityMinimum") or 0),
                version_priority=int(spec.get("versionPriority") or 0),
                backends=backends,
            )
            remote[gv] = rgv
            await self._write_condition(obj, status, reason, message)
        if {k: (v.available, v.name) for k, v in remote.items()} != {
            k: (v.available, v.name) for k, v in self.remote.items()
        }:
            self.generation += 1
        self.remote = remote

    async def _write_condition(self, obj: Obj, status: str, reason: str, message: str) -> None:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Available" and (c.get("status"), c.get("reason"), c.get("message")) == (
                status,
                reason,
                message,
            ):
                return
        cond = available_condition(status, reason, message, obj)
        store = self.state.store("apiservices.apiregistration.k8s.io")

        def transform(old: Obj | None) -> Obj:
            new = dict(old or obj)
            conds = [c for c in ((new.get("status") or {}).get("conditions") or []) if c.get("type") != "Available"]
            new["status"] = {**(new.get("status") or {}), "conditions": [*conds, cond]}
            new["metadata"] = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
            return new

        with contextlib.suppress(st.ApiError):
            await store.update("", obj["metadata"]["name"], transform, _CTX, subresource="status")

    async def _watch(self, resource: str) -> None:
        store = self.state.store(resource)
        while True:
            try:
                page = await store.list(None)
                async for _ in store.watch(None, int(page.resource_version) + 1, LabelSelector(), FieldSelector()):
                    self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("aggregator watch of %s restarts", resource, exc_info=True)
                await asyncio.sleep(1)

    async def run(self) -> None:
        """Autoregister, then re-check every `interval` seconds or at once when APIServices/Services/Endpoints change."""
        watched = [
            r for r in ("apiservices.apiregistration.k8s.io", "services", "endpoints") if r in self.state.by_resource
        ]
        watchers = [asyncio.create_task(self._watch(r), name=f"aggregator-watch-{r}") for r in watched]
        try:
            while True:
                try:
                    await self.register_local()
                    break
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("registering local APIServices failed", exc_info=True)
                    await asyncio.sleep(1)
            while True:
                self._wake.clear()
                try:
                    await self.sync()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("APIService availability check failed", exc_info=True)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.interval)
                    await asyncio.sleep(0.05)  # coalesce a burst of watch events into one check
        finally:
            for t in watchers:
                t.cancel()
            for t in watchers:
                with contextlib.suppress(BaseException):
                    await t
            await self.transport.close()
