"""One node's network agent: follow the Node objects, keep the node's CNI conflist and the routes to the other nodes.

The Nodes are listed and watched (client.Informer); every change wakes one sync (changes arriving meanwhile fold
into the next): the node's own podCIDRs → its conflist (written only when it changes; nothing while the node has no
podCIDR yet, so the node stays NotReady as it should) and its masquerading (kindnet.masq), the other nodes'
podCIDRs → routes. A failed sync is retried after `retry` seconds.
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

__all__ = ["NetworkAgent", "sync_node"]

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
    own = next((n for n in nodes if (n.get("metadata") or {}).get("name") == name), None)
    cidrs = _pod_cidrs(own)
    for change in sync_routes(desired_routes(nodes, name), ip):
        log.info("route %s", change)
    if not cidrs:
        return False
    sync_masq(cidrs, list(cluster_cidrs) or sorted({c for n in nodes for c in _pod_cidrs(n)}), nft)
    if write_conflist(conf_dir, render_conflist(cidrs)):
        log.info("wrote %s for pod CIDRs %s", conf_dir / CONFLIST_NAME, ", ".join(cidrs))
    return True


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
    ):
        self.client = client
        self.cluster_cidrs = list(cluster_cidrs)
        self.name = name
        self.conf_dir = conf_dir
        self.retry = retry
        self.informer: Informer[Node] = Informer(client, Node)
        self._wake = asyncio.Event()
        self.informer.add_handler(lambda *_: self._wake.set())

    async def run(self) -> None:
        watch = asyncio.ensure_future(self.informer.run())
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                nodes = [n.to_dict() for n in self.informer.items()]
                try:
                    await asyncio.to_thread(
                        sync_node, nodes, self.name, self.conf_dir, cluster_cidrs=self.cluster_cidrs
                    )
                except (RouteError, MasqError, OSError, ValueError) as e:
                    log.error("syncing the network of node %s (retrying in %.0fs): %s", self.name, self.retry, e)
                    asyncio.get_running_loop().call_later(self.retry, self._wake.set)
        finally:
            watch.cancel()
