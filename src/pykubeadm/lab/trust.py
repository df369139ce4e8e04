"""What the lab turns on so its TLS bootstrap can be trusted end to end (not kubeadm's defaults).

- Kubelets ask for CA-signed serving certificates (`serverTLSBootstrap: true` in the KubeletConfiguration kubeadm
  uploads, so joining nodes get it too).
- kube-controller-manager runs the opt-in `csrservingapproving` controller, which approves a kubelet serving CSR only
  when its SANs are the requesting Node's addresses.
- kube-apiserver verifies the kubelets' serving certificates against the cluster CA
  (`--kubelet-certificate-authority`), so `kubectl logs/exec` run over verified TLS and a kubelet presenting another
  node's certificate is refused.
- The control-plane kubelet renews the kubeadm certificates 90 days before they expire
  (`--control-plane-cert-renewal-window`, kubelet/certrenewal.py), so a lab left running does not stop on day 366.
"""

from __future__ import annotations

from typing import Any

from pykubeadm import constants as c
from pykubeadm.pki.autorenewal import RENEWAL_WINDOW_FLAG

__all__ = [
    "CERT_RENEWAL_WINDOW",
    "KCM_CONTROLLERS",
    "control_plane_kubelet_args",
    "kubelet_configuration",
    "secure_cluster_configuration",
]

#: kubeadm's --controllers plus the serving-CSR approver
KCM_CONTROLLERS = "*,bootstrapsigner,tokencleaner,csrservingapproving"
#: how long before expiry the control-plane kubelet renews the kubeadm certificates (90 days)
CERT_RENEWAL_WINDOW = "2160h"


def _set_arg(component: dict[str, Any], name: str, value: str) -> None:
    args = component.setdefault("extraArgs", [])
    args[:] = [a for a in args if a.get("name") != name] + [{"name": name, "value": value}]


def secure_cluster_configuration(cluster: dict[str, Any]) -> dict[str, Any]:
    """Add the approver and the kubelet CA check to a ClusterConfiguration (in place; returned for chaining)."""
    _set_arg(cluster.setdefault("controllerManager", {}), "controllers", KCM_CONTROLLERS)
    ca = f"{c.DEFAULT_CERTIFICATES_DIR}/ca.crt"
    _set_arg(cluster.setdefault("apiServer", {}), "kubelet-certificate-authority", ca)
    return cluster


def kubelet_configuration() -> dict[str, Any]:
    """The KubeletConfiguration document the lab gives `kubeadm init` (merged over kubeadm's own)."""
    return {"apiVersion": c.KUBELET_CONFIG_API_VERSION, "kind": "KubeletConfiguration", "serverTLSBootstrap": True}


def control_plane_kubelet_args() -> list[dict[str, str]]:
    """kubeletExtraArgs of a control-plane node: automatic renewal of its kubeadm certificates."""
    return [{"name": RENEWAL_WINDOW_FLAG, "value": CERT_RENEWAL_WINDOW}]
