"""Ports on the node's address: the NodePorts admission check for hostPorts, and container ports claimed by running
containers (a second Pod's container is told which Pod holds the port)."""

from __future__ import annotations

from typing import Any

from pykubeadm.kubelet.ports import NODE_PORTS_MESSAGE, NodePorts, PortOwner, container_ports, host_port_conflict


def pod(name: str, *ports: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [{"name": "c", "ports": ports}]}}


def test_host_port_conflicts_fail_admission_with_the_kubelets_predicate_message() -> None:
    web = pod("web", {"containerPort": 80, "hostPort": 8080})
    other = pod("other", {"containerPort": 81, "hostPort": 8080})
    message = host_port_conflict(other, [web])
    assert message is not None and message.startswith(NODE_PORTS_MESSAGE)
    assert "hostPort 8080/TCP is used by pod default/web" in message
    assert host_port_conflict(pod("udp", {"containerPort": 81, "hostPort": 8080, "protocol": "UDP"}), [web]) is None
    assert host_port_conflict(pod("plain", {"containerPort": 8080}), [web]) is None  # no hostPort: not admission's


def test_a_container_port_held_by_another_pod_is_refused_naming_it_until_released() -> None:
    ports = NodePorts()
    first = PortOwner("uid-1", "default/web-1", "web")
    second = PortOwner("uid-2", "default/web-2", "web")
    wanted = container_ports({"ports": [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}]})
    assert wanted == [("TCP", 8080), ("UDP", 53)]
    assert ports.claim(first, wanted) is None
    assert ports.claim(first, wanted) is None  # the same Pod again (a restart)
    assert ports.claim(second, [("TCP", 8080)]) == (
        'port 8080/TCP on the node\'s address is already used by container "web" of pod default/web-1'
    )
    assert ports.claim(second, [("TCP", 53)]) is None  # another protocol
    ports.release(first)
    assert ports.claim(second, [("TCP", 8080)]) is None


def test_replicas_of_one_controller_share_their_ports_and_the_port_stays_held_until_the_last_goes() -> None:
    ports = NodePorts()
    a = PortOwner("uid-a", "kube-system/coredns-a", "coredns", "rs-1")
    b = PortOwner("uid-b", "kube-system/coredns-b", "coredns", "rs-1")
    other = PortOwner("uid-c", "default/dns", "dns", "rs-2")
    assert ports.claim(a, [("UDP", 53)]) is None and ports.claim(b, [("UDP", 53)]) is None
    ports.release(b)
    assert "coredns-a" in (ports.claim(other, [("UDP", 53)]) or "")  # a still runs
    ports.release_pod("uid-a")
    assert ports.claim(other, [("UDP", 53)]) is None


def test_a_pod_with_its_own_network_holds_only_its_host_ports() -> None:
    from pykubeadm.kubelet.ports import container_ports

    ct = {"ports": [{"containerPort": 80}, {"containerPort": 8443, "hostPort": 443}]}
    assert container_ports(ct) == [("TCP", 80), ("TCP", 443)]
    assert container_ports(ct, host_only=True) == [("TCP", 443)]
