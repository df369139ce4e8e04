"""Our kube-proxy as real processes in userspace mode against a real apiserver, two "nodes" on one host.

Services and EndpointSlices are created through the API (the slices by the test, as the endpointslice controller
would); backends are HTTP/UDP servers on 127.0.20.x; every ClusterIP is in the apiserver's loopback service range.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Service
from lightkube.resources.discovery_v1 import EndpointSlice
from tests.integration.proxy._support import Backend, KubeProxy, wait_until

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory, api: Any, nodes: dict[str, str]) -> Iterator[list[KubeProxy]]:
    made: list[KubeProxy] = []
    try:
        for name, ip in nodes.items():
            made.append(KubeProxy(tmp_path_factory.mktemp(name), api, name, ip).start())
        yield made
    finally:
        for p in made:
            p.stop()


def make_service(admin: Client, name: str, **spec: Any) -> Service:
    body = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
        | spec,
    }
    return admin.create(Service.from_dict(body))


def slice_body(
    svc: str,
    backends: list[Backend],
    *,
    ready: list[bool] | None = None,
    nodes: list[str] | None = None,
    port_name: str = "http",
    protocol: str = "TCP",
) -> dict[str, Any]:
    endpoints = []
    for i, b in enumerate(backends):
        ep: dict[str, Any] = {"addresses": [b.ip], "conditions": {"ready": True if ready is None else ready[i]}}
        if nodes:
            ep["nodeName"] = nodes[i]
        endpoints.append(ep)
    return {
        "metadata": {"name": f"{svc}-abcde", "namespace": "default", "labels": {"kubernetes.io/service-name": svc}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": port_name, "port": backends[0].port if backends else 8080, "protocol": protocol}],
    }


def put_slice(admin: Client, body: dict[str, Any]) -> None:
    try:
        live = admin.get(EndpointSlice, body["metadata"]["name"], namespace="default")
        body["metadata"]["resourceVersion"] = live.metadata.resourceVersion
        admin.replace(EndpointSlice.from_dict(body))
    except Exception as err:
        if "not found" not in str(err).lower():
            raise
        admin.create(EndpointSlice.from_dict(body))


def http_get(ip: str, port: int) -> str:
    with urllib.request.urlopen(f"http://{ip}:{port}/", timeout=5) as r:
        return r.read().decode()


def answers(ip: str, port: int, n: int = 12) -> list[str]:
    return [http_get(ip, port) for _ in range(n)]


def refused(ip: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.connect((ip, port))
        except ConnectionRefusedError:
            return True
        # accepted: the peer must reset at once
        s.settimeout(5)
        try:
            return s.recv(1) == b""
        except ConnectionResetError:
            return True


def test_clusterip_in_loopback_range(admin: Client, service_range: str, nodes: dict[str, str]) -> None:
    svc = make_service(admin, "range-check", type="ClusterIP")
    assert ipaddress.ip_address(svc.spec.clusterIP) in ipaddress.ip_network(service_range)
    kubernetes = admin.get(Service, "kubernetes", namespace="default")
    assert kubernetes.spec.clusterIP == str(ipaddress.ip_network(service_range).network_address + 1)


def test_clusterip_and_nodeport_reach_both_backends(
    admin: Client, proxies: list[KubeProxy], backends: list[Backend]
) -> None:
    svc = make_service(admin, "web")
    put_slice(admin, slice_body("web", backends))
    ip, node_port = svc.spec.clusterIP, svc.spec.ports[0].nodePort
    wait_until(lambda: http_get(ip, 80), what="ClusterIP answering")
    assert set(answers(ip, 80)) == {"backend-1", "backend-2"}
    for p in proxies:
        wait_until(lambda p=p: http_get(p.ip, node_port), what=f"NodePort on {p.ip}")
        assert set(answers(p.ip, node_port)) == {"backend-1", "backend-2"}
    # the two nodes' proxiers share the ClusterIP listener (SO_REUSEPORT), each NodePort is on its own address
    out = subprocess.run(["ss", "-Hltnp", f"src {ip}:80"], capture_output=True, text=True, check=True).stdout
    pids = {int(m) for m in re.findall(r"pid=(\d+)", out)}
    assert pids == {p.proc.pid for p in proxies if p.proc is not None}, out


def test_session_affinity_sticks_to_one_backend(
    admin: Client, proxies: list[KubeProxy], backends: list[Backend]
) -> None:
    svc = make_service(
        admin,
        "sticky",
        type="ClusterIP",
        sessionAffinity="ClientIP",
        sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}},
    )
    put_slice(admin, slice_body("sticky", backends))
    wait_until(lambda: http_get(svc.spec.clusterIP, 80), what="sticky ClusterIP")
    assert len(set(answers(svc.spec.clusterIP, 80, 16))) == 1


def test_not_ready_endpoint_gets_no_traffic(admin: Client, proxies: list[KubeProxy], backends: list[Backend]) -> None:
    svc = make_service(admin, "half", type="ClusterIP")
    put_slice(admin, slice_body("half", backends, ready=[True, False]))
    wait_until(lambda: http_get(svc.spec.clusterIP, 80), what="half ClusterIP")
    assert set(answers(svc.spec.clusterIP, 80, 16)) == {"backend-1"}


def test_scaled_to_zero_is_refused_and_comes_back(
    admin: Client, proxies: list[KubeProxy], backends: list[Backend]
) -> None:
    svc = make_service(admin, "scale")
    ip, node_port = svc.spec.clusterIP, svc.spec.ports[0].nodePort
    assert refused(ip, 80)  # no EndpointSlice yet
    put_slice(admin, slice_body("scale", backends))
    wait_until(lambda: http_get(ip, 80), what="scale ClusterIP")
    put_slice(admin, slice_body("scale", []))
    wait_until(lambda: refused(ip, 80), what="ClusterIP refused once scaled to 0")
    for p in proxies:
        wait_until(lambda p=p: refused(p.ip, node_port), what="NodePort refused once scaled to 0")
    put_slice(admin, slice_body("scale", backends[:1]))
    wait_until(lambda: http_get(ip, 80) == "backend-1", what="traffic back after scaling up")


def test_external_traffic_policy_local_uses_node_local_endpoints(
    admin: Client, proxies: list[KubeProxy], backends: list[Backend]
) -> None:
    svc = make_service(admin, "local", externalTrafficPolicy="Local")
    put_slice(admin, slice_body("local", backends, nodes=[proxies[0].node, proxies[1].node]))
    node_port = svc.spec.ports[0].nodePort
    for p, expected in zip(proxies, ("backend-1", "backend-2"), strict=True):
        wait_until(lambda p=p: http_get(p.ip, node_port), what=f"Local NodePort on {p.ip}")
        assert set(answers(p.ip, node_port, 8)) == {expected}


def test_internal_traffic_policy_local_without_local_endpoint_is_not_served(
    admin: Client, proxies: list[KubeProxy], backends: list[Backend]
) -> None:
    svc = make_service(admin, "ilocal", type="ClusterIP", internalTrafficPolicy="Local")
    put_slice(admin, slice_body("ilocal", backends[:1], nodes=[proxies[0].node]))
    ip = svc.spec.clusterIP
    # only node a's proxier has a local endpoint, so only it listens: every connection lands on backend-1
    wait_until(lambda: http_get(ip, 80), what="iTP Local ClusterIP")
    assert set(answers(ip, 80, 8)) == {"backend-1"}
    out = subprocess.run(["ss", "-Hltn", f"src {ip}:80"], capture_output=True, text=True, check=True).stdout
    assert len(out.strip().splitlines()) == 1, out


def test_udp_service(admin: Client, proxies: list[KubeProxy], backends: list[Backend]) -> None:
    svc = admin.create(
        Service.from_dict(
            {
                "metadata": {"name": "dns-like", "namespace": "default"},
                "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]},
            }
        )
    )
    put_slice(admin, slice_body("dns-like", backends[:1], port_name="dns", protocol="UDP"))

    def ask() -> bytes:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(1)
            s.sendto(b"ping", (svc.spec.clusterIP, 53))
            return s.recvfrom(2048)[0]

    assert wait_until(ask, what="UDP answer") == b"backend-1:ping"


def _listeners(pid: int) -> set[str]:
    out = subprocess.run(["ss", "-Hltunp"], capture_output=True, text=True, check=True).stdout
    return {line.split()[4] for line in out.splitlines() if f"pid={pid}," in line}


def _last_sync(p: KubeProxy) -> float:
    text = p.get("metrics")[1]
    return float(re.search(r"^kubeproxy_sync_proxy_rules_last_timestamp_seconds (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]


def test_headless_service_is_left_alone(admin: Client, proxies: list[KubeProxy], backends: list[Backend]) -> None:
    p = proxies[0]
    assert p.proc is not None
    before, synced = _listeners(p.proc.pid), _last_sync(p)
    admin.create(
        Service.from_dict(
            {
                "metadata": {"name": "headless", "namespace": "default"},
                "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]},
            }
        )
    )
    put_slice(admin, slice_body("headless", backends))
    wait_until(lambda: _last_sync(p) > synced, what="a sync after the headless Service's slice")
    assert _listeners(p.proc.pid) == before


def test_udp_without_endpoints_is_refused(admin: Client, proxies: list[KubeProxy], backends: list[Backend]) -> None:
    svc = admin.create(
        Service.from_dict(
            {
                "metadata": {"name": "udp-zero", "namespace": "default"},
                "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]},
            }
        )
    )
    put_slice(admin, slice_body("udp-zero", backends[:1], port_name="dns", protocol="UDP"))

    def ask() -> str:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(1)
            s.connect((svc.spec.clusterIP, 53))
            s.send(b"ping")
            try:
                return s.recv(2048).decode()
            except ConnectionRefusedError:  # ICMP port unreachable: nothing listens
                return "refused"
            except TimeoutError:
                return "timeout"

    wait_until(lambda: ask() == "backend-1:ping", what="UDP served while it has an endpoint")
    put_slice(admin, slice_body("udp-zero", [], port_name="dns", protocol="UDP"))
    wait_until(lambda: ask() == "refused", what="UDP refused once the slice is empty")


def test_healthz_livez_and_metrics(proxies: list[KubeProxy]) -> None:
    for p in proxies:
        body = p.healthz()
        assert set(body) == {"lastUpdated", "currentTime", "nodeEligible"} and body["nodeEligible"] is True
        code, livez = p.get("livez")
        assert code == 200 and "nodeEligible" not in livez
        code, text = p.get("metrics")
        assert code == 200
        for name in (
            "kubeproxy_sync_proxy_rules_duration_seconds_bucket",
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
            "kubeproxy_network_programming_duration_seconds_bucket",
            "process_resident_memory_bytes",
        ):
            assert name in text
        assert p.get("proxyMode")[1] == "userspace"
        log = p.log()
        assert "Using userspace Proxier" in log and log.count("falling back to the userspace proxier") == 1
        assert "Starting service config controller" in log and "Starting endpoint slice config controller" in log


def test_invalid_mode_and_unknown_flag_fail_like_kube_proxy(tmp_path: Path, api: Any) -> None:
    kp = KubeProxy(tmp_path, api, "x", "127.0.10.203", mode="bogus")
    out = subprocess.run(kp.argv(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert 'KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "bogus"' in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "pykubeadm", "component", "kube-proxy", "--no-such-flag=1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "Error: unknown flag: --no-such-flag" in out.stderr
