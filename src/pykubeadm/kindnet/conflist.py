"""The CNI configuration list a node gets from its podCIDR(s), and writing it where the runtime reads it.

Debian's containernetworking-plugins, cniVersion 0.4.0: `bridge` (cni0; the Pods' gateway, hairpin so a Pod
reaches itself through a Service) with `host-local` IPAM on the node's podCIDR(s) and a default route through the
bridge, then `portmap` for hostPorts (the `portMappings` capability). The bridge does not masquerade (`ipMasq`
false): its rule would also rewrite Pod → Pod traffic to other nodes; the addon masquerades only what leaves the
cluster's pod CIDRs (kindnet.masq), as kindnet does. The file is written atomically (a temporary file renamed into place, as kindnet does)
and only when its content changes, so the runtime never reads half a file and a restarted addon changes nothing.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pykubeadm.util.fs import write_file_atomic

__all__ = ["CNI_VERSION", "CONFLIST_NAME", "NETWORK_NAME", "render_conflist", "write_conflist"]

#: The network's name (and so host-local's store directory and the CNI cache entries).
NETWORK_NAME = "kindnet"
#: The file the addon owns in the node's CNI configuration directory (kindnet's name).
CONFLIST_NAME = "10-kindnet.conflist"
CNI_VERSION = "0.4.0"
#: The bridge Pods are attached to, in the node's network namespace.
BRIDGE = "cni0"


def render_conflist(pod_cidrs: Sequence[str]) -> dict[str, Any]:
    """The conflist for a node with `pod_cidrs` (one range set per family). ValueError naming a bad CIDR."""
    ranges = []
    routes = []
    for cidr in pod_cidrs:
        try:
            net = ipaddress.ip_network(cidr, strict=True)
        except ValueError as e:
            raise ValueError(f"invalid podCIDR {cidr!r}: {e}") from e
        ranges.append([{"subnet": str(net)}])
        routes.append({"dst": "0.0.0.0/0" if net.version == 4 else "::/0"})
    if not ranges:
        raise ValueError("the node has no podCIDR")
    return {
        "cniVersion": CNI_VERSION,
        "name": NETWORK_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "ranges": ranges, "routes": routes},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def write_conflist(conf_dir: Path, doc: dict[str, Any]) -> bool:
    """Write `doc` as `conf_dir`/10-kindnet.conflist unless it already holds exactly that; True when written."""
    data = (json.dumps(doc, indent=2) + "\n").encode()
    path = conf_dir / CONFLIST_NAME
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    write_file_atomic(path, data, 0o644, 0o755)
    return True
