"""The kube-proxy process: picks the data plane, watches Services, EndpointSlices and its Node, and syncs the proxier.

Used by `proxy.cli`. Start-up follows kube-proxy: the node's IPs (the bind address when it is set, else the Node's
InternalIP/ExternalIP, else loopback with kube-proxy's warning), the proxier (`Using nftables Proxier`, or the
userspace proxier with the reason said once — built-in mode cannot use iptables), the healthz and metrics servers,
then the service, endpoint slice and node config controllers. Nothing is synced before both Services and
EndpointSlices are listed; after that every change queues a sync (bounded by minSyncPeriod in nftables mode, two in a
burst, as kube-proxy's BoundedFrequencyRunner), and syncPeriod re-syncs anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Node, Service
from lightkube.resources.discovery_v1 import EndpointSlice

from pykubeadm.client import ApiError, Informer, async_client, is_not_found, object_key
from pykubeadm.proxy import metrics
from pykubeadm.proxy.config import MODE_IPVS, MODE_NFTABLES, ProxyConfig
from pykubeadm.proxy.health import ProxyHealth, start_health_server, start_metrics_server
from pykubeadm.proxy.nftables import NftablesProxier
from pykubeadm.proxy.servicemap import LAST_CHANGE_TRIGGER_TIME, SERVICE_NAME_LABEL, build_table, categorize
from pykubeadm.proxy.userspace import UserspaceProxier

__all__ = ["ProxyServer", "choose_data_plane", "node_addresses"]

log = logging.getLogger("kube-proxy")

USERSPACE = "userspace"
#: How long start-up waits for this node's Node object to learn its IPs (kube-proxy waits too).
NODE_WAIT = 30.0


def choose_data_plane(mode: str, *, is_root: bool | None = None, has_nft: bool | None = None) -> tuple[str, str]:
    """(data plane, why it is not the configured mode or ""). nftables is taken as asked; the rest fall back."""
    if mode == MODE_NFTABLES:
        return MODE_NFTABLES, ""
    is_root = os.geteuid() == 0 if is_root is None else is_root
    has_nft = shutil.which("nft") is not None if has_nft is None else has_nft
    asked = mode or "iptables"
    if mode == MODE_IPVS:
        why = "the ipvs proxier is not built in"
    elif not is_root:
        why = "not running as root"
    elif not has_nft:
        why = 'the "nft" command is missing (Debian package "nftables")'
    else:
        why = "built-in mode runs its nodes in the host's network namespace (set mode: nftables on a node of its own)"
    return USERSPACE, f"Can't use the {asked} proxier: {why}; falling back to the userspace proxier"


def node_addresses(node: dict[str, Any]) -> list[str]:
    """InternalIPs, else ExternalIPs, of a Node (kube-proxy's node IP detection), one per family."""
    addrs = (node.get("status") or {}).get("addresses") or []
    out: list[str] = []
    for kind in ("InternalIP", "ExternalIP"):
        for a in addrs:
            if a.get("type") == kind and a.get("address"):
                ip = str(a["address"])
                if all(ipaddress.ip_address(ip).version != ipaddress.ip_address(o).version for o in out):
                    out.append(ip)
        if out:
            break
    return out


def _unspecified(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip.strip("[]")).is_unspecified
    except ValueError:
        return False


def _rebind(host_port: str, node_ip: str) -> str:
    """Built-in mode: the nodes share the host, so an unspecified address (and 127.0.0.1, when the node's own address
    is another loopback address, as in the lab) becomes the node's address; every node keeps the standard ports."""
    host, _, port = host_port.rpartition(":")
    host = host.strip("[]")
    shared_loopback = host == "127.0.0.1" and node_ip.startswith("127.") and node_ip != host
    if not (_unspecified(host) or shared_loopback):
        return host_port
    return f"[{node_ip}]:{port}" if ":" in node_ip else f"{node_ip}:{port}"


_SERVICE_SPEC = (
    "type",
    "clusterIP",
    "clusterIPs",
    "ports",
    "sessionAffinity",
    "sessionAffinityConfig",
    "externalIPs",
    "internalTrafficPolicy",
    "externalTrafficPolicy",
)


def _compact_service(d: dict[str, Any]) -> dict[str, Any]:
    """Only what the proxiers read (the informer keeps the whole object; 1000s of Services stay small)."""
    meta, spec = d.get("metadata") or {}, d.get("spec") or {}
    return {
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": {k: spec[k] for k in _SERVICE_SPEC if k in spec},
    }


def _compact_slice(d: dict[str, Any]) -> dict[str, Any]:
    meta = d.get("metadata") or {}
    labels = meta.get("labels") or {}
    return {
        "metadata": {
            "namespace": meta.get("namespace"),
            "labels": {k: v for k, v in labels.items() if k == SERVICE_NAME_LABEL},
        },
        "addressType": d.get("addressType"),
        "endpoints": [
            {"addresses": ep.get("addresses"), "conditions": ep.get("conditions"), "nodeName": ep.get("nodeName")}
            for ep in d.get("endpoints") or []
        ],
        "ports": d.get("ports"),
    }


def _trigger_time(obj: dict[str, Any]) -> float | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_CHANGE_TRIGGER_TIME)
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class ProxyServer:
    """One kube-proxy: `await run()` until cancelled."""

    config: ProxyConfig
    hostname: str
    kubeconfig: str

    def __post_init__(self) -> None:
        self.services: dict[str, dict[str, Any]] = {}
        self.slices: dict[str, dict[str, Any]] = {}
        self.node: dict[str, Any] | None = None
        self.dirty = asyncio.Event()
        self.pending_triggers: list[float] = []
        self.health = ProxyHealth(2 * self.config.sync_period)
        self.proxier: Any = None
        self._sync_times: list[float] = []
        self._stale_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()

    # --- start-up ---------------------------------------------------------------------------------------------------
    async def _node_ips(self, client: AsyncClient) -> list[str]:
        if not _unspecified(self.config.bind_address):
            return [self.config.bind_address]
        deadline = time.monotonic() + NODE_WAIT
        while True:
            try:
                node = await client.get(Node, self.hostname)
                ips = node_addresses(node.to_dict())
                if ips:
                    log.info('"Successfully retrieved NodeIPs" NodeIPs=%s', ips)
                    return ips
            except ApiError as err:
                if not is_not_found(err):
                    log.warning("Failed to retrieve node info: %s", err)
            except Exception as err:  # transport errors while the apiserver comes up
                log.warning("Failed to retrieve node info: %s", err)
            if time.monotonic() >= deadline:
                log.error(
                    "Can't determine this node's IP, assuming loopback; "
                    "if this is incorrect, please set the --bind-address flag"
                )
                return ["127.0.0.1"]
            await asyncio.sleep(0.5)

    def _new_proxier(self, node_ips: list[str]) -> Any:
        plane, why = choose_data_plane(self.config.mode)
        if why:
            log.warning(why)
        if plane == MODE_NFTABLES:
            log.info('"Using nftables Proxier"')
            cidrs = [c.strip() for c in self.config.cluster_cidr.split(",") if c.strip()]
            families = sorted({6 if ":" in ip else 4 for ip in node_ips} | {4})
            return NftablesProxier(
                self.hostname,
                node_ips,
                masquerade_bit=self.config.masquerade_bit,
                masquerade_all=self.config.masquerade_all,
                cluster_cidrs=cidrs,
                families=families,
            )
        log.info('"Using userspace Proxier"')
        return UserspaceProxier(self.hostname, node_ips)

    # --- informer handlers -------------------------------------------------------------------------------------------
    def _queue(self) -> None:
        metrics.LAST_QUEUED_TIMESTAMP.set_to_current_time()
        self.health.queued_update()
        self.dirty.set()

    def _on_service(self, event: str, obj: Any, _old: Any) -> None:
        key = object_key(obj)
        if event == "DELETED":
            self.services.pop(key, None)
        else:
            self.services[key] = _compact_service(obj.to_dict())
        metrics.SERVICE_CHANGES_TOTAL.inc()
        self._queue()

    def _on_slice(self, event: str, obj: Any, _old: Any) -> None:
        key = object_key(obj)
        if event == "DELETED":
            self.slices.pop(key, None)
        else:
            d = obj.to_dict()
            self.slices[key] = _compact_slice(d)
            trigger = _trigger_time(d)
            if trigger is not None:
                self.pending_triggers.append(trigger)
        metrics.ENDPOINT_CHANGES_TOTAL.inc()
        self._queue()

    def _on_node(self, event: str, obj: Any, _old: Any) -> None:
        if obj.metadata.name != self.hostname:
            log.error(
                '"Received a watch event for a node that doesn\'t match the current node" eventNode=%s currentNode=%s',
                obj.metadata.name,
                self.hostname,
            )
            return
        self.node = None if event == "DELETED" else obj.to_dict()
        self.health.sync_node(self.node)

    # --- sync -----------------------------------------------------------------------------------------------------------
    async def sync_once(self, *, full: bool = False) -> None:
        start = time.perf_counter()
        table = build_table(self.services.values(), self.slices.values())
        triggers, self.pending_triggers = self.pending_triggers, []
        try:
            await self.proxier.sync(table, full=full)
        except Exception as err:
            log.error('"Sync failed" err="%s" retryingTime=%ss', err, self.config.sync_period)
            if self.proxier.name == MODE_NFTABLES:
                metrics.NFTABLES_SYNC_FAILURES.inc()
            self.pending_triggers = triggers + self.pending_triggers
            asyncio.get_running_loop().call_later(self.config.sync_period, self.dirty.set)
            return
        finally:
            metrics.SYNC_DURATION.observe(time.perf_counter() - start)
        now = time.time()
        for t in triggers:
            metrics.NETWORK_PROGRAMMING_DURATION.observe(max(0.0, now - t))
        no_local = {"internal": 0, "external": 0}
        for name, sp in table.ports.items():
            if not (sp.internal_local or sp.external_local):
                continue
            cat = categorize(sp, table.endpoints.get(name, []), self.hostname)
            if cat.has_any and not cat.local:
                no_local["internal" if sp.internal_local else "external"] += 1
        for policy, count in no_local.items():
            metrics.NO_LOCAL_ENDPOINTS.labels(policy).set(count)
        metrics.SERVICE_CHANGES_PENDING.set(0)
        metrics.ENDPOINT_CHANGES_PENDING.set(0)
        metrics.LAST_TIMESTAMP.set_to_current_time()
        self.health.updated()
        if getattr(self.proxier, "has_stale_chains", False) and self._stale_timer is None:
            self._stale_timer = asyncio.get_running_loop().call_later(1.1, self._delete_stale)

    def _delete_stale(self) -> None:
        self._stale_timer = None

        async def run() -> None:
            try:
                await self.proxier.delete_stale()
            except Exception as err:
                log.error('"Failed to delete stale nftables chains; will retry later" err="%s"', err)

        task = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _sync_loop(self) -> None:
        bounded = self.proxier.name == MODE_NFTABLES
        while True:
            periodic = False
            try:
                await asyncio.wait_for(self.dirty.wait(), self.config.sync_period)
            except TimeoutError:
                periodic = True  # syncPeriod: a full resync, whatever changed
            if bounded and len(self._sync_times) >= 2:
                wait = self._sync_times[-2] + self.config.min_sync_period - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)  # two syncs per minSyncPeriod at most, as kube-proxy's runner
            self.dirty.clear()
            self._sync_times = [*self._sync_times[-1:], time.monotonic()]
            await self.sync_once(full=periodic)

    async def _serve(
        self, what: str, address: str, start: Callable[[], Awaitable[web.AppRunner]], runners: list[web.AppRunner]
    ) -> None:
        """Start a server; a bind failure is fatal only with bindAddressHardFail, else retried (kube-proxy's way)."""
        while True:
            try:
                runners.append(await start())
                log.info('"Starting %s HTTP server" address="%s"', what, address)
                return
            except OSError as err:
                if self.config.raw.get("bindAddressHardFail"):
                    raise
                log.error('"Failed to start %s server" err="%s" address="%s"', what, err.strerror or err, address)
                await asyncio.sleep(5)

    # --- run --------------------------------------------------------------------------------------------------------------
    async def run(self) -> int:
        client = async_client(self.kubeconfig, timeout=30.0)
        runners: list[web.AppRunner] = []
        tasks: list[asyncio.Task[Any]] = []
        try:
            node_ips = await self._node_ips(client)
            self.proxier = self._new_proxier(node_ips)
            healthz, metrics_addr = self.config.healthz_bind_address, self.config.metrics_bind_address
            if self.proxier.name == USERSPACE:  # the nodes of a built-in host share it: serve on this node's address
                healthz, metrics_addr = _rebind(healthz, node_ips[0]), _rebind(metrics_addr, node_ips[0])
            if healthz:
                tasks.append(
                    asyncio.create_task(
                        self._serve("healthz", healthz, lambda: start_health_server(self.health, healthz), runners)
                    )
                )
            tasks.append(
                asyncio.create_task(
                    self._serve(
                        "metrics",
                        metrics_addr,
                        lambda: start_metrics_server(metrics_addr, self.proxier.name, self.config.raw),
                        runners,
                    )
                )
            )
            # every namespace ("*"): without it lightkube lists only the kubeconfig's default namespace
            services = Informer(client, Service, namespace="*", watch_timeout=300)
            slices = Informer(client, EndpointSlice, namespace="*", watch_timeout=300)
            nodes = Informer(client, Node, fields={"metadata.name": self.hostname}, watch_timeout=300)
            services.add_handler(self._on_service)
            slices.add_handler(self._on_slice)
            nodes.add_handler(self._on_node)
            for what, inf in (("service", services), ("endpoint slice", slices), ("node", nodes)):
                log.info('"Starting %s config controller"', what)
                tasks.append(asyncio.create_task(inf.run(), name=f"{what} informer"))
            for what, inf in (("service", services), ("endpoint slice", slices), ("node", nodes)):
                log.info('"Waiting for caches to sync" controller="%s config"', what)
                await inf.synced.wait()
                log.info('"Caches are synced" controller="%s config"', what)
            self.health.updated()
            await self.sync_once()
            tasks.append(asyncio.create_task(self._sync_loop(), name="sync loop"))
            await asyncio.gather(*tasks)
            return 0
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            if self.proxier is not None:
                await self.proxier.close()
            for r in runners:
                await r.cleanup()
            await client.close()
