"""Masquerading for what leaves the cluster's Pod network, as kindnet's masquerade agent does: traffic from this
node's Pods to an address outside the cluster's pod CIDRs gets the node's address; Pod → Pod, across nodes too,
keeps the Pod's own address (the Kubernetes network model: no NAT between Pods).

The rules live in an nftables table of their own, `ip kindnet-masq` (and `ip6 kindnet-masq`), replaced atomically in
one `nft -f` transaction on every change, so nothing else's rules are touched. `nft` is a parameter so a test points
it at a namespace (`ip netns exec NS nft`).
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Sequence

__all__ = ["TABLE", "MasqError", "masq_ruleset", "sync_masq"]

#: The addon's nftables table (in both families).
TABLE = "kindnet-masq"


class MasqError(RuntimeError):
    """`nft` refused the ruleset; the message has its error."""


def masq_ruleset(pod_cidrs: Sequence[str], cluster_cidrs: Sequence[str]) -> str:
    """The `nft -f` script: per family, masquerade from this node's `pod_cidrs` unless to one of `cluster_cidrs`."""
    lines: list[str] = []
    for family, version in (("ip", 4), ("ip6", 6)):
        lines += [f"table {family} {TABLE} {{}}", f"delete table {family} {TABLE}"]
        own = [str(n) for n in map(ipaddress.ip_network, pod_cidrs) if n.version == version]
        keep = [str(n) for n in map(ipaddress.ip_network, cluster_cidrs) if n.version == version]
        if not own:
            continue
        saddr = f"{family} saddr {{ {', '.join(own)} }}"
        daddr = f" {family} daddr != {{ {', '.join(keep)} }}" if keep else ""
        lines += [
            f"table {family} {TABLE} {{",
            "  chain postrouting {",
            "    type nat hook postrouting priority srcnat; policy accept;",
            f"    {saddr}{daddr} masquerade",
            "  }",
            "}",
        ]
    return "\n".join(lines) + "\n"


def sync_masq(pod_cidrs: Sequence[str], cluster_cidrs: Sequence[str], nft: Sequence[str] = ("nft",)) -> None:
    """Install the ruleset (idempotent: the tables are replaced as a whole)."""
    res = subprocess.run(
        [*nft, "-f", "-"],
        input=masq_ruleset(pod_cidrs, cluster_cidrs),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if res.returncode != 0:
        raise MasqError(f"nft: {res.stderr.strip()}")
