"""Which topology a lab gets, and the network-namespace lab's parts around its nodes: called by lab.cluster.

`choose` decides between "netns" (each node its own network and UTS namespaces on the lab's bridge, lab.network) and
"loopback" (every node in the host's namespace on 127.0.10.x), and says in one line which and why. For a netns lab,
`make_nodes` puts nodes on the network, `publish` starts the relay that publishes the API server (and `--publish`
NodePorts) on the host's 127.0.0.1 (lab.relay), `write_host_kubeconfig` writes `<lab>/kubeconfig` for the host, and
`remove` takes all of it away again. The host kubeconfig is written for a loopback lab too (admin.conf as it is).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab import network, relay
from pykubeadm.lab.nodes import LabNode
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "HOST_KUBECONFIG",
    "LOOPBACK",
    "NETNS",
    "TOPOLOGIES",
    "choose",
    "host_kubeconfig",
    "make_nodes",
    "parse_publish",
    "publish",
    "remove",
    "write_host_kubeconfig",
]

Out = Callable[[str], None]
NETNS = "netns"
LOOPBACK = "loopback"
TOPOLOGIES = (NETNS, LOOPBACK)
#: The host's kubeconfig in the lab dir (kind's `kind get kubeconfig`).
HOST_KUBECONFIG = "kubeconfig"


def host_kubeconfig(lab_dir: Path) -> Path:
    return lab_dir / HOST_KUBECONFIG


def choose(asked: str | None, state: Path, out: Out) -> str:
    """The topology to build: `asked` (an error if it is netns and cannot be made), else netns where this process
    may make namespaces and the kernel lets it, else loopback. Makes the lab's network namespace for netns; says which
    and why in one line."""
    if asked is not None and asked not in TOPOLOGIES:
        raise KubeadmError(f'invalid --topology "{asked}": use netns or loopback')
    if asked == LOOPBACK:
        out("[lab] Topology: loopback (asked for): every node in the host's network namespace on a 127.0.10.x address")
        return LOOPBACK
    why = network.unavailable_reason()
    if why is None:
        try:
            network.create(state)
        except KubeadmError as err:
            network.remove(state)
            why = f"the kernel refused a network namespace ({err})"
    if why is not None:
        if asked == NETNS:
            raise KubeadmError(f"lab: --topology netns cannot be built: {why}; use --topology loopback")
        out(f"[lab] Topology: loopback, because {why}: every node in the host's network namespace on 127.0.10.x")
        return LOOPBACK
    out(
        f"[lab] Topology: netns ({'asked for' if asked else 'root, and the kernel allows it'}): each node in its own "
        f"network and UTS namespaces on the lab's bridge, {network.SUBNET}; the API server on the host's 127.0.0.1"
    )
    return NETNS


def make_nodes(state: Path, nodes: Iterable[LabNode]) -> None:
    """Put each netns node on the lab network (its namespaces, hostname, veth and address)."""
    for node in nodes:
        if node.netns:
            network.add_node(state, node.name, node.address, f"veth{node.index}")


def make_load_balancer(state: Path, name: str, address: str) -> str:
    """The load balancer node's namespaces on the lab network (kind's external load balancer container)."""
    return str(network.add_node(state, name, address, "veth-lb"))


def parse_publish(flags: Iterable[str]) -> list[tuple[int, int]]:
    """`--publish PORT[:NODEPORT]` values → (host port, NodePort); NODEPORT defaults to PORT."""
    out: list[tuple[int, int]] = []
    for flag in flags:
        host, sep, node = flag.partition(":")
        try:
            pair = (int(host), int(node if sep else host))
        except ValueError:
            pair = (-1, -1)
        if not (0 < pair[0] < 65536 and 0 < pair[1] < 65536):
            raise KubeadmError(f'invalid --publish "{flag}": use PORT[:NODEPORT], e.g. --publish 8080:30080')
        out.append(pair)
    return out


def publish(
    state: Path,
    api_server: str,
    node_ports: list[tuple[int, int]],
    node_address: str,
    services: Iterable[tuple[int, str, str]] = (),
) -> int:
    """Start the relay: the API server at `api_server` (HOST:PORT in the lab network) on a free port of the host's
    127.0.0.1, each (PORT, NODEPORT) of `node_ports` as 127.0.0.1:PORT → `node_address`:NODEPORT, and each (PORT,
    TARGET, WHAT) of `services` (the lab's registry) as 127.0.0.1:PORT → TARGET; the API server's host port."""
    mappings: list[relay.Mapping] = []
    try:
        api = relay.listen(0, "the API server")
        mappings.append((api, api_server))
        for host_port, node_port in node_ports:
            mappings.append(
                (relay.listen(host_port, f"--publish {host_port}:{node_port}"), f"{node_address}:{node_port}")
            )
        for host_port, target, what in services:
            mappings.append((relay.listen(host_port, what), target))
    except BaseException:
        for sock, _ in mappings:
            sock.close()
        raise
    port = int(api.getsockname()[1])
    relay.start(state, network.network_namespace(state), mappings)
    return port


def write_host_kubeconfig(lab_dir: Path, admin_conf: Path, api_server_port: int) -> Path:
    """`<lab>/kubeconfig`: the admin kubeconfig with the cluster's server at 127.0.0.1:`api_server_port` (a netns
    lab's relay; 0: the server left as it is)."""
    import yaml

    data = load_yaml(admin_conf.read_text())
    if api_server_port:
        for cluster in data.get("clusters") or []:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{api_server_port}"
    path = host_kubeconfig(lab_dir)
    write_file_atomic(path, yaml.safe_dump(data, sort_keys=False).encode(), c.PRIVATE_FILE_MODE)
    return path


def wait_published(port: int, timeout: float = 5.0) -> None:
    """Block until the relay accepts on 127.0.0.1:`port` (it listens before it runs: this checks it runs)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise KubeadmError(f"lab: nothing answers on 127.0.0.1:{port}") from None
            time.sleep(0.02)


def remove(state: Path, out: Out) -> None:
    """Stop the relay and take the lab network away (every namespace file unmounted)."""
    if relay.stop(state):
        out("[lab] stopped the relay on 127.0.0.1")
    left = network.processes_inside(state)
    if left:  # said, not hidden: nothing of a node may outlive it
        from pykubeadm.phases.reset.processes import stop_processes

        stop_processes(left, grace=5.0)
        out(f"[lab] stopped {len(left)} process(es) still inside the lab's namespaces: {left}")
    count = network.remove(state)
    if count:
        out(f"[lab] removed the lab network ({count} namespace(s))")
