"""pki.altnames and pki.certlist: kubeadm's SAN rules, host:port parsing and the certificate table."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta

import pytest

from pykubeadm.errors import CertError, ValidationError
from pykubeadm.pki import certlist
from pykubeadm.pki.altnames import (
    api_server_virtual_ip,
    apiserver_alt_names,
    append_sans,
    etcd_alt_names,
    parse_host_port,
    parse_ip_sloppy,
)
from pykubeadm.pki.certs import CLIENT_AUTH, SERVER_AUTH, AltNames


def ips(*values: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
    return tuple(ipaddress.ip_address(v) for v in values)


def test_apiserver_default_sans() -> None:
    alt = apiserver_alt_names("node1", "192.168.0.10", "10.96.0.0/12", "cluster.local")
    assert alt.dns_names == (
        "node1",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    )
    assert alt.ips == ips("10.96.0.1", "192.168.0.10")


def test_apiserver_cpe_and_cert_sans_with_warning() -> None:
    warnings: list[str] = []
    alt = apiserver_alt_names(
        "n",
        "10.0.0.1",
        "10.96.0.0/12,fd00::/108",
        "corp",
        "lb.example.com:6443",
        ["10.0.0.9", "*.apps.example.com", "x.example.com", "not valid", "010.000.000.011"],
        warnings.append,
    )
    assert "lb.example.com" in alt.dns_names and "*.apps.example.com" in alt.dns_names
    assert alt.ips == ips("10.96.0.1", "10.0.0.1", "10.0.0.9", "10.0.0.11")
    assert warnings == [
        "[certificates] WARNING: 'not valid' was not added to the 'apiserver' SAN, because it is not a valid IP or "
        "RFC-1123 compliant DNS entry"
    ]
    ip_cpe = apiserver_alt_names("n", "10.0.0.1", "10.96.0.0/12", "corp", "[fd00::5]:6443")
    assert ip_cpe.ips == ips("10.96.0.1", "10.0.0.1", "fd00::5")


def test_apiserver_ipv6() -> None:
    alt = apiserver_alt_names("n6", "fd00:10::10", "fd00:96::/108", "cluster.local")
    assert alt.ips == ips("fd00:96::1", "fd00:10::10")


def test_apiserver_bad_advertise_address() -> None:
    with pytest.raises(CertError, match="error parsing LocalAPIEndpoint AdvertiseAddress nope: is not a valid textual"):
        apiserver_alt_names("n", "nope", "10.96.0.0/12", "cluster.local")


def test_etcd_sans() -> None:
    warnings: list[str] = []
    alt = etcd_alt_names("node1", "192.168.0.10", ["etcd.local", "10.1.1.1", "-bad-"], "etcd/peer", warnings.append)
    assert alt.dns_names == ("node1", "localhost", "etcd.local")
    assert alt.ips == ips("192.168.0.10", "127.0.0.1", "::1", "10.1.1.1")
    assert "'-bad-' was not added to the 'etcd/peer' SAN" in warnings[0]


def test_append_sans_wildcard_and_case() -> None:
    alt = append_sans(AltNames(), ["*.ok.io", "UPPER.io", "a..b"], "apiserver", lambda _m: None)
    assert alt.dns_names == ("*.ok.io",)


def test_parse_helpers() -> None:
    assert parse_host_port("lb.example.com:6443") == ("lb.example.com", "6443")
    assert parse_host_port("lb.example.com") == ("lb.example.com", "")
    assert parse_host_port("[fd00::1]:443") == ("fd00::1", "443")
    assert parse_host_port("fd00::1") == ("fd00::1", "")
    with pytest.raises(ValidationError, match="port 70000 must be a valid number between 1 and 65535"):
        parse_host_port("a:70000")
    with pytest.raises(ValidationError, match="must be a valid IP address or a valid RFC-1123 DNS subdomain"):
        parse_host_port("Bad_Host:1")
    assert parse_ip_sloppy("010.1.1.1") == ipaddress.ip_address("10.1.1.1")
    assert parse_ip_sloppy("host") is None
    assert api_server_virtual_ip("10.96.0.0/12") == ipaddress.ip_address("10.96.0.1")
    assert api_server_virtual_ip("fd00::/108,10.0.0.0/16") == ipaddress.ip_address("fd00::1")


def test_cert_table_order_and_identities() -> None:
    assert [s.name for s in certlist.CERT_LIST] == [
        "ca",
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-ca",
        "front-proxy-client",
        "etcd-ca",
        "etcd-server",
        "etcd-peer",
        "etcd-healthcheck-client",
        "apiserver-etcd-client",
    ]
    assert [s.name for s in certlist.cert_list(external_etcd=True)] == [
        "ca",
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-ca",
        "front-proxy-client",
    ]
    assert certlist.APISERVER_KUBELET_CLIENT.organization == ("kubeadm:cluster-admins",)
    assert certlist.ETCD_HEALTHCHECK_CLIENT.organization == ()
    assert certlist.APISERVER_ETCD_CLIENT.organization == ()
    assert certlist.ETCD_SERVER.usages == (SERVER_AUTH, CLIENT_AUTH)
    assert certlist.ca_of(certlist.ETCD_PEER) is certlist.ETCD_CA


def test_cert_config_validity_and_node_cn() -> None:
    start = datetime(2026, 5, 1, tzinfo=UTC)
    params = certlist.PkiParams(
        node_name="node1",
        advertise_address="10.0.0.1",
        encryption_algorithm="ECDSA-P256",
        certificate_validity_period=timedelta(hours=48),
        ca_certificate_validity_period=timedelta(days=100),
    )
    cfg = certlist.cert_config(certlist.ETCD_SERVER, params, start)
    assert cfg.common_name == "node1"
    assert cfg.not_before == start - timedelta(minutes=5)
    assert cfg.not_after == start + timedelta(hours=48)
    assert cfg.encryption_algorithm == "ECDSA-P256"
    ca_cfg = certlist.cert_config(certlist.CA, params, start)
    assert ca_cfg.not_after == start + timedelta(days=100)
