"""One node of a lab at a time (`pykubeadm lab stop|start|reset NODE`): power a node off and on, or reset it.

* stop: every process of the node — its kubelet, its static Pods' processes (apiserver, controller-manager,
  scheduler, etcd), its Pods — is killed at once (SIGKILL: a node that loses power does not shut down cleanly; its
  leases and its etcd membership stay until the cluster notices). Processes are found by the node's root dir
  (phases.reset.processes: session leaders and environments naming the root; plus Pod sandboxes whose session
  leader is gone, which a killed kubelet leaves behind), never by name. A node with its own containerd loses it too,
  with its shims and every container under them (lab.runtime.power_off).
* start: the node's containerd (if it has one) and then its kubelet start again (as after a reboot); the kubelet
  starts the node's static Pods from their manifests.
* reset: `pykubeadm reset -f` on the node (a control plane's reset removes its stacked etcd member first; its Pods in
  a containerd of its own go through CRI), its containerd stopped, then the lab's part of kubeadm's clean-up guide:
  its server leaves the load balancer and its Node object is deleted, so the node can join again under the same
  name (`pykubeadm lab join --node NAME`, which starts its containerd again first).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pykubeadm.errors import KubeadmError
from pykubeadm.lab.cluster import (
    admin_kubeconfig,
    child_env,
    find_node,
    pykubeadm_command,
    start_runtime,
    update_load_balancer,
)
from pykubeadm.lab.nodes import LabNode
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import kubelet_pid, start_kubelet
from pykubeadm.phases.reset.processes import node_processes
from pykubeadm.util.namespaces import entered

__all__ = ["lab_reset", "lab_start", "lab_stop"]

Out = Callable[[str], None]


def lab_stop(lab_dir: Path, name: str, out: Out = print, timeout: float = 20.0) -> list[int]:
    """Kill every process of node `name`; returns their pids."""
    node = find_node(lab_dir.absolute(), name)
    killed: list[int] = []
    if node.containerd:  # its containerd, the shims and the containers under them, before they are orphaned
        from pykubeadm.lab.runtime import power_off

        killed += power_off(node, out)
    deadline = time.monotonic() + timeout
    while True:
        # a dying kubelet may still start a container: look again until none
        pids = node_processes(node.root)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed += [p for p in pids if p not in killed]
        if time.monotonic() > deadline:
            raise KubeadmError(f"lab: processes of {name} still running after {timeout:g}s: {pids}")
        time.sleep(0.1)
    Layout(node.root).kubelet_pid_file.unlink(missing_ok=True)
    out(f"[lab] stopped {name}: killed {len(killed)} process(es)")
    return killed


def lab_start(lab_dir: Path, name: str, out: Out = print) -> str:
    """Start node `name`'s kubelet again (it restarts the node's static Pods)."""
    node = find_node(lab_dir.absolute(), name)
    layout = Layout(node.root)
    if not layout.kubelet_kubeconfig.exists():
        raise KubeadmError(f"lab: {name} has no kubelet.conf (reset?): join it with 'pykubeadm lab join --node {name}'")
    if kubelet_pid(layout) is not None:
        raise KubeadmError(f"lab: the kubelet of {name} is already running")
    start_runtime(lab_dir.absolute(), [node])  # as after a reboot: the runtime service before the kubelet
    with entered(node.namespaces or None):  # the kubelet, and all it starts, run in the node's namespaces
        how = start_kubelet(layout)
    out(f"[lab] started the kubelet of {name} ({how})")
    return how


def _delete_node_object(lab_dir: Path, node: LabNode) -> None:
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.core_v1 import Node

    from pykubeadm.client import sync_client

    with sync_client(admin_kubeconfig(lab_dir)) as client:
        try:
            client.delete(Node, node.name)
        except ApiError as err:
            if err.status.code != 404:
                raise


def lab_reset(lab_dir: Path, name: str, out: Out = print) -> None:
    """`reset -f` node `name`, take it out of the load balancer and delete its Node object."""
    lab_dir = lab_dir.absolute()
    node = find_node(lab_dir, name)
    res = subprocess.run(
        pykubeadm_command(node, "reset", "-f"), capture_output=True, text=True, env=child_env(), check=False
    )
    if res.returncode != 0:
        raise KubeadmError(f"lab: 'pykubeadm reset -f' on {name} failed: {(res.stdout + res.stderr)[-1500:]}")
    for line in res.stdout.splitlines():
        if "etcd" in line:
            out(line)
    if node.containerd:  # reset removed its Pods through CRI; the lab takes its containerd away with them
        from pykubeadm.lab.runtime import stop

        stop(node, out)
    if node.control_plane:
        update_load_balancer(lab_dir)
        out(f"[lab] {name} left the load balancer")
    _delete_node_object(lab_dir, node)
    out(f"[lab] reset {name}; join it again with 'pykubeadm lab join --dir {lab_dir} --node {name}'")
