"""Kubelet settings: KubeletConfiguration fields, flags over the file, bind addresses of built-in nodes."""

from __future__ import annotations

import pytest
import yaml

from pykubeadm.errors import ValidationError
from pykubeadm.kubelet.backoff import BackOff
from pykubeadm.kubelet.cli import parse_labels, parse_taints, resolve_settings
from pykubeadm.layout import Layout

KUBEADM_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "authentication": {
        "anonymous": {"enabled": False},
        "webhook": {"cacheTTL": "0s", "enabled": True},
        "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
    },
    "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "0s"}},
    "cgroupDriver": "systemd",
    "clusterDNS": ["10.96.0.10"],
    "clusterDomain": "cluster.local",
    "healthzBindAddress": "127.0.0.1",
    "healthzPort": 10248,
    "rotateCertificates": True,
    "staticPodPath": "/etc/kubernetes/manifests",
    "nodeStatusReportFrequency": "0s",
    "somethingNew": {"kept": "as data"},
}


def _opts(**kw):
    base = dict.fromkeys(
        [
            "bootstrap_kubeconfig",
            "kubeconfig",
            "config_file",
            "node_ip",
            "hostname_override",
            "container_runtime_endpoint",
            "pod_infra_container_image",
            "cert_dir",
            "rotate_certificates",
            "rotate_server_certificates",
            "tls_cert_file",
            "tls_private_key_file",
            "client_ca_file",
            "anonymous_auth",
            "authorization_mode",
            "pod_manifest_path",
            "address",
            "port",
            "healthz_bind_address",
            "healthz_port",
            "cluster_dns",
            "cluster_domain",
            "node_labels",
            "register_with_taints",
            "register_node",
        ]
    )
    base.update(kw)
    return base


def test_kubeadm_config_file_and_flags(tmp_path):
    layout = Layout(root=tmp_path)
    cfg = layout.host("/var/lib/kubelet/config.yaml")
    cfg.parent.mkdir(parents=True)
    cfg.write_text(yaml.safe_dump(KUBEADM_CONFIG))
    s = resolve_settings(
        _opts(
            config_file="/var/lib/kubelet/config.yaml",
            hostname_override="Node-1 ",
            node_ip="127.0.10.1",
            kubeconfig="/etc/kubernetes/kubelet.conf",
            bootstrap_kubeconfig="/etc/kubernetes/bootstrap-kubelet.conf",
            container_runtime_endpoint="unix:///var/run/containerd/containerd.sock",
            pod_infra_container_image="registry.k8s.io/pause:3.10",
        ),
        layout,
    )
    assert s.node_name == "node-1"
    assert s.static_pod_path == "/etc/kubernetes/manifests"
    assert s.rotate_certificates and not s.server_tls_bootstrap
    assert s.client_ca_file == "/etc/kubernetes/pki/ca.crt" and not s.anonymous_auth and s.webhook_authn
    assert s.authorization_mode == "Webhook"
    assert s.cluster_dns == ["10.96.0.10"] and s.cluster_domain == "cluster.local"
    assert s.cert_dir == "/var/lib/kubelet/pki"
    assert s.raw_config["somethingNew"] == {"kept": "as data"}
    assert s.container_runtime_endpoint.startswith("unix://")
    # built-in nodes on loopback addresses serve on their own IP
    assert s.serve_address == "127.0.10.1" and s.healthz_address == "127.0.10.1" and s.port == 10250
    flagged = resolve_settings(
        _opts(
            config_file="/var/lib/kubelet/config.yaml",
            rotate_server_certificates=True,
            port=12345,
            pod_manifest_path="/other",
        ),
        layout,
    )
    assert flagged.server_tls_bootstrap and flagged.port == 12345 and flagged.static_pod_path == "/other"
    assert flagged.healthz_address == "127.0.0.1" and flagged.serve_address == "0.0.0.0"


def test_invalid_values():
    with pytest.raises(ValidationError, match="--node-ip"):
        resolve_settings(_opts(node_ip="not-an-ip"), Layout())
    with pytest.raises(ValidationError, match="taint effect"):
        parse_taints("a=b:Sometimes")


def test_labels_and_taints():
    assert parse_labels("a=b, c=") == {"a": "b", "c": ""}
    assert parse_taints("k=v:NoSchedule,x:NoExecute") == [
        {"key": "k", "value": "v", "effect": "NoSchedule"},
        {"key": "x", "effect": "NoExecute"},
    ]


def test_crashloop_backoff_sequence():
    b = BackOff(initial=10, cap=300, reset_after=600)
    assert [b.next_delay(1) for _ in range(8)] == [0, 10, 20, 40, 80, 160, 300, 300]
    assert b.next_delay(601) == 0  # a long healthy run resets the back-off


def test_kubeadm_flags_env_and_root_dir_from_cli(tmp_path):
    from pykubeadm.kubelet.cli import parse_kubeadm_flags_env

    text = (
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
        '--pod-infra-container-image=registry.k8s.io/pause:3.10 --node-labels=a=b"\n'
    )
    assert parse_kubeadm_flags_env(text) == [
        "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
        "--pod-infra-container-image=registry.k8s.io/pause:3.10",
        "--node-labels=a=b",
    ]
    assert parse_kubeadm_flags_env('KUBELET_KUBEADM_ARGS=""\n') == []
    assert parse_kubeadm_flags_env("# nothing\n") == []


def test_the_cni_network_is_off_unless_a_conf_dir_is_given():
    plain = resolve_settings(_opts(), Layout())
    assert plain.cni_conf_dir == "" and plain.cni_bin_dir == "/usr/lib/cni:/opt/cni/bin"
    assert plain.cni_cache_dir == "/var/lib/cni"
    cni = resolve_settings(_opts(cni_conf_dir="/etc/cni/net.d", cni_bin_dir="/opt/cni/bin"), Layout())
    assert (cni.cni_conf_dir, cni.cni_bin_dir) == ("/etc/cni/net.d", "/opt/cni/bin")
