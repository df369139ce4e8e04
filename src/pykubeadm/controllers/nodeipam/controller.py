"""The nodeipam controller (range allocator): gives each Node a podCIDR from --cluster-cidr when --allocate-node-cidrs.

Each cluster CIDR (comma-separated, at most one per IP family) is cut into blocks of --node-cidr-mask-size (default /24
for IPv4, /64 for IPv6); a Node without `spec.podCIDRs` gets the lowest free block of every cluster CIDR. Blocks already
recorded on Nodes are marked used when the informer first lists them. A Node given its blocks is remembered until the
informer shows them (or the Node is deleted): an event for it that arrives before the informer has seen the patch
(the kubelet posting status) must not give it a second set, as the real allocator keeps the nodes it is processing.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from lightkube.resources.core_v1 import Node

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.runtime import Controller, PermanentError, TemporaryError

__all__ = ["CIDRSet", "NodeIPAMController"]

log = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _subnet_of(block: Network, cidr: Network) -> bool:
    """`block` lies inside `cidr` (never across IP families)."""
    if isinstance(block, ipaddress.IPv4Network) and isinstance(cidr, ipaddress.IPv4Network):
        return block.subnet_of(cidr)
    if isinstance(block, ipaddress.IPv6Network) and isinstance(cidr, ipaddress.IPv6Network):
        return block.subnet_of(cidr)
    return False


class CIDRSet:
    """Blocks of one cluster CIDR: allocate the lowest free block, mark or release used ones."""

    def __init__(self, cluster_cidr: Network, mask_size: int):
        if mask_size < cluster_cidr.prefixlen or mask_size > cluster_cidr.max_prefixlen:
            raise ValueError(f"node CIDR mask size {mask_size} does not fit cluster CIDR {cluster_cidr}")
        self.cidr = cluster_cidr
        self.mask_size = mask_size
        self.size = 1 << (mask_size - cluster_cidr.prefixlen)
        self._block = 1 << (cluster_cidr.max_prefixlen - mask_size)
        self._used: set[int] = set()

    def _index(self, block: Network) -> int | None:
        if block.prefixlen != self.mask_size or not _subnet_of(block, self.cidr):
            return None
        return (int(block.network_address) - int(self.cidr.network_address)) // self._block

    def occupy(self, block: Network) -> bool:
        idx = self._index(block)
        if idx is None:
            return False
        self._used.add(idx)
        return True

    def occupy_overlapping(self, network: Network) -> None:
        """Mark every block overlapping `network` used (the service range must never be handed to Pods)."""
        if network.version != self.cidr.version or not network.overlaps(self.cidr):
            return
        lo = max(int(network.network_address), int(self.cidr.network_address))
        hi = min(int(network.broadcast_address), int(self.cidr.broadcast_address))
        base = int(self.cidr.network_address)
        for idx in range((lo - base) // self._block, (hi - base) // self._block + 1):
            self._used.add(idx)

    def release(self, block: Network) -> None:
        idx = self._index(block)
        if idx is not None:
            self._used.discard(idx)

    def allocate_next(self) -> Network:
        for idx in range(self.size):
            if idx not in self._used:
                self._used.add(idx)
                base = int(self.cidr.network_address) + idx * self._block
                return ipaddress.ip_network((base, self.mask_size))
        raise PermanentError(f"CIDR allocation failed; there are no remaining CIDRs left to allocate in {self.cidr}")


def parse_cluster_cidrs(cluster_cidr: str, mask_v4: int | None, mask_v6: int | None) -> list[CIDRSet]:
    sets = []
    for part in filter(None, (p.strip() for p in cluster_cidr.split(","))):
        net = ipaddress.ip_network(part, strict=False)
        if net.version == 4:
            mask = mask_v4 or c.DEFAULT_NODE_CIDR_MASK_SIZE_V4
        else:
            mask = mask_v6 or c.DEFAULT_NODE_CIDR_MASK_SIZE_V6
        sets.append(CIDRSet(net, mask))
    return sets


def _node_cidrs(node: Any) -> list[str]:
    spec = node.spec
    if spec is None:
        return []
    return list(spec.podCIDRs or ([spec.podCIDR] if spec.podCIDR else []))


class NodeIPAMController(Controller):
    name = "nodeipam"
    service_account = "node-controller"

    def setup(self) -> None:
        opts = self.ctx.options
        self.enabled = bool(opts is not None and opts.allocate_node_cidrs and opts.cluster_cidr)
        self.cidr_sets: list[CIDRSet] = []
        if self.enabled:
            self.cidr_sets = parse_cluster_cidrs(
                opts.cluster_cidr,
                opts.node_cidr_mask_size_ipv4 or opts.node_cidr_mask_size,
                opts.node_cidr_mask_size_ipv6 or opts.node_cidr_mask_size,
            )
            for part in filter(None, (p.strip() for p in (opts.service_cluster_ip_range or "").split(","))):
                for cidr_set in self.cidr_sets:
                    cidr_set.occupy_overlapping(ipaddress.ip_network(part, strict=False))
        #: Nodes given blocks whose patch the informer may not show yet → the blocks.
        self.assigned: dict[str, list[str]] = {}
        self.nodes = self.watch(Node, self._on_node)

    def _occupy(self, cidrs: Iterable[str]) -> None:
        for cidr in cidrs:
            net = ipaddress.ip_network(cidr, strict=False)
            for cidr_set in self.cidr_sets:
                if cidr_set.occupy(net):
                    break

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        if not self.enabled:
            return
        cidrs = _node_cidrs(obj)
        if event == "DELETED":
            assigned = self.assigned.pop(obj.metadata.name, [])
            for cidr in cidrs or assigned:
                for cidr_set in self.cidr_sets:
                    cidr_set.release(ipaddress.ip_network(cidr, strict=False))
            return
        if cidrs:
            self.assigned.pop(obj.metadata.name, None)
            self._occupy(cidrs)
        elif obj.metadata.name not in self.assigned:
            self.queue.add(obj.metadata.name)

    async def sync(self, key: Any) -> None:
        node = self.nodes.get(key)
        if node is None or _node_cidrs(node) or key in self.assigned:
            return
        blocks = [cidr_set.allocate_next() for cidr_set in self.cidr_sets]
        cidrs = [str(b) for b in blocks]
        patch = {"spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs}}
        try:
            await self.client.patch(Node, key, patch)
            self.assigned[key] = cidrs
            log.info("set podCIDRs %s on node %s", cidrs, key)
        except ApiError as err:
            for block, cidr_set in zip(blocks, self.cidr_sets, strict=True):
                cidr_set.release(block)
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError(f"conflict setting podCIDR of {key}") from err
            raise
