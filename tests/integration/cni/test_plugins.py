"""pykubeadm.cni with Debian's real plugins (bridge + host-local + portmap): a Pod namespace attached to a bridge in
another namespace standing in for the node, checked, and detached again, also by a process that only has the cache."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.cni._netns import addresses, cnitool, namespaces, needs_netns, netns_path, run

pytestmark = [pytest.mark.timeout(180), *needs_netns]

SUBNET = "10.244.7.0/24"
K8S_ARGS = [
    ["IgnoreUnknown", "1"],
    ["K8S_POD_NAMESPACE", "default"],
    ["K8S_POD_NAME", "web"],
    ["K8S_POD_UID", "uid-1"],
]


def conflist(data_dir: Path, subnet: str = SUBNET, bridge: str = "cni0") -> dict[str, Any]:
    return {
        "cniVersion": "0.4.0",
        "name": "podnet",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(data_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with namespaces() as make:
        node, pod = make("node"), make("pod")
        data = tmp_path / "networks"
        path = tmp_path / "10-podnet.conflist"
        path.write_text(json.dumps(conflist(data)))
        yield {
            "node": node,
            "pod": pod,
            "data": data / "podnet",
            "opts": {
                "conflist": str(path),
                "cache": str(tmp_path / "cache"),
                "id": uuid.uuid4().hex,
                "netns": netns_path(pod),
                "args": K8S_ARGS,
                "caps": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]},
            },
        }


def allocated(data: Path) -> list[str]:
    """The addresses host-local holds (one file per address; its own bookkeeping files aside)."""
    if not data.is_dir():
        return []
    return sorted(p.name for p in data.iterdir() if p.name[0].isdigit())


def test_add_check_del_with_the_real_plugins(env: dict[str, Any]) -> None:
    opts, node, pod = env["opts"], env["node"], env["pod"]
    out = cnitool(node, "add", **opts)
    assert "error" not in out, out
    result = out["result"]
    ip = ipaddress.ip_interface(result["ips"][0]["address"])
    assert ip.ip in ipaddress.ip_network(SUBNET) and ip.ip != ipaddress.ip_address("10.244.7.1")
    assert addresses(pod, "eth0") == [str(ip)]  # the Pod's namespace got eth0 with that address
    assert "10.244.7.1/24" in addresses(node, "cni0")  # the bridge is the gateway, in the node's namespace only
    assert allocated(env["data"]) == [str(ip.ip)]
    cache = Path(opts["cache"]) / "results" / f"podnet-{opts['id']}-eth0"
    assert json.loads(cache.read_text())["result"]["ips"] == result["ips"]

    # the Pod reaches its gateway: a server on the node's bridge address answers the Pod
    probe = "import socket,sys; s=socket.create_connection(('10.244.7.1', 8099), 5); print(s.recv(10).decode())"
    server = "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('10.244.7.1', 8099)); s.listen(); c,_=s.accept(); c.sendall(b'node'); c.close()"
    srv = subprocess.Popen(["ip", "netns", "exec", node, sys.executable, "-c", server])
    try:
        for _ in range(100):
            res = run(sys.executable, "-c", probe, ns=pod, check=False)
            if res.returncode == 0:
                break
        assert res.stdout.strip() == "node", res.stderr
    finally:
        srv.kill()
        srv.wait()

    # hostPort through portmap: its DNAT chain is in the node's namespace (iptables, nft backend)
    rules = run("nft", "list", "ruleset", ns=node).stdout
    assert "dport 8080" in rules and "10.244.7." in rules, rules

    # a new process, no in-memory state, no configuration given: DEL runs from the cache alone
    out = cnitool(node, "del", **{**opts, "conflist": None, "name": "podnet"})
    assert out == {"result": True}
    assert allocated(env["data"]) == []  # host-local freed the address
    assert addresses(pod, "eth0") == []
    assert not cache.exists()
    # a second DEL has nothing left to do
    assert cnitool(node, "del", **{**opts, "conflist": None, "name": "podnet"}) == {"result": False}


def test_check_finds_a_broken_attachment(env: dict[str, Any]) -> None:
    # without port mappings: Debian's portmap 1.1.1 fails CHECK of any mapping on a host without ip6tables chains
    # (it checks the IPv6 chain it never made); containerd never runs CHECK, the kubelet neither
    opts, node, pod = {**env["opts"], "caps": {}}, env["node"], env["pod"]
    assert "error" not in cnitool(node, "add", **opts)
    assert cnitool(node, "check", **opts) == {"result": "ok"}
    run("ip", "link", "del", "eth0", ns=pod)
    out = cnitool(node, "check", **opts)
    assert "error" in out and 'plugin type="bridge" failed (check)' in out["error"], out
    assert out["code"] != 0
    assert cnitool(node, "del", **opts) == {"result": True}
    assert allocated(env["data"]) == []


def test_plugin_errors_carry_code_and_message(env: dict[str, Any], tmp_path: Path) -> None:
    opts, node = env["opts"], env["node"]
    bad = tmp_path / "bad.conflist"
    doc = conflist(tmp_path / "networks")
    doc["plugins"][0]["ipam"]["ranges"] = [[{"subnet": "10.244.7.0/33"}]]
    bad.write_text(json.dumps(doc))
    out = cnitool(node, "add", **{**opts, "conflist": str(bad)})
    assert out["error"].startswith('plugin type="bridge" failed (add): ')
    assert "10.244.7.0/33" in out["msg"]
    assert out["code"] != 0
    missing = tmp_path / "missing.conflist"
    missing.write_text(json.dumps({"cniVersion": "0.4.0", "name": "x", "plugins": [{"type": "no-such-plugin"}]}))
    out = cnitool(node, "add", **{**opts, "conflist": str(missing)})
    assert out["msg"] == 'failed to find plugin "no-such-plugin" in path [/usr/lib/cni]'
    assert not os.path.exists(Path(opts["cache"]) / "results" / f"x-{opts['id']}-eth0")
