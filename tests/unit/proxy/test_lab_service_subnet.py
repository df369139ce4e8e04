"""The lab's Service network is loopback: ClusterIPs, the `kubernetes` VIP (certificate SAN) and kube-dns all follow."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import yaml

from pykubeadm import constants as c
from pykubeadm.api.loader import load_init_config
from pykubeadm.api.netutil import api_server_service_ip, dns_service_ip
from pykubeadm.lab.nodes import SERVICE_SUBNET, init_config, lab_node, service_subnet
from pykubeadm.pki.altnames import apiserver_alt_names


def test_lab_service_subnet_is_loopback_and_everything_follows(tmp_path: Path) -> None:
    assert ipaddress.ip_network(SERVICE_SUBNET).subnet_of(ipaddress.ip_network("127.0.0.0/8"))
    node = lab_node(tmp_path, 0)
    path = tmp_path / "init.yaml"
    path.write_text(yaml.safe_dump_all(init_config(node, "abcdef.0123456789abcdef", "sqlite")))
    cfg = load_init_config(path, dynamic=False)
    assert cfg.cluster.networking.service_subnet == SERVICE_SUBNET
    assert api_server_service_ip(cfg.cluster) == "127.96.0.1"
    assert dns_service_ip(cfg.cluster) == "127.96.0.10"
    assert cfg.kubelet["clusterDNS"] == ["127.96.0.10"]
    sans = apiserver_alt_names("lab-control-plane", node.address, SERVICE_SUBNET, "cluster.local")
    assert ipaddress.ip_address("127.96.0.1") in sans.ips


def test_outside_the_lab_kubeadm_defaults_stand(tmp_path: Path) -> None:
    cfg = load_init_config(None, {}, dynamic=False)
    assert (cfg.cluster.networking.service_subnet or c.DEFAULT_SERVICE_SUBNET) == "10.96.0.0/12"
    assert dns_service_ip(cfg.cluster) == "10.96.0.10"


def test_labs_on_other_address_prefixes_get_their_own_service_network(tmp_path: Path) -> None:
    """Labs side by side share one host's ClusterIP listeners: each prefix needs its own Service network."""
    nets = {p: ipaddress.ip_network(service_subnet(f"{p}1")) for p in ("127.0.10.", "127.0.18.", "127.0.34.")}
    assert str(nets["127.0.10."]) == SERVICE_SUBNET
    assert len(set(nets.values())) == 3
    assert all(n.subnet_of(ipaddress.ip_network("127.0.0.0/8")) and n.prefixlen == 16 for n in nets.values())
    node = lab_node(tmp_path, 0, "127.0.18.")
    cluster = init_config(node, "abcdef.0123456789abcdef", "sqlite")[1]
    assert cluster["networking"]["serviceSubnet"] == "127.104.0.0/16"
