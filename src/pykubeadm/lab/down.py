"""`pykubeadm lab down`: reset every node of a lab at the same time, stop the lab's own processes, empty the lab dir.

Every node runs `pykubeadm reset -f` (the command a user would type), all of them in parallel, forked from this
process with reset's modules imported once (lab.forkcli; a new interpreter each when this process cannot fork). The
cluster goes as a whole, so no stacked etcd member is taken out of it first (`--skip-phases remove-etcd-member`: its
data goes with the lab dir); each reset stops its node's processes at once, SIGKILL after reset's short SIGTERM window
(phases.reset.processes.RESET_GRACE), whatever a Pod's terminationGracePeriodSeconds says. Then what still runs for a
node root is stopped the same way and said (a Pod started while its node was being reset), Pod network namespaces
still pinned are unmounted, what is left of a node's containerd (its daemon, shims, mounts: lab.runtime; each node's
reset removed its Pods through CRI) is stopped, and so are the lab's kubelet zygote, registry, load balancer and
external etcd, a network-namespace lab's relay and namespaces removed (each
node's reset runs in its namespaces), and the lab dir is emptied.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pykubeadm.lab import forkcli, topology
from pykubeadm.lab import registry as lab_registry
from pykubeadm.lab import runtime as lab_runtime
from pykubeadm.lab.cluster import lab_nodes, zygote_socket
from pykubeadm.lab.nodes import LabNode
from pykubeadm.lab.settings import lab_settings, load_balancer, state_dir

__all__ = ["RESET_ARGS", "RESET_MODULES", "lab_down"]

Out = Callable[[str], None]

#: What each node runs.
RESET_ARGS = ("reset", "-f", "--skip-phases", "remove-etcd-member")
#: What `reset` imports (its command and phases, the process finder): imported here once, before the forks.
RESET_MODULES = (
    "pykubeadm.cli.main",
    "pykubeadm.cli.reset",
    "pykubeadm.phases.reset.cleanup_node",
    "pykubeadm.kubelet.builtin.runtime",
)


def _reset_all(nodes: list[LabNode], out: Out) -> None:
    """`reset` every node at once; each is reported when it has ended (a failure with the end of its output)."""
    forkcli.preload(RESET_MODULES)
    started = []
    for node in nodes:
        node.log_file.parent.mkdir(parents=True, exist_ok=True)
        offset = node.log_file.stat().st_size if node.log_file.exists() else 0
        started.append(
            (node, offset, forkcli.start(node.root, list(RESET_ARGS), node.log_file, namespaces=node.namespaces))
        )
    for node, offset, child in started:
        if child.wait() == 0:
            out(f"[lab] reset {node.name}")
            continue
        with node.log_file.open("rb") as f:
            f.seek(offset)
            tail = f.read().decode(errors="replace")[-500:]
        out(f"[lab] reset {node.name} failed: {tail}")


def _stop_leftovers(lab_dir: Path, nodes: list[LabNode], out: Out) -> None:
    from pykubeadm.phases.reset.processes import RESET_GRACE, nodes_processes, stop_processes

    roots = {n.root: n.name for n in nodes}
    for kubelet_dir in sorted(lab_dir.glob("*/var/lib/kubelet")):  # a node joined into the lab dir by hand too
        roots.setdefault(kubelet_dir.parents[2], kubelet_dir.parents[2].name)
    left = nodes_processes([root for root in roots if root.exists()])
    if any(left.values()):
        stop_processes([pid for pids in left.values() for pid in pids], grace=RESET_GRACE)
    for root, pids in left.items():
        if pids:
            out(f"[lab] {roots[root]}: stopped {len(pids)} process(es) still running after the resets: {pids}")


def _unpin_pod_networks(nodes: list[LabNode], out: Out) -> None:
    """Pod network namespaces a reset left pinned under a node's kubelet dir: their files cannot be removed else."""
    from pykubeadm.kubelet.builtin.podnetwork import unpin_all
    from pykubeadm.layout import Layout

    for node in nodes:
        unpinned = unpin_all(Layout(node.root)) if node.root.exists() else []
        if unpinned:
            out(f"[lab] {node.name}: unpinned {len(unpinned)} Pod network namespace(s)")


def lab_down(lab_dir: Path, out: Out = print) -> None:
    """Reset every node in parallel, stop what still runs for a node root, the zygote, the load balancer and the
    external etcd, then empty the lab dir."""
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    _reset_all([n for n in nodes if n.root.exists()], out)
    _stop_leftovers(lab_dir, nodes, out)
    for node in nodes:  # a containerd lab: what its reset left of each node's containerd (shims, mounts)
        if node.containerd:
            lab_runtime.stop(node, out)
    lab_runtime.remove_socket_links(lab_dir)
    _unpin_pod_networks(nodes, out)
    from pykubeadm.kubelet.builtin import zygote

    zygote.stop(zygote_socket(lab_dir))
    lb = load_balancer(lab_dir)
    if lb is not None and lb.stop():
        out("[lab] stopped the load balancer")
    if lab_settings(lab_dir).datastore == "external-etcd":
        from pykubeadm.lab.externaletcd import ExternalEtcd

        ExternalEtcd(lab_dir, lab_settings(lab_dir).prefix).stop(out)
    if lab_registry.stop(state_dir(lab_dir)):
        out("[lab] stopped the registry")
    topology.remove(state_dir(lab_dir), out)  # a network-namespace lab's relay and namespaces
    if lab_dir.exists():
        for child in lab_dir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
    out(f"[lab] {lab_dir} is empty")
