"""join phase `kubelet-start`: bootstrap-kubelet.conf and ca.crt from discovery, the kubelet files, start the kubelet.

kubeadm's order: discover the cluster (nothing is written before it succeeds), write the TLS-bootstrap kubeconfig and
the CA (only if absent), refuse a name already taken by a Ready Node, write config.yaml from the cluster's
kubelet-config and kubeadm-flags.env (--register-with-taints only for workers), then (re)start the kubelet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.join.data import JoinData

__all__ = ["PHASE"]

_FLAGS = (
    "cri-socket",
    "config",
    "discovery-file",
    "discovery-token",
    "discovery-token-ca-cert-hash",
    "discovery-token-unsafe-skip-ca-verification",
    "dry-run",
    "node-name",
    "patches",
    "tls-bootstrap-token",
    "token",
)


def _run(data: JoinData) -> None:
    # Imported when the phase runs: discovery and the cluster's client (pykubeadm.phases.join.cluster) are not needed
    # to declare the phase tree.
    from pykubeadm.api import features
    from pykubeadm.api.images import pause_image
    from pykubeadm.kubeconfig.config import write_kubeconfig
    from pykubeadm.phases.join.cluster import (
        cluster_configuration,
        kubelet_configuration,
        node_is_ready,
        tls_bootstrap_kubeconfig,
    )
    from pykubeadm.phases.kubelet import write_kubelet_files
    from pykubeadm.phases.kubeletservice import start_kubelet, stop_kubelet
    from pykubeadm.util.fs import write_file_atomic
    from pykubeadm.util.patches import PatchManager

    cfg = data.cfg
    reg = cfg.node_registration
    bootstrap = tls_bootstrap_kubeconfig(data)
    cluster = cluster_configuration(data)
    kubelet_cfg = kubelet_configuration(data)
    if node_is_ready(data, reg.name):
        raise KubeadmError(
            f'a Node with name "{reg.name}" and status "Ready" already exists in the cluster. You must delete the '
            "existing Node or change the name of this new joining Node"
        )
    layout = data.layout
    write_kubeconfig(layout.bootstrap_kubelet_kubeconfig, bootstrap)
    ca_path = layout.host(cfg.ca_cert_path)
    if not ca_path.exists():
        import base64

        ca_pem = base64.b64decode(bootstrap["clusters"][0]["cluster"]["certificate-authority-data"])
        write_file_atomic(ca_path, ca_pem, c.CERT_FILE_MODE)
    if not data.dry_run:
        stop_kubelet(data.real_layout)
    patches = PatchManager.load(data.patches_dir, out=data.out) if data.patches_dir else None
    write_kubelet_files(
        layout,
        kubelet_config=kubelet_cfg,
        cri_socket=reg.cri_socket,
        pause_image=pause_image(cluster),
        node_name=reg.name,
        kubelet_extra_args=reg.kubelet_extra_args,
        taints=reg.taints,
        register_taints=not data.control_plane,
        feature_gates={"NodeLocalCRISocket": features.enabled(cluster.feature_gates, "NodeLocalCRISocket")},
        patches=patches,
        out=data.out,
        shown_root=data.dry_run,
    )
    if data.dry_run:
        data.out("[dryrun] Would start the kubelet")
        return
    if str(data.real_layout.root) != "/":  # built-in mode: the node's kubelet is ours, of the cluster's version
        from pykubeadm.kubelet.package import ensure_installed

        ensure_installed(data.real_layout, cluster.kubernetes_version)
    data.out("[kubelet-start] Starting the kubelet")
    start_kubelet(data.real_layout)


PHASE: Phase[JoinData] = Phase(
    name="kubelet-start",
    short="Write kubelet settings, certificates and (re)start the kubelet",
    long="Write a file with KubeletConfiguration and an environment file with node specific kubelet settings, and "
    "then (re)start kubelet.",
    run=_run,
    inherit_flags=_FLAGS,
)
