"""`pykubeadm lab upgrade VERSION`: kubeadm's upgrade procedure over every node of a lab, one node at a time.

`upgrade apply VERSION -y` on the first control plane, then `upgrade node` on every other control plane, then on
every worker — what kubeadm's "Upgrading kubeadm clusters" guide has an operator run. Each node passes its own
`--patches`: the regenerated static Pod manifests and kubelet configuration need the node's addresses again, as at
init/join. A joined control plane's upgrade patches differ from its join patches in one index: an upgraded etcd
manifest has no `--initial-cluster-state` (the member already exists), so it gets the first member's variant in
`.lab/<name>-upgrade-patches`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.cluster import child_env, lab_nodes, pykubeadm_command
from pykubeadm.lab.nodes import LabNode, write_ha_patches
from pykubeadm.lab.settings import lab_settings
from pykubeadm.layout import Layout

__all__ = ["lab_upgrade"]

Out = Callable[[str], None]


def _upgrade_patches(node: LabNode, stacked_etcd: bool) -> Path:
    """The patches directory `upgrade` gets on `node`."""
    if not node.control_plane or not (node.patches_dir / "kube-scheduler+json.yaml").exists():
        return node.patches_dir  # a worker, or a single-control-plane lab: its init/join patches hold
    upgrade = replace(node, name=f"{node.name}-upgrade")  # only for the patches_dir path
    write_ha_patches(upgrade, stacked_etcd=stacked_etcd, joining=False)  # the node's address, another directory
    return upgrade.patches_dir


def _run(node: LabNode, args: list[str], out: Out) -> None:
    out(f"[lab] {node.name}: pykubeadm {' '.join(args)}")
    res = subprocess.run(
        pykubeadm_command(node, *args), capture_output=True, text=True, env=child_env(), check=False, input=""
    )
    with open(node.log_file, "a") as log:
        log.write(res.stdout + res.stderr)
    if res.returncode != 0:
        raise KubeadmError(f"lab: upgrade of {node.name} failed: {(res.stdout + res.stderr)[-2000:]}")


def lab_upgrade(lab_dir: Path, version: str, out: Out = print) -> None:
    """Upgrade every node of the lab to `version`, the first control plane first, workers last."""
    lab_dir = lab_dir.absolute()
    stacked = lab_settings(lab_dir).datastore == "etcd"
    nodes = [n for n in lab_nodes(lab_dir) if Layout(n.root).kubelet_kubeconfig.exists()]
    cps = [n for n in nodes if n.control_plane and Layout(n.root).manifest(c.KUBE_APISERVER).exists()]
    if not cps:
        raise KubeadmError(f"lab: no control plane to upgrade in {lab_dir}")
    first, *others = cps
    _run(first, ["upgrade", "apply", version, "-y", "--patches", str(_upgrade_patches(first, stacked))], out)
    for node in others:
        _run(node, ["upgrade", "node", "--patches", str(_upgrade_patches(node, stacked))], out)
    for node in nodes:
        if not node.control_plane:
            _run(node, ["upgrade", "node", "--patches", str(node.patches_dir)], out)
    out(f"[lab] every node is upgraded to {version}")
