"""The kubernetes plugin: cluster DNS from the Services and EndpointSlices it watches (Kubernetes DNS specification).

Set up by `dns.setup` from the Corefile's `kubernetes [ZONES…] { … }` (properties: kubeconfig, endpoint, namespaces,
pods, endpoint_pod_names, ttl, noendpoints, fallthrough, ignore empty_service, startup_timeout). `start()` connects
through `pykubeadm.client` (Informers over lightkube) with `credentials.kube_config`, watches Services and
EndpointSlices (discovery.k8s.io/v1; core/v1 Endpoints when the API server does not serve slices; Pods too for
`pods verified`), and rebuilds the zone index (`index.build_index`) on the first query after a change. `serve`
answers names in its zones (`lookup`; SERVFAIL until the first sync), PTR queries for ClusterIPs and endpoint
addresses in in-addr.arpa/ip6.arpa, and hands anything else — and names it does not know in zones named by
`fallthrough` — to the next plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Endpoints, Pod, Service
from lightkube.resources.discovery_v1 import EndpointSlice

from pykubeadm.client import ApiError, Informer, async_client, is_not_found
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext, absolute_zone, in_zone, make_reply
from pykubeadm.dns.plugins.kubernetes import credentials
from pykubeadm.dns.plugins.kubernetes.index import (
    IndexOptions,
    ZoneIndex,
    build_index,
    slices_from_endpoints,
    soa_rrset,
)
from pykubeadm.dns.plugins.kubernetes.lookup import Answer, lookup, lookup_reverse

__all__ = ["KubernetesPlugin", "setup"]

log = logging.getLogger("plugin/kubernetes")

_REVERSE = ("in-addr.arpa.", "ip6.arpa.")
_POD_MODES = ("disabled", "insecure", "verified")


class KubernetesPlugin(Plugin):
    name = "kubernetes"

    def __init__(
        self,
        zones: list[str],
        options: IndexOptions,
        *,
        pods: str,
        fallthrough: list[str] | None,
        kubeconfig: str | None,
        context: str | None,
        endpoint: str | None,
        startup_timeout: float,
        ctx: SetupContext,
    ):
        self.zones = zones
        self.cluster_zones = [z for z in zones if not z.endswith(_REVERSE)]
        self.reverse_zones = [z for z in zones if z.endswith(_REVERSE)]
        self.options = options
        self.pods = pods
        #: None: no fallthrough; []: every zone; else the zones named.
        self.fallthrough = fallthrough
        self.kubeconfig, self.context, self.endpoint = kubeconfig, context, endpoint
        self.startup_timeout = startup_timeout
        self.ctx = ctx
        self.services: dict[str, dict[str, Any]] = {}
        self.slices: dict[str, dict[str, Any]] = {}
        #: (namespace, IP) of every Pod, watched only for `pods verified`.
        self.pod_ips: set[tuple[str, str]] = set()
        self._pod_keys: dict[str, set[tuple[str, str]]] = {}
        self.use_endpoints = False
        self._indexes: dict[str, ZoneIndex] = {}
        self._dirty = True
        self._serial = int(time.time())
        self._synced = asyncio.Event()
        self._client: AsyncClient | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    # --- the watches ---------------------------------------------------------------------------------------------
    async def start(self) -> None:
        try:
            cfg = credentials.kube_config(
                kubeconfig=self.kubeconfig,
                context=self.context,
                endpoint=self.endpoint,
                corefile_path=self.ctx.corefile_path,
                env=self.ctx.env,
            )
        except ValueError as err:
            raise PluginError(self.name, err) from err
        self._client = async_client(cfg, field_manager="coredns")
        self._tasks.append(asyncio.create_task(self._run(self._client)))
        log.info("Waiting for Kubernetes API before starting server")
        try:
            await asyncio.wait_for(self._synced.wait(), self.startup_timeout)
        except TimeoutError:
            log.warning("starting server with unsynced Kubernetes API")

    async def _slices_served(self, client: AsyncClient) -> bool:
        """Does the API server serve discovery.k8s.io/v1 EndpointSlices? (retried until it answers)"""
        while True:
            try:
                async for _ in client.list(EndpointSlice, namespace="*", chunk_size=1):
                    break
                return True
            except ApiError as err:
                if is_not_found(err):
                    log.info("EndpointSlices are not served; watching Endpoints")
                    return False
                log.warning("listing EndpointSlices failed: %s", err)
            except Exception as err:  # transport errors: the API server is not reachable yet
                log.warning("Kubernetes API connection failure: %s", err)
            await asyncio.sleep(1.0)

    async def _run(self, client: AsyncClient) -> None:
        self.use_endpoints = not await self._slices_served(client)
        services: Informer[Any] = Informer(client, Service, namespace="*")
        ep_res: Any = Endpoints if self.use_endpoints else EndpointSlice
        endpoints: Informer[Any] = Informer(client, ep_res, namespace="*")
        services.add_handler(self._handler(self.services))
        endpoints.add_handler(self._handler(self.slices))
        informers = [services, endpoints]
        if self.pods == "verified":
            pods: Informer[Any] = Informer(client, Pod, namespace="*")
            pods.add_handler(self._on_pod)
            informers.append(pods)
        runs = [asyncio.create_task(i.run()) for i in informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            self._synced.set()
            await asyncio.gather(*runs)
        finally:
            for task in runs:
                task.cancel()
            for task in runs:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _handler(self, store: dict[str, dict[str, Any]]) -> Any:
        def on_event(event: str, obj: Any, _old: Any) -> None:
            meta = obj.metadata
            key = f"{meta.namespace}/{meta.name}"
            if event == "DELETED":
                store.pop(key, None)
            else:
                store[key] = obj.to_dict()
            self._dirty = True

        return on_event

    def _on_pod(self, event: str, pod: Any, _old: Any) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        for entry in self._pod_keys.pop(key, set()):
            self.pod_ips.discard(entry)
        if event != "DELETED" and pod.status is not None:
            ips = {p.ip for p in pod.status.podIPs or [] if p.ip} | ({pod.status.podIP} if pod.status.podIP else set())
            entries = {(str(pod.metadata.namespace), ip) for ip in ips}
            self._pod_keys[key] = entries
            self.pod_ips.update(entries)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None

    def ready(self) -> bool:
        return self._synced.is_set()

    def load(self, services: list[dict[str, Any]], slices: list[dict[str, Any]]) -> None:
        """Replace the watched state (tests and tools without an API server)."""
        self.services = {f"{s['metadata']['namespace']}/{s['metadata']['name']}": s for s in services}
        self.slices = {f"{s['metadata']['namespace']}/{s['metadata']['name']}": s for s in slices}
        self._dirty = True
        self._synced.set()

    # --- answering -----------------------------------------------------------------------------------------------
    def indexes(self) -> dict[str, ZoneIndex]:
        if self._dirty:
            self._dirty = False
            self._serial = max(self._serial + 1, int(time.time()))
            slices = list(self.slices.values())
            if self.use_endpoints:
                slices = slices_from_endpoints(slices)
            services = list(self.services.values())
            self._indexes = {
                z: build_index(z, services, slices, serial=self._serial, options=self.options)
                for z in self.cluster_zones
            }
        return self._indexes

    def _falls_through(self, name: str) -> bool:
        if self.fallthrough is None:
            return False
        return not self.fallthrough or any(in_zone(name, z) for z in self.fallthrough)

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        name = req.name_text
        zone = max((z for z in self.zones if in_zone(name, z)), key=len, default=None)
        if zone is None:
            return await next_(req)
        indexes = self.indexes()
        if zone in self.reverse_zones:
            return await self._reverse(req, name, zone, indexes, next_)
        if not self._synced.is_set():  # as CoreDNS: no answers from a cache that has not synced yet
            return self._reply(req, Answer(dns.rcode.SERVFAIL))
        ans = lookup(indexes[zone], name, req.qtype, pods=self.pods, pod_ips=self.pod_ips)
        if ans.rcode == dns.rcode.NXDOMAIN and self._falls_through(name):
            return await next_(req)
        if ans.cname_target is not None and req.qtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            await self._chase(req, ans)
        return self._reply(req, ans)

    async def _reverse(
        self, req: Request, name: str, zone: str, indexes: dict[str, ZoneIndex], next_: Handler
    ) -> dns.message.Message:
        if req.qtype in (dns.rdatatype.PTR, dns.rdatatype.ANY):
            for index in indexes.values():
                rrset = lookup_reverse(index, name)
                if rrset is not None:
                    return self._reply(req, Answer(dns.rcode.NOERROR, answer=[rrset]))
        if self._falls_through(name):
            return await next_(req)
        soa = soa_rrset(zone, self._serial, self.options.ttl)
        return self._reply(req, Answer(dns.rcode.NXDOMAIN, authority=[soa]))

    async def _chase(self, req: Request, ans: Answer) -> None:
        """An ExternalName's target, resolved by the whole server (CoreDNS's upstream), appended after the CNAME."""
        resolve = self.ctx.shared.get("resolve")
        if resolve is None or ans.cname_target is None or req.extra.get("depth", 0) >= 8:
            return
        with contextlib.suppress(Exception):
            reply = await resolve(ans.cname_target, req.qtype, req.extra.get("depth", 0) + 1)
            ans.answer.extend(reply.answer)

    def _reply(self, req: Request, ans: Answer) -> dns.message.Message:
        req.extra["writer"] = self.name
        reply = make_reply(req, ans.rcode, authoritative=True)
        reply.answer = list(ans.answer)
        reply.authority = list(ans.authority)
        reply.additional = list(ans.additional)
        return reply


def _int(d: Directive, text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise PluginError("kubernetes", d.error(f"ttl must be an integer: {text}")) from None
    if not low <= value <= high:
        raise PluginError("kubernetes", d.error(f"ttl must be in range [{low}, {high}]: {value}"))
    return value


def setup(d: Directive, ctx: SetupContext) -> KubernetesPlugin:
    """`kubernetes [ZONES…] { … }` → the plugin (PluginError naming the line for a bad property)."""
    zones = [absolute_zone(z) for z in d.args] or [absolute_zone(z) for z in ctx.zones]
    ttl, pods, fall, kubeconfig, context, endpoint = 5, "disabled", None, None, None, None
    namespaces: set[str] = set()
    pod_names = ignore_empty = noendpoints = False
    startup = 5.0
    for p in d.block:
        if p.name == "ttl":
            if len(p.args) != 1:
                raise PluginError("kubernetes", p.arg_error())
            ttl = _int(p, p.args[0], 0, 3600)
        elif p.name == "pods":
            if len(p.args) != 1:
                raise PluginError("kubernetes", p.arg_error())
            if p.args[0] not in _POD_MODES:
                raise PluginError("kubernetes", p.error(f"invalid pods mode: {p.args[0]}"))
            pods = p.args[0]
        elif p.name == "fallthrough":
            fall = [absolute_zone(z) for z in p.args]
        elif p.name == "kubeconfig":
            if len(p.args) not in (1, 2):
                raise PluginError("kubernetes", p.arg_error())
            kubeconfig, context = p.args[0], (p.args[1] if len(p.args) == 2 else None)
        elif p.name == "endpoint":
            if len(p.args) != 1:
                raise PluginError("kubernetes", p.arg_error())
            endpoint = p.args[0]
        elif p.name == "namespaces":
            if not p.args:
                raise PluginError("kubernetes", p.arg_error())
            namespaces.update(p.args)
        elif p.name == "endpoint_pod_names":
            pod_names = True
        elif p.name == "noendpoints":
            noendpoints = True
        elif p.name == "ignore":
            if p.args != ["empty_service"]:
                raise PluginError("kubernetes", p.error(f"unable to parse ignore value: '{' '.join(p.args)}'"))
            ignore_empty = True
        elif p.name == "startup_timeout":
            from pykubeadm.util.goduration import parse_duration

            if len(p.args) != 1:
                raise PluginError("kubernetes", p.arg_error())
            startup = parse_duration(p.args[0]).total_seconds()
        else:
            raise PluginError("kubernetes", p.unknown_property())
    opts = IndexOptions(
        ttl=ttl,
        namespaces=frozenset(namespaces),
        endpoint_pod_names=pod_names,
        ignore_empty_service=ignore_empty,
        noendpoints=noendpoints,
    )
    return KubernetesPlugin(
        zones,
        opts,
        pods=pods,
        fallthrough=fall,
        kubeconfig=kubeconfig,
        context=context,
        endpoint=endpoint,
        startup_timeout=startup,
        ctx=ctx,
    )
