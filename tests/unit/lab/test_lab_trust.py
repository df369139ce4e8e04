"""The lab's init configuration turns on serving-certificate bootstrap, the approver and the kubelet CA check."""

from __future__ import annotations

from pathlib import Path

from pykubeadm.lab.nodes import init_config, lab_node


def test_init_config_enables_serving_certificates_and_their_verification(tmp_path: Path) -> None:
    cp = lab_node(tmp_path, 0)
    init, cluster, kubelet = init_config(cp, "abcdef.0123456789abcdef", "sqlite")
    assert init["kind"] == "InitConfiguration"
    assert {"name": "control-plane-cert-renewal-window", "value": "2160h"} in init["nodeRegistration"][
        "kubeletExtraArgs"
    ]
    assert kubelet == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "serverTLSBootstrap": True,
    }
    kcm = {a["name"]: a["value"] for a in cluster["controllerManager"]["extraArgs"]}
    assert kcm["controllers"] == "*,bootstrapsigner,tokencleaner,csrservingapproving"
    assert kcm["bind-address"] == cp.address
    api = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert api == {"kubelet-certificate-authority": "/etc/kubernetes/pki/ca.crt"}
    assert cluster["apiServer"]["extraVolumes"]  # the sqlite state volume is kept
