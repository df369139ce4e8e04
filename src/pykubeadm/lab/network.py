"""The network-namespace lab's network (`lab up --topology netns`): kind's node network without Docker.

The lab owns a network namespace (`.lab/netns/_network/net`) holding a bridge, `lab0`, with the lab subnet's gateway
address (172.18.0.1/16, kind's Docker network). Each node is a directory `.lab/netns/<name>/` holding its own network
and UTS namespaces (`net`, `uts`; the hostname is the node's name), joined to the bridge by a veth pair (`vethN` on
the bridge, `eth0` in the node) and addressed from the subnet (172.18.1.N). The lab is offline: a node routes the Service
network (kubeadm's 10.96.0.0/12, which its kube-proxy translates) through the gateway, and nothing else leaves the
subnet (an `unreachable` default route, so that a lookup of the host's name servers fails at once instead of
waiting for a timeout). Those addresses exist only inside the lab's namespaces: the host's namespace gets nothing but the loopback listeners of
the lab's relay (lab.relay). Whatever runs as a node enters its directory's namespaces (util.namespaces).

Made with util-linux `unshare` (persistent namespaces on files) and iproute2's `ip -batch` run in the namespaces;
`remove` unmounts every namespace file, after which the kernel drops the namespaces, their veths, bridge and
nftables tables with the last process in them (the lab stops those first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.util.namespaces import entered, nsenter_prefix, unmount

__all__ = [
    "BRIDGE",
    "GATEWAY",
    "NODE_PREFIX",
    "SUBNET",
    "add_node",
    "create",
    "netns_root",
    "network_namespace",
    "node_namespaces",
    "remove",
    "unavailable_reason",
]

#: The lab subnet (kind's Docker network), its gateway on the bridge, and the first three octets of node addresses.
SUBNET = "172.18.0.0/16"
GATEWAY = "172.18.0.1"
_PREFIX_LEN = 16
NODE_PREFIX = "172.18.1."
#: The bridge in the lab's namespace.
BRIDGE = "lab0"
#: The lab's own namespace's directory name under netns_root (not a node name: those start with "lab-").
_NETWORK = "_network"
#: The programs the topology needs, with their Debian packages.
_TOOLS = {"unshare": "util-linux", "nsenter": "util-linux", "ip": "iproute2", "nft": "nftables"}


def netns_root(state: Path) -> Path:
    """Where the lab's namespace files live (inside its state dir)."""
    return state / "netns"


def network_namespace(state: Path) -> Path:
    """The directory of the lab's own namespace (the bridge's)."""
    return netns_root(state) / _NETWORK


def node_namespaces(state: Path, name: str) -> Path:
    """The directory of node `name`'s namespace files (`net`, `uts`)."""
    return netns_root(state) / name


def unavailable_reason() -> str | None:
    """Why this process cannot make the topology (not root, a missing program), or None."""
    if os.geteuid() != 0:
        return "not running as root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    for tool, package in _TOOLS.items():
        if shutil.which(tool) is None:
            return f'the "{tool}" command is missing (Debian package "{package}")'
    return None


def _run(cmd: list[str], script: str | None = None) -> None:
    res = subprocess.run(cmd, input=script, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise KubeadmError(f"lab network: '{' '.join(cmd)}' failed: {(res.stderr or res.stdout).strip()}")


def _new_namespaces(ns_dir: Path, hostname: str | None) -> None:
    """Namespaces mounted on files in `ns_dir`: a network namespace, and with `hostname` a UTS namespace set to it."""
    ns_dir.mkdir(parents=True, exist_ok=True)
    kinds = ["net"] + (["uts"] if hostname else [])
    for kind in kinds:
        (ns_dir / kind).touch()
    cmd = ["unshare", *(f"--{kind}={ns_dir / kind}" for kind in kinds)]
    _run(cmd + (["hostname", hostname] if hostname else ["true"]))


def create(state: Path) -> None:
    """The lab's namespace with its bridge at the gateway address; a KubeadmError saying why where the kernel (or a
    missing program) refuses."""
    remove(state)  # what a failed `lab up` may have left
    net = network_namespace(state)
    _new_namespaces(net, "lab-network")  # a UTS namespace too: entered as a node's are (util.namespaces)
    script = (
        "link set lo up\n"
        f"link add {BRIDGE} type bridge\n"
        f"addr add {GATEWAY}/{_PREFIX_LEN} dev {BRIDGE}\n"
        f"link set {BRIDGE} up\n"
    )
    _run(["nsenter", f"--net={net / 'net'}", "ip", "-batch", "-"], script)


def add_node(state: Path, name: str, address: str, veth: str) -> Path:
    """Node `name`'s namespaces (hostname `name`) on the bridge at `address` through veth `veth`; their directory.
    A node whose namespaces exist already (joined again after a reset) keeps them."""
    ns_dir = node_namespaces(state, name)
    if os.path.ismount(ns_dir / "net"):
        return ns_dir
    _new_namespaces(ns_dir, name)
    bridge_side = (
        f"link add {veth} type veth peer name eth0 netns {ns_dir / 'net'}\nlink set {veth} master {BRIDGE} up\n"
    )
    _run(["nsenter", f"--net={network_namespace(state) / 'net'}", "ip", "-batch", "-"], bridge_side)
    node_side = (
        "link set lo up\n"
        f"addr add {address}/{_PREFIX_LEN} dev eth0\n"
        "link set eth0 up\n"
        f"route add {c.DEFAULT_SERVICE_SUBNET} via {GATEWAY}\n"
        "route add unreachable default\n"
    )
    _run([*nsenter_prefix(ns_dir), "ip", "-batch", "-"], node_side)
    with entered(ns_dir):  # a node forwards (kubeadm's preflight wants it): NodePorts and Services to other nodes
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
    return ns_dir


def processes_inside(state: Path) -> list[int]:
    """The pids of processes in any of the lab's network namespaces (by the namespace's inode)."""
    inodes = set()
    for path in netns_root(state).glob("*/net"):
        if os.path.ismount(path):
            inodes.add(os.stat(path).st_ino)
    if not inodes:
        return []
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if os.stat(f"/proc/{entry.name}/ns/net").st_ino in inodes:
                    found.append(int(entry.name))
            except OSError:  # gone, or a kernel thread
                continue
    return found


def remove(state: Path) -> int:
    """Unmount every namespace file of the lab and remove their directories; how many were mounted."""
    root = netns_root(state)
    if not root.exists():
        return 0
    count = 0
    for path in sorted(root.glob("*/*")):
        while unmount(path):  # a file mounted twice (a namespace made again over a stale one) is unmounted twice
            count += 1
    shutil.rmtree(root, ignore_errors=True)
    return count
