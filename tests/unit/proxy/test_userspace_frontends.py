"""The listeners the userspace proxier wants for a node, and the data-plane choice of built-in mode."""

from __future__ import annotations

from typing import Any

from pykubeadm.proxy.server import choose_data_plane, node_addresses
from pykubeadm.proxy.servicemap import build_table
from pykubeadm.proxy.userspace import desired_frontends


def svc(name: str, **spec: Any) -> dict[str, Any]:
    base = {"type": "NodePort", "clusterIP": "127.96.0.10", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": base | spec}


def slice_(name: str, *pairs: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{name}-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "nodeName": node} for ip, node in pairs],
        "ports": [{"name": "http", "port": 8080}],
    }


def test_clusterip_and_nodeport_on_the_nodes_addresses() -> None:
    table = build_table([svc("web")], [slice_("web", ("127.0.20.1", "a"))])
    fronts = desired_frontends(table, "a", ["127.0.10.1"])
    assert set(fronts) == {("TCP", "127.96.0.10", 80), ("TCP", "127.0.10.1", 30080)}


def test_no_endpoints_means_no_listener() -> None:
    assert desired_frontends(build_table([svc("web")], []), "a", ["127.0.10.1"]) == {}


def test_external_local_without_local_endpoint_has_no_nodeport() -> None:
    table = build_table([svc("web", externalTrafficPolicy="Local")], [slice_("web", ("127.0.20.1", "b"))])
    assert set(desired_frontends(table, "a", ["127.0.10.1"])) == {("TCP", "127.96.0.10", 80)}


def test_data_plane_choice() -> None:
    assert choose_data_plane("nftables") == ("nftables", "")
    plane, why = choose_data_plane("", is_root=False, has_nft=True)
    assert plane == "userspace" and "not running as root" in why and "iptables" in why
    assert "nftables" in choose_data_plane("iptables", is_root=True, has_nft=False)[1]
    assert "ipvs proxier is not built in" in choose_data_plane("ipvs")[1]


def test_node_addresses_prefer_internal_ip() -> None:
    node = {
        "status": {
            "addresses": [
                {"type": "ExternalIP", "address": "1.2.3.4"},
                {"type": "InternalIP", "address": "127.0.10.2"},
                {"type": "Hostname", "address": "x"},
            ]
        }
    }
    assert node_addresses(node) == ["127.0.10.2"]


def test_built_in_mode_serves_health_on_the_nodes_address() -> None:
    from pykubeadm.proxy.server import _rebind

    assert _rebind("0.0.0.0:10256", "127.0.10.2") == "127.0.10.2:10256"
    assert _rebind("127.0.0.1:10249", "127.0.10.2") == "127.0.10.2:10249"  # lab: loopback is shared by the nodes
    assert _rebind("127.0.0.1:10249", "192.168.1.5") == "127.0.0.1:10249"
    assert _rebind("10.1.2.3:10256", "127.0.10.2") == "10.1.2.3:10256"
