"""The node's ports: Pods sharing the node's network hold their container ports on the node's address (a Pod with a
network namespace of its own holds only its hostPorts there).

Owned by `pods.PodManager` (one `NodePorts` per node), used by the pod worker's containers. Two checks:
- admission, as the kubelet's NodePorts predicate: a Pod asking for a `hostPort` another admitted Pod on this node
  already asks for is rejected (phase Failed, reason NodePorts, "Predicate NodePorts failed: ...");
- at container start (our runtime's part): a `containerPort` held by a running container of another Pod keeps the
  container Waiting (CreateContainerError) with a message naming the port and that Pod, until the port is free.
  Replicas of one controller (same ownerReference, same container) may share their ports on a node: the built-in
  programs they run bind with SO_REUSEPORT (CoreDNS), as the one program they are.
A container claims its ports when it starts and releases them when its process ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NODE_PORTS_MESSAGE", "NodePorts", "PortOwner", "container_ports", "host_port_conflict"]

#: The kubelet's admission failure for a hostPort conflict (predicate NodePorts).
NODE_PORTS_MESSAGE = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"

Port = tuple[str, int]  # (protocol, port)


@dataclass(frozen=True)
class PortOwner:
    """Who holds a port: the Pod's uid and `namespace/name`, and the container."""

    uid: str
    pod: str
    container: str
    #: The Pod's controller (ownerReference uid): its replicas run one program, which shares its ports between them
    #: on one node (SO_REUSEPORT, as the built-in CoreDNS does), so they do not conflict with each other.
    controller: str = ""


def container_ports(container: Mapping[str, Any], *, host_only: bool = False) -> list[Port]:
    """A container's ports as (protocol, port): hostPort where set (that is what the node's address gets), else
    containerPort, unless `host_only` (a Pod in a network namespace of its own: only its hostPorts are the node's)."""
    out: list[Port] = []
    for p in container.get("ports") or []:
        port = p.get("hostPort") or (None if host_only else p.get("containerPort"))
        if port:
            out.append((str(p.get("protocol") or "TCP"), int(port)))
    return out


def _host_ports(pod: Mapping[str, Any]) -> set[Port]:
    spec = pod.get("spec") or {}
    out: set[Port] = set()
    for ct in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for p in ct.get("ports") or []:
            if p.get("hostPort"):
                out.add((str(p.get("protocol") or "TCP"), int(p["hostPort"])))
    return out


def host_port_conflict(pod: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> str | None:
    """The NodePorts admission check: a message naming the port and the Pod already asking for it, or None."""
    wanted = _host_ports(pod)
    if not wanted:
        return None
    for other in others:
        taken = wanted & _host_ports(other)
        if taken:
            proto, port = sorted(taken)[0]
            meta = other.get("metadata") or {}
            return (
                f"{NODE_PORTS_MESSAGE} (hostPort {port}/{proto} is used by pod "
                f"{meta.get('namespace', 'default')}/{meta.get('name', '')})"
            )
    return None


def _replicas(a: PortOwner, b: PortOwner) -> bool:
    return bool(a.controller) and a.controller == b.controller and a.container == b.container


class NodePorts:
    """The ports claimed by running containers of this node's Pods (several holders only when they are replicas)."""

    def __init__(self) -> None:
        self._owners: dict[Port, list[PortOwner]] = {}

    def claim(self, owner: PortOwner, ports: Iterable[Port]) -> str | None:
        """Claim every port for `owner`, or none: a message naming the first port another Pod holds."""
        wanted = list(ports)
        for proto, port in wanted:
            for held in self._owners.get((proto, port), ()):
                if held.uid != owner.uid and not _replicas(held, owner):
                    return (
                        f"port {port}/{proto} on the node's address is already used by container "
                        f'"{held.container}" of pod {held.pod}'
                    )
        for key in wanted:
            holders = self._owners.setdefault(key, [])
            if owner not in holders:
                holders.append(owner)
        return None

    def _drop(self, keep: Callable[[PortOwner], bool]) -> None:
        for key in list(self._owners):
            self._owners[key] = [o for o in self._owners[key] if keep(o)]
            if not self._owners[key]:
                del self._owners[key]

    def release(self, owner: PortOwner) -> None:
        self._drop(lambda o: o != owner)

    def release_pod(self, uid: str) -> None:
        self._drop(lambda o: o.uid != uid)
