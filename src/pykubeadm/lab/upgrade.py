"""`pykubeadm lab upgrade VERSION`: kubeadm's upgrade procedure ("Upgrading kubeadm clusters", "Upgrading Linux
nodes") over every node of a lab, one node at a time, each step printed.

The first control plane: `upgrade plan VERSION`, `upgrade apply VERSION -y`; every other control plane, then every
worker: `upgrade node`. After its kubeadm step each node is taken through the rest of the guide: drain it
(`kubectl drain NODE --ignore-daemonsets`, through the Eviction API so PodDisruptionBudgets hold: lab.drain), upgrade
its kubelet package to VERSION and restart the kubelet (kubelet.package; the lab waits until the Node reports the new
version and is Ready), uncordon it. `--skip-drain` leaves out drain and uncordon.

Each node passes its own `--patches`: the regenerated static Pod manifests and kubelet configuration need the node's
addresses again, as at init/join. A joined control plane's upgrade patches differ from its join patches in one index:
an upgraded etcd manifest has no `--initial-cluster-state` (the member already exists), so it gets the first member's
variant in `.lab/<name>-upgrade-patches`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.cluster import admin_kubeconfig, child_env, lab_nodes, pykubeadm_command
from pykubeadm.lab.drain import DrainOptions
from pykubeadm.lab.nodes import LabNode, write_ha_patches
from pykubeadm.lab.settings import lab_settings
from pykubeadm.layout import Layout

if TYPE_CHECKING:
    from lightkube import Client

__all__ = ["lab_upgrade"]

Out = Callable[[str], None]

#: How long a restarted kubelet has to report the new version with its Node Ready.
KUBELET_RESTART_TIMEOUT = 120.0


def _upgrade_patches(node: LabNode, stacked_etcd: bool) -> Path:
    """The patches directory `upgrade` gets on `node`."""
    if not node.control_plane or not (node.patches_dir / "kube-scheduler+json.yaml").exists():
        return node.patches_dir  # a worker, or a single-control-plane lab: its init/join patches hold
    upgrade = replace(node, name=f"{node.name}-upgrade")  # only for the patches_dir path
    write_ha_patches(upgrade, stacked_etcd=stacked_etcd, joining=False)  # the node's address, another directory
    return upgrade.patches_dir


def _run(node: LabNode, args: list[str], out: Out, show: bool = False) -> None:
    """`pykubeadm ARGS` on `node` (its output in the node's log; with `show`, printed too)."""
    out(f"[lab] {node.name}: pykubeadm {' '.join(args)}")
    res = subprocess.run(
        pykubeadm_command(node, *args), capture_output=True, text=True, env=child_env(), check=False, input=""
    )
    with open(node.log_file, "a") as log:
        log.write(res.stdout + res.stderr)
    if res.returncode != 0:
        raise KubeadmError(f"lab: upgrade of {node.name} failed: {(res.stdout + res.stderr)[-2000:]}")
    if show:
        for line in res.stdout.rstrip("\n").splitlines():
            out(f"    {line}" if line else "")


def _node_state(client: Client, name: str) -> tuple[str, bool]:
    """The Node's kubelet version and whether it is Ready ("", False when it cannot be read now)."""
    from lightkube.resources.core_v1 import Node

    try:
        node = client.get(Node, name)
    except Exception:  # the API server may be restarting with the kubelet's static Pods
        return "", False
    status = node.status
    version = status.nodeInfo.kubeletVersion if status and status.nodeInfo else ""
    ready = any(cond.type == "Ready" and cond.status == "True" for cond in (status.conditions if status else []) or [])
    return version or "", ready


def _upgrade_kubelet(client: Client, node: LabNode, version: str, out: Out) -> None:
    """The guide's "upgrade kubelet" and "restart the kubelet": the node's kubelet package to `version`, a restart, and
    the wait until the Node reports `version` and is Ready."""
    from pykubeadm.kubelet.package import install_kubelet, installed_version
    from pykubeadm.phases.kubeletservice import start_kubelet
    from pykubeadm.util.namespaces import entered

    layout = Layout(node.root)
    before = installed_version(layout) or c.KUBERNETES_VERSION
    out(f"[lab] {node.name}: upgrading the kubelet package {before} -> {version}")
    install_kubelet(layout, version)
    with entered(node.namespaces or None):  # a network-namespace lab's kubelet runs in its node's namespaces
        how = start_kubelet(layout)
    out(f"[lab] {node.name}: restarted the kubelet ({how})")
    deadline = time.monotonic() + KUBELET_RESTART_TIMEOUT
    while (state := _node_state(client, node.name)) != (version, True):
        if time.monotonic() > deadline:
            raise KubeadmError(
                f"lab: the kubelet of {node.name} did not report {version} with its Node Ready within "
                f"{KUBELET_RESTART_TIMEOUT:g}s (now: {state[0] or 'unknown'}, Ready={state[1]}); see "
                f"{layout.kubelet_log_file}"
            )
        time.sleep(0.5)
    out(f"[lab] {node.name}: Node Ready, kubelet {version}")


def _finish_node(client: Client, node: LabNode, version: str, out: Out, drain_opts: DrainOptions | None) -> None:
    """What the guide has an operator do on a node after its kubeadm step: drain, kubelet, uncordon."""
    from pykubeadm.lab.drain import drain, uncordon

    def say(line: str) -> None:
        out(f"[lab] {node.name}: {line}")

    if drain_opts is not None:
        out(f"[lab] {node.name}: kubectl drain {node.name} --ignore-daemonsets")
        drain(client, node.name, say, drain_opts)
    _upgrade_kubelet(client, node, version, out)
    if drain_opts is not None:
        out(f"[lab] {node.name}: kubectl uncordon {node.name}")
        uncordon(client, node.name, say)


def lab_upgrade(
    lab_dir: Path, version: str, out: Out = print, *, skip_drain: bool = False, drain_opts: DrainOptions | None = None
) -> None:
    """Upgrade every node of the lab to `version`, the first control plane first, workers last; each drained (with
    `drain_opts`, kubectl drain's defaults plus --ignore-daemonsets without) unless `skip_drain`."""
    from pykubeadm.client import sync_client

    drain_opts = None if skip_drain else drain_opts or DrainOptions()
    lab_dir = lab_dir.absolute()
    stacked = lab_settings(lab_dir).datastore == "etcd"
    nodes = [n for n in lab_nodes(lab_dir) if Layout(n.root).kubelet_kubeconfig.exists()]
    cps = [n for n in nodes if n.control_plane and Layout(n.root).manifest(c.KUBE_APISERVER).exists()]
    if not cps:
        raise KubeadmError(f"lab: no control plane to upgrade in {lab_dir}")
    first, *others = cps
    _run(first, ["upgrade", "plan", version], out, show=True)
    _run(first, ["upgrade", "apply", version, "-y", "--patches", str(_upgrade_patches(first, stacked))], out)
    with sync_client(admin_kubeconfig(lab_dir)) as client:
        _finish_node(client, first, version, out, drain_opts)
        for node in others:
            _run(node, ["upgrade", "node", "--patches", str(_upgrade_patches(node, stacked))], out)
            _finish_node(client, node, version, out, drain_opts)
        for node in nodes:
            if not node.control_plane:
                _run(node, ["upgrade", "node", "--patches", str(node.patches_dir)], out)
                _finish_node(client, node, version, out, drain_opts)
    out(f"[lab] every node is upgraded to {version}")
