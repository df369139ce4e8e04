"""init phase `kubelet-finalize`: point kubelet.conf at the rotating kubelet-client-current.pem (§3.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.workflow import Phase, all_phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE"]


def run_enable_client_cert_rotation(data: InitData) -> None:
    from pykubeadm.kubeconfig.config import current_user, load_kubeconfig, write_kubeconfig

    layout = data.layout
    if not layout.kubelet_client_current.exists():
        return
    path = layout.kubelet_kubeconfig
    node_path = f"{c.KUBERNETES_DIR}/{c.KUBELET_KUBECONFIG_FILE}"
    data.out(f'[kubelet-finalize] Updating "{node_path}" to point to a rotatable kubelet client certificate and key')
    cfg = load_kubeconfig(path)
    name, _ = current_user(cfg, str(path))
    pem = layout.node_kubelet_client_current
    cfg["users"] = [{"name": name, "user": {"client-certificate": pem, "client-key": pem}}]
    write_kubeconfig(path, cfg)


_FLAGS = ("config", "cert-dir", "dry-run")

PHASE: Phase[InitData] = Phase(
    name="kubelet-finalize",
    short="Updates settings relevant to the kubelet after TLS bootstrap",
    children=(
        all_phase("Run all kubelet-finalize phases", _FLAGS),
        Phase(
            "enable-client-cert-rotation",
            "Enable kubelet client certificate rotation",
            run=run_enable_client_cert_rotation,
            inherit_flags=_FLAGS,
        ),
    ),
)
