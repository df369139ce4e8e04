"""init phase `kubelet-start`: write the kubelet's files (kubeadm-flags.env, config.yaml) and (re)start the kubelet.

Writing is `write_init_kubelet_files` (join has its own adapter over `phases.kubelet.write_kubelet_files`); the kubelet
is stopped before and started after, through systemd in host mode or as the built-in kubelet daemon otherwise
(`phases.kubeletservice`). In built-in mode a node without an installed kubelet gets the cluster's version's
(`kubelet.package`), as a real node has the kubelet package installed before init.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm.phases.init._common import patch_manager
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData
    from pykubeadm.phases.kubelet import KubeletFiles

__all__ = ["PHASE", "write_init_kubelet_files"]

_FLAGS = ("config", "cri-socket", "dry-run", "image-repository", "node-name", "patches")


def write_init_kubelet_files(data: InitData, hostname: str | None = None) -> KubeletFiles:
    """The files kubeadm init writes for the kubelet (no --register-with-taints: mark-control-plane sets taints)."""
    from pykubeadm.api import features
    from pykubeadm.api.images import pause_image
    from pykubeadm.phases.kubelet import write_kubelet_files

    cfg = data.cfg
    reg = cfg.init.node_registration
    return write_kubelet_files(
        data.layout,
        kubelet_config=cfg.kubelet,
        cri_socket=reg.cri_socket,
        pause_image=pause_image(cfg.cluster),
        node_name=reg.name,
        kubelet_extra_args=reg.kubelet_extra_args,
        taints=reg.taints,
        register_taints=False,
        feature_gates={"NodeLocalCRISocket": features.enabled(cfg.cluster.feature_gates, "NodeLocalCRISocket")},
        patches=patch_manager(data),
        hostname=hostname,
        out=data.out,
        shown_root=data.dry_run,
    )


def _run(data: InitData) -> None:
    from pykubeadm.phases.kubeletservice import start_kubelet, stop_kubelet

    if data.dry_run:
        data.out("[kubelet-start] Would stop the kubelet")
    else:
        stop_kubelet(data.real_layout)
    write_init_kubelet_files(data)
    if data.dry_run:
        data.out("[kubelet-start] Would start the kubelet")
        return
    if str(data.real_layout.root) != "/":  # built-in mode: the node's kubelet is ours, of the cluster's version
        from pykubeadm.kubelet.package import ensure_installed

        ensure_installed(data.real_layout, data.cfg.cluster.kubernetes_version)
    data.out("[kubelet-start] Starting the kubelet")
    start_kubelet(data.real_layout)


PHASE: Phase[InitData] = Phase(
    name="kubelet-start",
    short="Write kubelet settings and (re)start the kubelet",
    long="Write a file with KubeletConfiguration and an environment file with node specific kubelet settings, "
    "and then (re)start kubelet.",
    run=_run,
    inherit_flags=_FLAGS,
    example="  # Writes a dynamic environment file with kubelet flags from a InitConfiguration file.\n"
    "  kubeadm init phase kubelet-start --config config.yaml",
)
