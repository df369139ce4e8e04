"""Dynamic defaults: tokens, node name, taints, CRI socket, advertise address, controlPlaneEndpoint port, version."""

from __future__ import annotations

import logging
import re
import socket
from pathlib import Path

import pytest

from pykubeadm import constants as c
from pykubeadm.api import defaults, v1beta4, versions
from pykubeadm.api.netutil import (
    api_server_service_ip,
    control_plane_endpoint_url,
    dns_service_ip,
    local_api_endpoint_url,
)
from pykubeadm.errors import KubeadmError, ValidationError


def _init_defaults(init: v1beta4.InitConfiguration, cluster: v1beta4.ClusterConfiguration) -> None:
    defaults.set_init_dynamic_defaults(
        init, cluster, detect_address=lambda: "192.0.2.7", detect_cri=lambda: c.DEFAULT_CRI_SOCKET
    )


def test_init_dynamic_defaults() -> None:
    init, cluster = v1beta4.InitConfiguration(), v1beta4.ClusterConfiguration()
    _init_defaults(init, cluster)
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", init.bootstrap_tokens[0].token or "")
    assert init.node_registration.name == socket.gethostname().strip().lower()
    assert init.node_registration.taints == [
        v1beta4.Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")
    ]
    assert init.node_registration.cri_socket == c.DEFAULT_CRI_SOCKET
    assert init.local_api_endpoint.advertise_address == "192.0.2.7"
    assert cluster.kubernetes_version == c.KUBERNETES_VERSION


def test_explicit_empty_taints_stay_empty_and_names_are_lowercased() -> None:
    init = v1beta4.InitConfiguration.from_obj({"nodeRegistration": {"name": "  Node-A ", "taints": []}})
    _init_defaults(init, v1beta4.ClusterConfiguration())
    assert init.node_registration.taints == []
    assert init.node_registration.name == "node-a"


def test_unspecified_advertise_address_is_detected_and_bad_one_rejected() -> None:
    init = v1beta4.InitConfiguration(local_api_endpoint=v1beta4.APIEndpoint(advertise_address="0.0.0.0"))
    _init_defaults(init, v1beta4.ClusterConfiguration())
    assert init.local_api_endpoint.advertise_address == "192.0.2.7"
    bad = v1beta4.InitConfiguration(local_api_endpoint=v1beta4.APIEndpoint(advertise_address="nope"))
    with pytest.raises(
        ValidationError, match='couldn\'t use "nope" as "apiserver-advertise-address", must be ipv4 or ipv6 address'
    ):
        _init_defaults(bad, v1beta4.ClusterConfiguration())


def test_cri_socket_without_scheme_gets_unix(caplog: pytest.LogCaptureFixture) -> None:
    nr = v1beta4.NodeRegistrationOptions(name="n", cri_socket="/run/crio/crio.sock")
    with caplog.at_level(logging.WARNING):
        defaults.set_node_registration_dynamic_defaults(nr, control_plane_taint=False)
    assert nr.cri_socket == "unix:///run/crio/crio.sock"
    assert nr.taints is None  # workers get no default taint
    assert "Usage of CRI endpoints without URL scheme is deprecated" in caplog.text


def test_detect_cri_socket() -> None:
    assert defaults.detect_cri_socket(lambda p: False) == c.DEFAULT_CRI_SOCKET
    assert defaults.detect_cri_socket(lambda p: "crio" in p) == "unix:///var/run/crio/crio.sock"
    with pytest.raises(KubeadmError, match="found multiple CRI endpoints on the host"):
        defaults.detect_cri_socket(lambda p: True)


def test_detect_advertise_address_is_an_ip_of_this_machine() -> None:
    ip = defaults.detect_advertise_address()
    import ipaddress

    ipaddress.ip_address(ip)


def test_default_route_parsing(tmp_path: Path) -> None:
    route = tmp_path / "route"
    route.write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth1\t00000000\t010200C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
        "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
        "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    )
    assert defaults._default_route_iface(route) == "eth0"
    route.write_text("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n")
    assert defaults._default_route_iface(route) is None


def test_control_plane_endpoint_gets_bind_port_and_sans_are_lowercased() -> None:
    init = v1beta4.InitConfiguration(
        local_api_endpoint=v1beta4.APIEndpoint(advertise_address="10.0.0.1", bind_port=7443)
    )
    cluster = v1beta4.ClusterConfiguration(
        control_plane_endpoint="lb.example.com", api_server=v1beta4.APIServer(cert_sans=["My.ELB.com"])
    )
    _init_defaults(init, cluster)
    assert cluster.control_plane_endpoint == "lb.example.com:7443"
    assert cluster.api_server.cert_sans == ["my.elb.com"]
    v6 = v1beta4.ClusterConfiguration(control_plane_endpoint="fd00::1")
    defaults.set_cluster_dynamic_defaults(v6, v1beta4.APIEndpoint(bind_port=6443), resolve_version=False)
    assert v6.control_plane_endpoint == "[fd00::1]:6443"


def test_endpoint_urls_and_service_ips() -> None:
    init = v1beta4.InitConfiguration(local_api_endpoint=v1beta4.APIEndpoint(advertise_address="fd00::10"))
    cluster = v1beta4.ClusterConfiguration()
    assert local_api_endpoint_url(init) == "https://[fd00::10]:6443"
    assert control_plane_endpoint_url(init, cluster) == "https://[fd00::10]:6443"
    cluster.control_plane_endpoint = "lb.example.com"
    assert control_plane_endpoint_url(init, cluster) == "https://lb.example.com:6443"
    cluster.control_plane_endpoint = "lb.example.com:8443"
    assert control_plane_endpoint_url(init, cluster) == "https://lb.example.com:8443"
    assert api_server_service_ip(cluster) == "10.96.0.1"
    assert dns_service_ip(cluster) == "10.96.0.10"
    cluster.networking.service_subnet = "fd00:10::/112,10.100.0.0/16"
    assert api_server_service_ip(cluster) == "fd00:10::1"
    assert dns_service_ip(cluster) == "fd00:10::a"


def test_version_resolution(caplog: pytest.LogCaptureFixture) -> None:
    assert versions.resolve_kubernetes_version("1.32.4") == "v1.32.4"
    assert versions.resolve_kubernetes_version("v1.33.1") == "v1.33.1"
    with caplog.at_level(logging.WARNING):
        assert versions.resolve_kubernetes_version("stable-1") == c.KUBEADM_VERSION
    assert "could not fetch a Kubernetes version from the internet" in caplog.text
    assert f"falling back to the local client version: {c.KUBEADM_VERSION}" in caplog.text
    with pytest.raises(ValueError, match="doesn't match patterns for neither semantic version nor labels"):
        versions.resolve_kubernetes_version("one.two")
    cluster = v1beta4.ClusterConfiguration(kubernetes_version="v1.20.0")
    with pytest.raises(
        ValidationError,
        match=r"only supports deploying clusters with the control plane version >= v1\.32\.0\. Current version: v1\.20\.0",
    ):
        defaults.set_cluster_dynamic_defaults(cluster, v1beta4.APIEndpoint())
