"""Images (config images list order and names) and component configs as kubeadm generates them."""

from __future__ import annotations

import logging

import pytest

from pykubeadm import constants as c
from pykubeadm.api import componentconfigs, images, v1beta4


def test_images_default_and_custom_repositories() -> None:
    cluster = v1beta4.ClusterConfiguration(kubernetes_version="v1.33.0+build.1")
    assert images.images_list(cluster) == [
        "registry.k8s.io/kube-apiserver:v1.33.0_build.1",
        "registry.k8s.io/kube-controller-manager:v1.33.0_build.1",
        "registry.k8s.io/kube-scheduler:v1.33.0_build.1",
        "registry.k8s.io/kube-proxy:v1.33.0_build.1",
        f"registry.k8s.io/coredns/coredns:{c.COREDNS_VERSION}",
        f"registry.k8s.io/pause:{c.PAUSE_VERSION}",
        f"registry.k8s.io/etcd:{c.SUPPORTED_ETCD_VERSION[33]}",
    ]
    cluster = v1beta4.ClusterConfiguration.from_obj(
        {
            "kubernetesVersion": "v1.33.0",
            "imageRepository": "mirror.local",
            "dns": {"imageRepository": "dns.local", "imageTag": "v9"},
            "etcd": {"local": {"imageRepository": "etcd.local", "imageTag": "3.6.0-0"}},
        }
    )
    assert images.coredns_image(cluster) == "dns.local/coredns:v9"
    assert images.etcd_image(cluster) == "etcd.local/etcd:3.6.0-0"
    assert images.pause_image(cluster) == f"mirror.local/pause:{c.PAUSE_VERSION}"


def test_etcd_version_falls_back_to_nearest(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert images.etcd_version_for("v1.40.0") == c.SUPPORTED_ETCD_VERSION[max(c.SUPPORTED_ETCD_VERSION)]
    assert "could not find officially supported version of etcd for Kubernetes v1.40.0" in caplog.text


def test_kubelet_config_defaults_and_user_overrides(caplog: pytest.LogCaptureFixture) -> None:
    cfg = componentconfigs.default_kubelet_config(cluster_dns="10.96.0.10", systemd_resolved=False)
    assert cfg["clusterDNS"] == ["10.96.0.10"] and cfg["clusterDomain"] == "cluster.local"
    assert cfg["authentication"]["x509"]["clientCAFile"] == "/etc/kubernetes/pki/ca.crt"
    assert cfg["authentication"]["anonymous"]["enabled"] is False
    assert cfg["authorization"] == {
        "mode": "Webhook",
        "webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"},
    }
    assert cfg["healthzBindAddress"] == "127.0.0.1" and cfg["healthzPort"] == 10248
    assert cfg["crashLoopBackOff"] == {}  # v1.33's kubelet config.yaml carries the empty struct, as kubeadm writes it
    assert "resolvConf" not in cfg
    assert componentconfigs.default_kubelet_config(cluster_dns="10.96.0.10", systemd_resolved=True)["resolvConf"] == (
        "/run/systemd/resolve/resolv.conf"
    )
    with caplog.at_level(logging.WARNING):
        user = componentconfigs.default_kubelet_config(
            cluster_dns="10.96.0.10",
            systemd_resolved=False,
            user={
                "clusterDNS": ["169.254.20.10"],
                "authentication": {"anonymous": {"enabled": True}},
                "resolvConf": "/x",
            },
        )
    assert user["clusterDNS"] == ["169.254.20.10"] and user["authentication"]["anonymous"]["enabled"] is True
    assert user["authentication"]["webhook"]["enabled"] is True and user["resolvConf"] == "/x"
    assert 'The recommended value for "clusterDNS" in "KubeletConfiguration" is: [\'10.96.0.10\']' in caplog.text


def test_kube_proxy_config() -> None:
    cfg = componentconfigs.default_kube_proxy_config(pod_subnet="fd01::/48", advertise_address="fd00::1")
    assert cfg["bindAddress"] == "::" and cfg["clusterCIDR"] == "fd01::/48"
    assert cfg["clientConnection"]["kubeconfig"] == "/var/lib/kube-proxy/kubeconfig.conf"
    cfg = componentconfigs.default_kube_proxy_config(
        user={"mode": "ipvs", "clusterCIDR": "10.1.0.0/16"}, pod_subnet="10.2.0.0/16"
    )
    assert cfg["mode"] == "ipvs" and cfg["clusterCIDR"] == "10.1.0.0/16" and cfg["bindAddress"] == "0.0.0.0"
