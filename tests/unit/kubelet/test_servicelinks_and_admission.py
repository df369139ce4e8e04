"""Service link variables as the kubelet computes them, and maxPods admission (OutOfpods) of the API Pod manager."""

from __future__ import annotations

import asyncio
from typing import Any

from pykubeadm.kubelet.pods import PodManager
from pykubeadm.kubelet.servicelinks import service_env
from pykubeadm.layout import Layout


def svc(ns: str, name: str, ip: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "uid": f"{ns}-{name}"},
        "spec": {"clusterIP": ip, "ports": ports},
    }


SERVICES = [
    svc("default", "kubernetes", "10.96.0.1", [{"name": "https", "port": 443, "protocol": "TCP"}]),
    svc("web", "my-db", "10.96.0.9", [{"name": "sql", "port": 5432}, {"port": 53, "protocol": "UDP"}]),
    svc("web", "headless", "None", [{"port": 80}]),
    svc("other", "elsewhere", "10.96.0.7", [{"port": 80}]),
]


def test_service_links_of_the_pods_namespace_and_the_kubernetes_service() -> None:
    env = service_env(SERVICES, "web")
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["MY_DB_SERVICE_HOST"] == "10.96.0.9" and env["MY_DB_SERVICE_PORT"] == "5432"
    assert env["MY_DB_SERVICE_PORT_SQL"] == "5432"
    assert env["MY_DB_PORT"] == "tcp://10.96.0.9:5432"
    assert env["MY_DB_PORT_53_UDP"] == "udp://10.96.0.9:53" and env["MY_DB_PORT_53_UDP_PROTO"] == "udp"
    assert env["MY_DB_PORT_5432_TCP_ADDR"] == "10.96.0.9" and env["MY_DB_PORT_5432_TCP_PORT"] == "5432"
    assert not any(k.startswith(("HEADLESS_", "ELSEWHERE_")) for k in env)
    # enableServiceLinks: false keeps only the kubernetes Service
    assert {k.split("_")[0] for k in service_env(SERVICES, "web", enable_links=False)} == {"KUBERNETES"}


class RecordingClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    async def patch(self, path: str, body: Any, patch_type: str = "strategic") -> dict[str, Any]:
        self.patches.append((path, body))
        return {}


class RecordingEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, pod: Any, kind: str, reason: str, message: str, field_path: str = "") -> None:
        self.events.append((kind, reason, message))


async def test_a_pod_beyond_max_pods_is_rejected_with_out_of_pods(tmp_path) -> None:
    client, events = RecordingClient(), RecordingEvents()
    manager = PodManager(
        lambda: client, node_name="n1", pod_ip="127.0.10.2", layout=Layout(tmp_path), events=events, max_pods=3,
        static_count=lambda: 3,
    )  # fmt: skip
    pod = {"metadata": {"namespace": "default", "name": "extra", "uid": "u1"}, "spec": {"containers": []}}
    await manager._upsert(pod)
    await asyncio.gather(*manager.rejections)  # the status is written in the background
    assert manager.workers == {}
    message = "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
    assert events.events == [("Warning", "OutOfpods", message)]
    [(path, body)] = client.patches
    assert path == "/api/v1/namespaces/default/pods/extra/status"
    assert body["status"] == {"phase": "Failed", "reason": "OutOfpods", "message": f"Pod was rejected: {message}"}
