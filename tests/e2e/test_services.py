"""Services and cluster DNS end to end: one lab (a control plane and two workers) whose kubeadm addons run for real.

kube-proxy (DaemonSet, userspace proxier) and CoreDNS (Deployment) roll out; a Deployment of two `python:3` web
servers on the two workers is reached from this test process through its ClusterIP and every node's NodePort
(round robin, ClientIP affinity, not-ready backends left out, refused once scaled to 0); from a Pod, names resolve
through the kubelet's resolv.conf and CoreDNS; dnspython asks kube-dns for SRV, PTR, CNAME and a missing name.
The lab is the e2e suites' shared one (tests/e2e/conftest.py), on its own addresses (so its own Service network).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest
from tests.e2e.sharedlab import SHARED_PREFIX
from tests.e2e.test_lab import Lab

from pykubeadm.lab.nodes import service_subnet

pytestmark = pytest.mark.e2e

PREFIX = SHARED_PREFIX
NODES = ["lab-control-plane", "lab-worker", "lab-worker2"]
DOMAIN = "cluster.local"


def wait_for(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def get_json(lab: Lab, *args: str) -> dict[str, Any]:
    return json.loads(lab.kubectl("get", *args, "-o", "json").stdout)


def apply(lab: Lab, *objs: dict[str, Any]) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


@pytest.fixture(scope="module")
def lab(shared_lab: Lab) -> Lab:
    """The e2e suites' shared lab (tests/e2e/conftest.py), its CoreDNS 2/2 Ready."""
    return shared_lab


def node_address(lab: Lab, node: str) -> str:
    return lab.kubectl("get", "node", node, "-o", "jsonpath={.status.addresses[0].address}").stdout


def cluster_ip(lab: Lab, name: str, namespace: str = "default") -> str:
    return lab.kubectl("-n", namespace, "get", "svc", name, "-o", "jsonpath={.spec.clusterIP}").stdout


def http_get(host: str, port: int, path: str = "/who") -> str:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200, (host, port, resp.status)
        return resp.read().decode().strip()
    finally:
        conn.close()


def refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(b"GET /who HTTP/1.0\r\n\r\n")
            return not s.recv(1)  # a listener with no endpoint resets or closes at once
    except (ConnectionRefusedError, ConnectionResetError):
        return True


def answers_from(host: str, port: int, want: set[str], timeout: float = 60) -> set[str]:
    """Request until every backend in `want` has answered; every answer must be one of them."""
    seen: set[str] = set()

    def step() -> bool:
        try:
            who = http_get(host, port)
        except OSError:
            return False  # the listener may not be there yet
        assert who in want, f"{host}:{port} answered {who!r}, not one of {want}"
        seen.add(who)
        return seen == want

    wait_for(step, timeout, f"answers of {sorted(want)} from {host}:{port} (seen {seen})", interval=0.05)
    return seen


# Pods share their node's address, so the web server's port must be none that CoreDNS (53, 8080 health, 8181 ready,
# 9153 metrics), kube-proxy or the kubelet holds on a worker: CoreDNS lands on the workers when they are Ready before
# the scheduler places it, and a web Pod on 8080 there could not bind (CrashLoopBackOff).
WEB_COMMAND = (
    "echo $(POD_NAME) > /www/who && touch /www/ready && cd /www && exec python3 -m http.server 8088 --bind $(POD_IP)"
)


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


WEB_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
                        ]
                    }
                },
                "containers": [
                    {
                        "name": "web",
                        "image": "python:3",
                        "command": ["sh", "-c", WEB_COMMAND],
                        "env": [_field_env("POD_NAME", "metadata.name"), _field_env("POD_IP", "status.podIP")],
                        "ports": [{"name": "http", "containerPort": 8088}],
                        "readinessProbe": {
                            "httpGet": {"path": "/ready", "port": "http"},
                            "periodSeconds": 1,
                            "failureThreshold": 1,
                        },
                        "volumeMounts": [{"name": "www", "mountPath": "/www"}],
                    }
                ],
                "volumes": [{"name": "www", "emptyDir": {}}],
                # http.server is pid 1 of its namespace and ignores TERM: scaled to 0, its Pods are SIGKILLed after
                # 1 s instead of the default 30 s (the Service answers until they are gone)
                "terminationGracePeriodSeconds": 1,
            },
        },
    },
}


def _service(name: str, **spec: Any) -> dict[str, Any]:
    ports = spec.pop("ports", [{"name": "http", "port": 80, "targetPort": "http"}])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": ports, **spec},
    }


SERVICES = [
    _service("web", type="NodePort"),
    _service("web-sticky", sessionAffinity="ClientIP"),
    _service("web-headless", clusterIP="None", ports=[{"name": "http", "port": 8088}]),
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "www.example.com"},
    },
]


@pytest.fixture(scope="module")
def web(lab: Lab) -> dict[str, str]:
    """The web Pods: name → Pod IP (one per worker), once both are Ready."""
    apply(lab, WEB_DEPLOYMENT, *SERVICES)

    def both_ready() -> dict[str, str] | None:
        pods = get_json(lab, "pods", "-l", "app=web")["items"]
        if len(pods) == 2 and all(ready(p) for p in pods):
            return {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}
        return None

    pods = wait_for(both_ready, 120, "2 web Pods Ready")
    nodes = {p["spec"]["nodeName"] for p in get_json(lab, "pods", "-l", "app=web")["items"]}
    assert nodes == {"lab-worker", "lab-worker2"}  # spread by the required anti-affinity
    return dict(pods)


def test_kube_proxy_and_coredns_roll_out_on_a_fresh_lab(lab: Lab) -> None:
    for what in ("deploy/coredns", "ds/kube-proxy"):
        res = lab.kubectl("-n", "kube-system", "rollout", "status", what, "--timeout=50s", check=False)
        assert res.returncode == 0, f"rollout status {what}: {res.stdout}{res.stderr}"
    dns_pods = get_json(lab, "-n", "kube-system", "pods", "-l", "k8s-app=kube-dns")["items"]
    assert len(dns_pods) == 2 and all(ready(p) and p["status"]["phase"] == "Running" for p in dns_pods)
    proxies = get_json(lab, "-n", "kube-system", "pods", "-l", "k8s-app=kube-proxy")["items"]
    assert sorted(p["spec"]["nodeName"] for p in proxies) == NODES
    assert all(p["status"]["phase"] == "Running" for p in proxies)
    for p in proxies:
        logs = lab.kubectl("-n", "kube-system", "logs", p["metadata"]["name"]).stdout
        assert '"Starting kube-proxy"' in logs and '"Using userspace Proxier"' in logs, logs
        assert '"Caches are synced" controller="service config"' in logs, logs
        # --hostname-override=$(NODE_NAME), expanded by the kubelet, found its Node and that Node's address
        assert f"\"Successfully retrieved NodeIPs\" NodeIPs=['{node_address(lab, p['spec']['nodeName'])}']" in logs
    for p in dns_pods:
        logs = lab.kubectl("-n", "kube-system", "logs", p["metadata"]["name"]).stdout
        assert ".:53" in logs and "CoreDNS-1.12.0" in logs, logs


def test_cluster_ip_and_every_node_port_reach_both_backends(lab: Lab, web: dict[str, str]) -> None:
    svc = get_json(lab, "svc", "web")
    ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(service_subnet(f"{PREFIX}1"))  # the lab's own network
    assert answers_from(ip, 80, set(web)) == set(web)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    for node in NODES:
        assert answers_from(node_address(lab, node), node_port, set(web)) == set(web)


def test_client_ip_session_affinity_keeps_one_backend(lab: Lab, web: dict[str, str]) -> None:
    ip = cluster_ip(lab, "web-sticky")
    first = wait_for(lambda: _try_get(ip, 80), 60, "web-sticky answering")
    assert first in web
    assert {http_get(ip, 80) for _ in range(20)} == {first}


def _try_get(host: str, port: int) -> str | None:
    try:
        return http_get(host, port)
    except OSError:
        return None


def test_names_resolve_from_a_pod_through_cluster_dns(lab: Lab, web: dict[str, str]) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "client"},
        "spec": {
            "containers": [{"name": "client", "image": "python:3", "command": ["sleep", "3600"]}],
            "terminationGracePeriodSeconds": 1,
        },
    }
    apply(lab, pod)
    wait_for(lambda: ready(get_json(lab, "pod", "client")), 60, "client Pod Ready")
    script = (
        "import json, socket, urllib.request\n"
        "def addrs(name, port=80):\n"
        "    return sorted({a[4][0] for a in socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)})\n"
        "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
        "print(json.dumps({\n"
        "    'web': addrs('web.default.svc.cluster.local'),\n"
        "    'headless': addrs('web-headless.default.svc.cluster.local', 8088),\n"
        "    'kubernetes': addrs('kubernetes.default', 443),\n"
        "    'http': opener.open('http://web:80/who', timeout=10).read().decode().strip(),\n"
        "    'resolv': open('/etc/resolv.conf').read(),\n"
        "}))\n"
    )
    res = lab.kubectl("exec", "client", "--", "python3", "-c", script, check=False)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    dns_ip = cluster_ip(lab, "kube-dns", "kube-system")
    assert f"nameserver {dns_ip}" in out["resolv"] and f"search default.svc.{DOMAIN}" in out["resolv"]
    assert out["web"] == [cluster_ip(lab, "web")]
    assert out["headless"] == sorted(web.values())
    assert out["kubernetes"] == [cluster_ip(lab, "kubernetes")]  # through the search path
    assert out["http"] in web


def _query(server: str, name: str, rdtype: str) -> dns.message.Message:
    def ask() -> dns.message.Message | None:
        try:
            return dns.query.udp(dns.message.make_query(name, rdtype), server, timeout=3)
        except (dns.exception.Timeout, OSError):
            return None

    return wait_for(ask, 30, f"an answer for {name} {rdtype} from {server}")


def test_kube_dns_answers_srv_ptr_cname_and_nxdomain(lab: Lab, web: dict[str, str]) -> None:
    server = cluster_ip(lab, "kube-dns", "kube-system")
    svc = f"web.default.svc.{DOMAIN}."
    srv = _query(server, f"_http._tcp.{svc}", "SRV")
    assert srv.rcode() == dns.rcode.NOERROR
    records = [r for rr in srv.answer for r in rr]
    assert [(r.port, r.target.to_text()) for r in records] == [(80, svc)]
    ip = cluster_ip(lab, "web")
    ptr = _query(server, dns.reversename.from_address(ip).to_text(), "PTR")
    assert [r.target.to_text() for rr in ptr.answer for r in rr] == [svc]
    cname = _query(server, f"ext.default.svc.{DOMAIN}.", "CNAME")
    assert [r.target.to_text() for rr in cname.answer for r in rr] == ["www.example.com."]
    missing = _query(server, f"missing.default.svc.{DOMAIN}.", "A")
    assert missing.rcode() == dns.rcode.NXDOMAIN and not missing.answer
    assert [rr.rdtype for rr in missing.authority] == [dns.rdatatype.SOA]
    assert missing.authority[0].name.to_text() == f"{DOMAIN}."


def test_a_backend_failing_readiness_gets_no_traffic(lab: Lab, web: dict[str, str]) -> None:
    sick, healthy = sorted(web)
    lab.kubectl("exec", sick, "--", "rm", "/www/ready")
    try:
        wait_for(lambda: not ready(get_json(lab, "pod", sick)), 30, f"{sick} not Ready")
        ip = cluster_ip(lab, "web")
        streak: list[str] = []

        def only_healthy() -> bool:
            who = _try_get(ip, 80)
            streak[:] = [*streak, who] if who == healthy else []
            return len(streak) >= 10

        wait_for(only_healthy, 30, f"traffic to {healthy} only", interval=0.05)
        assert {http_get(ip, 80) for _ in range(10)} == {healthy}
    finally:
        lab.kubectl("exec", sick, "--", "touch", "/www/ready")
        wait_for(lambda: ready(get_json(lab, "pod", sick)), 30, f"{sick} Ready again")


def test_scaled_to_zero_the_service_refuses_connections(lab: Lab, web: dict[str, str]) -> None:
    svc = get_json(lab, "svc", "web")
    ip, node_port = svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]
    lab.kubectl("scale", "deploy/web", "--replicas=0")
    targets = [(ip, 80)] + [(node_address(lab, n), node_port) for n in NODES]
    for host, port in targets:
        wait_for(lambda h=host, p=port: all(refused(h, p) for _ in range(5)), 60, f"{host}:{port} refusing")
