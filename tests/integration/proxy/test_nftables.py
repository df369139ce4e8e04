"""kube-proxy `mode: nftables` as a real process in a network namespace the test makes (and removes).

The namespace has lo up and a veth pair: the node's address 10.200.0.1 on one end, an HTTP backend on 10.200.0.2 on
the other; ClusterIPs are the apiserver's loopback range. The apiserver stays on the host's loopback and is reached
through a Unix-socket relay, so no packet of this test leaves the namespace and the host's nftables are never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node, NodeStatus, Service
from lightkube.resources.discovery_v1 import EndpointSlice
from tests.integration.proxy._support import wait_until

from pykubeadm.api.componentconfigs import default_kube_proxy_config

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and nftables need root"),
    pytest.mark.skipif(shutil.which("nft") is None, reason='no "nft" command (Debian package "nftables")'),
    pytest.mark.skipif(shutil.which("ip") is None, reason='no "ip" command (Debian package "iproute2")'),
]

NODE, NODE_IP, BACKEND_IP = "kp-nft", "10.200.0.1", "10.200.0.2"
RELAY = Path(__file__).with_name("_relay.py")
OTHER_TABLE = "table ip other-owner {\n\tchain keep {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr 192.0.2.1 drop\n\t}\n}\n"


def run(*argv: str, check: bool = True, ns: str | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    return subprocess.run(full, capture_output=True, text=True, check=check, timeout=60, **kw)


def start(argv: list[str], log: Path, ns: str | None = None) -> subprocess.Popen[bytes]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else argv
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    with open(log, "ab") as fh:
        return subprocess.Popen(full, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def netns() -> Iterator[str]:
    name = f"kp-test-{uuid.uuid4().hex[:8]}"
    run("ip", "netns", "add", name)
    try:
        run("ip", "link", "set", "lo", "up", ns=name)
        run("ip", "link", "add", "kpv0", "type", "veth", "peer", "name", "kpv1", ns=name)
        for dev, addr in (("kpv0", NODE_IP), ("kpv1", BACKEND_IP)):
            run("ip", "addr", "add", f"{addr}/24", "dev", dev, ns=name)
            run("ip", "link", "set", dev, "up", ns=name)
        run("nft", "-f", "-", input=OTHER_TABLE, ns=name)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=60)


@pytest.fixture(scope="module")
def cluster(netns: str, api: Any, admin: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("nft")
    procs: list[subprocess.Popen[bytes]] = []
    host_tables = run("nft", "list", "tables").stdout
    other_before = run("nft", "list", "table", "ip", "other-owner", ns=netns).stdout
    try:
        sock = d / "api.sock"
        procs.append(
            start([sys.executable, str(RELAY), "unix-to-tcp", str(sock), api.host, str(api.port)], d / "relay-host.log")
        )
        wait_until(sock.exists, 30, "host relay")
        procs.append(
            start(
                [sys.executable, str(RELAY), "tcp-to-unix", "127.0.0.1", str(api.port), str(sock)],
                d / "relay-ns.log",
                netns,
            )
        )
        wait_until(lambda: "ready" in (d / "relay-ns.log").read_text(), 30, "namespace relay")
        node = admin.create(Node.from_dict({"metadata": {"name": NODE}}))
        body = node.to_dict()
        body["status"] = {"addresses": [{"type": "InternalIP", "address": NODE_IP}]}
        admin.replace(NodeStatus.from_dict(body), NODE)
        www = d / "www"
        www.mkdir()
        (www / "index.html").write_text("nft-backend")
        backend_port = 8080
        procs.append(
            start(
                [sys.executable, "-m", "http.server", str(backend_port), "--bind", BACKEND_IP, "--directory", str(www)],
                d / "backend.log",
                netns,
            )
        )
        doc = default_kube_proxy_config(user={"mode": "nftables"})
        doc["clientConnection"]["kubeconfig"] = str(api.kubeconfig_for("system:kube-proxy"))
        doc["healthzBindAddress"] = "127.0.0.1:10256"  # the namespace's own loopback
        doc["metricsBindAddress"] = "127.0.0.1:10249"
        config = d / "config.conf"
        config.write_text(yaml.safe_dump(doc))
        argv = [
            sys.executable,
            "-m",
            "pykubeadm",
            "component",
            "kube-proxy",
            f"--config={config}",
            f"--hostname-override={NODE}",
        ]
        kp = start(argv, d / "kube-proxy.log", netns)
        procs.append(kp)

        def healthy() -> bool:
            if kp.poll() is not None:
                raise RuntimeError((d / "kube-proxy.log").read_text()[-3000:])
            return run("curl", "-sf", "http://127.0.0.1:10256/healthz", ns=netns, check=False).returncode == 0

        wait_until(healthy, 60, "kube-proxy healthz")
        yield {
            "ns": netns,
            "kube_proxy": kp,
            "argv": argv,
            "log": d / "kube-proxy.log",
            "port": backend_port,
            "host_tables": host_tables,
            "other": other_before,
        }
    finally:
        for p in reversed(procs):
            stop(p)


def table(ns: str) -> str:
    out = run("nft", "list", "table", "ip", "kube-proxy", ns=ns, check=False)
    return out.stdout if out.returncode == 0 else ""


def curl(ns: str, url: str) -> subprocess.CompletedProcess[str]:
    return run("curl", "-s", "--max-time", "5", url, ns=ns, check=False)


def make(admin: Client, name: str, port: int | None, **spec: Any) -> Service:
    svc = admin.create(
        Service.from_dict(
            {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]} | spec,
            }
        )
    )
    if port is not None:
        admin.create(
            EndpointSlice.from_dict(
                {
                    "metadata": {
                        "name": f"{name}-x1",
                        "namespace": "default",
                        "labels": {"kubernetes.io/service-name": name},
                    },
                    "addressType": "IPv4",
                    "endpoints": [{"addresses": [BACKEND_IP], "conditions": {"ready": True}, "nodeName": NODE}],
                    "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
                }
            )
        )
    return svc


def test_clusterip_and_nodeport_rules_carry_traffic(cluster: dict[str, Any], admin: Client) -> None:
    ns = cluster["ns"]
    svc = make(admin, "nft-web", cluster["port"])
    ip, node_port = svc.spec.clusterIP, svc.spec.ports[0].nodePort
    rules = wait_until(
        lambda: (t := table(ns)) and f"tcp . {node_port} : goto external-" in t and t, 30, "NodePort rule"
    )
    assert f"{ip} . tcp . 80 : goto service-" in rules
    assert "numgen random mod 1 vmap" in rules and f"dnat to {BACKEND_IP}:{cluster['port']}" in rules
    assert f"elements = {{ {NODE_IP} }}" in rules  # nodeport-ips
    assert wait_until(lambda: curl(ns, f"http://{ip}:80/").stdout, 30, "ClusterIP traffic") == "nft-backend"
    assert (
        wait_until(lambda: curl(ns, f"http://{NODE_IP}:{node_port}/").stdout, 30, "NodePort traffic") == "nft-backend"
    )


def test_service_without_endpoints_is_rejected(cluster: dict[str, Any], admin: Client) -> None:
    ns = cluster["ns"]
    svc = make(admin, "nft-empty", None, type="ClusterIP")
    ip = svc.spec.clusterIP
    wait_until(
        lambda: f'{ip} . tcp . 80 comment "default/nft-empty:http" : goto reject-chain' in table(ns),
        30,
        "reject element",
    )
    out = curl(ns, f"http://{ip}:80/")
    assert out.returncode == 7, out  # curl: connection refused


def test_deleting_the_service_removes_its_rules(cluster: dict[str, Any], admin: Client) -> None:
    ns = cluster["ns"]
    svc = admin.get(Service, "nft-web", namespace="default")
    admin.delete(Service, "nft-web", namespace="default")
    wait_until(lambda: svc.spec.clusterIP not in table(ns), 30, "ClusterIP element gone")
    wait_until(lambda: "default/nft-web/" not in table(ns), 30, "service and endpoint chains gone")


def test_cleanup_removes_only_the_kube_proxy_table(cluster: dict[str, Any]) -> None:
    ns = cluster["ns"]
    stop(cluster["kube_proxy"])
    assert table(ns)
    out = run(*cluster["argv"][:-2], "--cleanup", ns=ns, check=False)
    assert out.returncode == 0, out.stderr
    tables = run("nft", "list", "tables", ns=ns).stdout
    assert "kube-proxy" not in tables and "table ip other-owner" in tables
    assert run("nft", "list", "table", "ip", "other-owner", ns=ns).stdout == cluster["other"]
    assert run("nft", "list", "tables").stdout == cluster["host_tables"]  # the host's nftables were never touched
    log = cluster["log"].read_text()
    assert "Using nftables Proxier" in log and "falling back" not in log


def test_reset_removes_the_kube_proxy_tables_and_nothing_else(cluster: dict[str, Any]) -> None:
    ns = cluster["ns"]
    run(
        "nft",
        "-f",
        "-",
        input="add table ip kube-proxy\nadd table ip6 kube-proxy\nadd chain ip kube-proxy services\n",
        ns=ns,
    )
    script = (
        "import types\n"
        "from pykubeadm.phases.reset.proxy_rules import remove_proxy_rules\n"
        "remove_proxy_rules(types.SimpleNamespace(layout=types.SimpleNamespace(root='/'), dry_run=False, out=print))\n"
    )
    out = run(sys.executable, "-c", script, ns=ns)
    assert '[reset] Removing the nftables table "kube-proxy" (ip, ip6)' in out.stdout
    tables = run("nft", "list", "tables", ns=ns).stdout
    assert "kube-proxy" not in tables and "table ip other-owner" in tables
