"""Routes to the other nodes' pod CIDRs through their InternalIPs, in the node's network namespace.

`desired_routes` reads the Node objects: every other node's `spec.podCIDRs` (or `podCIDR`) via its InternalIP of the
same family. `sync_routes` makes the kernel's table match with iproute2: `ip route replace CIDR via IP proto 201`
for each, and `ip route del` for routes of ours (protocol 201, kindnet's marker here) no longer wanted (a node gone or
renumbered). iproute2 rather than a netlink library: the addon changes a handful of routes when nodes change, Debian
ships `ip` on every node (it is already a dependency of the node's tooling), and its JSON output (`ip -j`) is stable,
so one short subprocess per change costs nothing and adds no dependency. `ip` is a parameter so a test can point it
at a namespace (`ip -n NS`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ROUTE_PROTO", "RouteError", "desired_routes", "sync_routes"]

log = logging.getLogger(__name__)

#: The routing protocol number our routes carry (rtnetlink's user range), so ours are told from anyone else's.
ROUTE_PROTO = "201"


class RouteError(RuntimeError):
    """An `ip` command failed; the message has the command and its error."""


def _internal_ips(node: Mapping[str, Any]) -> list[str]:
    addrs = (node.get("status") or {}).get("addresses") or []
    return [str(a["address"]) for a in addrs if a.get("type") == "InternalIP" and a.get("address")]


def _pod_cidrs(node: Mapping[str, Any]) -> list[str]:
    spec = node.get("spec") or {}
    return [str(c) for c in spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])]


def desired_routes(nodes: Iterable[Mapping[str, Any]], self_name: str) -> dict[str, str]:
    """pod CIDR → gateway (the owning node's InternalIP of the same family), for every node but `self_name`."""
    out: dict[str, str] = {}
    for node in nodes:
        if (node.get("metadata") or {}).get("name") == self_name:
            continue
        ips = [ipaddress.ip_address(ip) for ip in _internal_ips(node)]
        for cidr in _pod_cidrs(node):
            try:
                net = ipaddress.ip_network(cidr)
            except ValueError:
                log.warning("ignoring the invalid podCIDR %r of node %s", cidr, node.get("metadata", {}).get("name"))
                continue
            via = next((ip for ip in ips if ip.version == net.version), None)
            if via is not None:
                out[str(net)] = str(via)
    return out


def _run(ip: Sequence[str], *args: str) -> str:
    res = subprocess.run([*ip, *args], capture_output=True, text=True, timeout=30, check=False)
    if res.returncode != 0:
        raise RouteError(f"{' '.join([*ip, *args])}: {res.stderr.strip()}")
    return res.stdout


def _ours(ip: Sequence[str], family: str) -> dict[str, str]:
    out = _run(ip, "-j", family, "route", "show", "proto", ROUTE_PROTO)
    return {str(r["dst"]): str(r.get("gateway", "")) for r in json.loads(out or "[]") if r.get("dst")}


def sync_routes(desired: Mapping[str, str], ip: Sequence[str] = ("ip",)) -> list[str]:
    """Make our routes exactly `desired`; the changes made, as `replace CIDR via IP` / `del CIDR` lines."""
    changes: list[str] = []
    for family in ("-4", "-6"):
        want = {cidr: via for cidr, via in desired.items() if (":" in cidr) == (family == "-6")}
        have = _ours(ip, family)
        for cidr, via in sorted(want.items()):
            if have.get(cidr) != via:
                _run(ip, family, "route", "replace", cidr, "via", via, "proto", ROUTE_PROTO)
                changes.append(f"replace {cidr} via {via}")
        for cidr in sorted(set(have) - set(want)):
            _run(ip, family, "route", "del", cidr, "proto", ROUTE_PROTO)
            changes.append(f"del {cidr}")
    return changes
