"""One node's network agent: follow the Node objects, keep the node's CNI conflist and the routes to the other nodes.

The Nodes are listed and watched (client.Informer); every change wakes one sync (changes arriving meanwhile fold
into the next): the node's own podCIDRs → its conflist first (written only when it changes; nothing while the node
has no podCIDR yet, so the node stays NotReady as it should: the conflist is what makes it Ready, as kindnetd writes
it before it syncs routes), then the other nodes' podCIDRs → routes, then its masquerading (kindnet.masq). Most Node
changes are status heartbeats that change none of that: a sync whose inputs (own podCIDRs, routes, cluster CIDRs) are
those of the last successful one is skipped, so the program's 100m CPU limit is spent on changes; every `resync`
seconds a sync runs regardless (a route someone removed comes back). A failed sync is retried after `retry` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.core_v1 import Node

from pykubeadm.client import Informer
from pykubeadm.kindnet.conflist import CONFLIST_NAME, render_conflist, write_conflist
from pykubeadm.kindnet.masq import MasqError, sync_masq
from pykubeadm.kindnet.routes import RouteError, desired_routes, sync_routes

__all__ = ["NetworkAgent", "sync_inputs", "sync_node"]

log = logging.getLogger("kindnetd")


def _pod_cidrs(node: Mapping[str, Any] | None) -> list[str]:
    spec = (node or {}).get("spec") or {}
    return [str(c) for c in spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])]


def sync_node(
    nodes: Iterable[Mapping[str, Any]],
    name: str,
    conf_dir: Path,
    *,
    cluster_cidrs: Sequence[str] = (),
    ip: Sequence[str] = ("ip",),
    nft: Sequence[str] = ("nft",),
) -> bool:
    """One pass for node `name`: routes to the other nodes' Pods, masquerading of what leaves the cluster's pod
    CIDRs (`cluster_cidrs`, default every node's podCIDRs), then the conflist. False when the node has no podCIDR."""
    nodes = list(nodes)
    cidrs, routes, cluster = sync_inputs(nodes, name, cluster_cidrs)
    if cidrs and write_conflist(conf_dir, render_conflist(cidrs)):
        log.info("wrote %s for pod CIDRs %s", conf_dir / CONFLIST_NAME, ", ".join(cidrs))
    for change in sync_routes(routes, ip):
        log.info("route %s", change)
    if not cidrs:
        return False
    sync_masq(cidrs, cluster, nft)
    return True


def sync_inputs(
    nodes: Sequence[Mapping[str, Any]], name: str, cluster_cidrs: Sequence[str] = ()
) -> tuple[list[str], dict[str, str], list[str]]:
    """What a sync of node `name` makes from the Nodes: its podCIDRs, the routes to the other nodes' Pods, and the
    cluster's pod CIDRs (`cluster_cidrs`, default every node's podCIDRs)."""
    own = next((n for n in nodes if (n.get("metadata") or {}).get("name") == name), None)
    cluster = list(cluster_cidrs) or sorted({c for n in nodes for c in _pod_cidrs(n)})
    return _pod_cidrs(own), desired_routes(nodes, name), cluster


class NetworkAgent:
    """kindnetd's loop for node `name`, writing into `conf_dir`; `cluster_cidrs` is the cluster's pod subnet."""

    def __init__(
        self,
        client: AsyncClient,
        name: str,
        conf_dir: Path,
        *,
        cluster_cidrs: Sequence[str] = (),
        retry: float = 5.0,
        resync: float = 60.0,
    ):
        self.client = client
        self.cluster_cidrs = list(cluster_cidrs)
        self.name = name
        self.conf_dir = conf_dir
        self.retry = retry
        self.resync = resync
        self._synced: tuple[Any, ...] | None = None  # the inputs of the last successful sync
        self.informer: Informer[Node] = Informer(client, Node)
        self._wake = asyncio.Event()
        self.informer.add_handler(lambda *_: self._wake.set())

    def _resync_now(self) -> None:
        self._synced = None
        self._wake.set()
        asyncio.get_running_loop().call_later(self.resync, self._resync_now)

    async def run(self) -> None:
        watch = asyncio.ensure_future(self.informer.run())
        asyncio.get_running_loop().call_later(self.resync, self._resync_now)
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                nodes = [n.to_dict() for n in self.informer.items()]
                cidrs, routes, cluster = sync_inputs(nodes, self.name, self.cluster_cidrs)
                inputs = (tuple(cidrs), tuple(sorted(routes.items())), tuple(cluster))
                if inputs == self._synced:
                    continue  # a status heartbeat: nothing of the network changed
                try:
                    await asyncio.to_thread(
                        sync_node, nodes, self.name, self.conf_dir, cluster_cidrs=self.cluster_cidrs
                    )
                    self._synced = inputs
                except (RouteError, MasqError, OSError, ValueError) as e:
                    log.error("syncing the network of node %s (retrying in %.0fs): %s", self.name, self.retry, e)
                    asyncio.get_running_loop().call_later(self.retry, self._wake.set)
        finally:
            watch.cancel()
