"""Two "nodes" (test-made namespaces joined by a veth pair), each with its podCIDR's conflist from the network
addon and Pods attached through Debian's plugins: the addon's routes carry Pod → Pod across nodes, both ways; its
agent (`pykubeadm component kindnetd`, a real process inside a node's namespace against a real apiserver) writes the
conflist from the Node's podCIDR and follows the other Nodes' routes as they come and go."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.cni._netns import (
    Procs,
    api_relay,
    cnitool,
    namespaces,
    needs_netns,
    netns_path,
    run,
    wait_until,
)

from pykubeadm.kindnet.conflist import CONFLIST_NAME, render_conflist
from pykubeadm.kindnet.manifests import kindnet_manifest
from pykubeadm.kindnet.masq import sync_masq
from pykubeadm.kindnet.routes import ROUTE_PROTO, desired_routes, sync_routes
from pykubeadm.testing.apiserver import running_apiserver

pytestmark = [pytest.mark.timeout(240), *needs_netns]

NODES = {"node-a": ("10.250.3.1", "10.244.1.0/24"), "node-b": ("10.250.3.2", "10.244.2.0/24")}


def node_object(name: str) -> dict[str, Any]:
    ip, cidr = NODES[name]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]},
    }


@pytest.fixture
def two_nodes() -> Iterator[dict[str, str]]:
    with namespaces() as make:
        ns = {"node-a": make("na"), "node-b": make("nb")}
        run("ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", ns["node-b"], ns=ns["node-a"])
        for name, n in ns.items():
            run("ip", "addr", "add", f"{NODES[name][0]}/24", "dev", "eth0", ns=n)
            run("ip", "link", "set", "eth0", "up", ns=n)
        ns["make"] = make  # type: ignore[assignment]
        yield ns


def serve(pod_ns: str, text: str, procs: Procs, log: Path) -> None:
    code = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers()\n"
        f"        self.wfile.write(({text!r} + ' to ' + self.client_address[0]).encode())\n"
        "http.server.ThreadingHTTPServer(('', 80), H).serve_forever()\n"
    )
    procs.start([sys.executable, "-c", code], log, pod_ns)


def get(ns: str, url: str) -> str:
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=3).read().decode())"
    res = run(sys.executable, "-c", code, ns=ns, check=False)
    return res.stdout.strip() if res.returncode == 0 else ""


def test_pod_to_pod_across_nodes_through_the_addons_routes(two_nodes: dict[str, Any], tmp_path: Path) -> None:
    procs = Procs()
    nodes = [node_object(n) for n in NODES]
    pod_ip: dict[str, str] = {}
    pods: dict[str, str] = {}
    try:
        for name in NODES:
            doc = render_conflist([NODES[name][1]])
            doc["plugins"][0]["ipam"]["dataDir"] = str(tmp_path / name / "networks")  # the test's, not the host's
            conf = tmp_path / name / CONFLIST_NAME
            conf.parent.mkdir()
            conf.write_text(json.dumps(doc))
            pods[name] = two_nodes["make"](f"p{name[-1]}")
            opts = {"conflist": str(conf), "cache": str(tmp_path / name / "cache"), "id": f"pod-{name}"}
            out = cnitool(two_nodes[name], "add", **opts, netns=netns_path(pods[name]))
            pod_ip[name] = out["result"]["ips"][0]["address"].split("/")[0]
            serve(pods[name], f"hello from {name}", procs, tmp_path / f"{name}.log")
            # the addon's route and masquerade logic, run against this node's namespace
            sync_masq([NODES[name][1]], ["10.244.0.0/16"], ("ip", "netns", "exec", two_nodes[name], "nft"))
            changes = sync_routes(desired_routes(nodes, name), ("ip", "-n", two_nodes[name]))
            other = "node-b" if name == "node-a" else "node-a"
            assert changes == [f"replace {NODES[other][1]} via {NODES[other][0]}"]
        for src, dst in (("node-a", "node-b"), ("node-b", "node-a")):
            url = f"http://{pod_ip[dst]}/"
            answer = wait_until(lambda u=url, s=src: get(pods[s], u), 30, f"{src}'s Pod → {dst}'s Pod")
            assert answer == f"hello from {dst} to {pod_ip[src]}"  # the Pod's own address: no NAT between Pods
        # a second pass changes nothing; a node gone takes its route with it
        assert sync_routes(desired_routes(nodes, "node-a"), ("ip", "-n", two_nodes["node-a"])) == []
        assert sync_routes(desired_routes(nodes[:1], "node-a"), ("ip", "-n", two_nodes["node-a"])) == [
            "del 10.244.2.0/24"
        ]
        assert get(pods["node-a"], f"http://{pod_ip['node-b']}/") == ""
    finally:
        procs.stop_all()


def test_the_agent_follows_the_nodes(two_nodes: dict[str, Any], tmp_path: Path) -> None:
    procs = Procs()
    ns = two_nodes["node-a"]
    conf_dir = tmp_path / "net.d"
    host_tables = run("nft", "list", "tables").stdout
    with running_apiserver(tmp_path / "api") as api:
        try:
            api_relay(procs, api, ns, tmp_path)
            # the addon's objects are what a real apiserver and kubectl accept
            applied = api.kubectl("apply", "-f", "-", input=kindnet_manifest(pod_subnet="10.244.0.0/16")).stdout
            assert (
                "daemonset.apps/kindnet created" in applied
                and "clusterrole.rbac.authorization.k8s.io/kindnet" in applied
            )
            api.kubectl("create", "-f", "-", input=yaml.safe_dump(node_object("node-b")))
            a = node_object("node-a")
            del a["spec"]
            api.kubectl("create", "-f", "-", input=yaml.safe_dump(a))
            kubeconfig = api.kubeconfig()
            argv = [sys.executable, "-m", "pykubeadm", "component", "kindnetd", f"--kubeconfig={kubeconfig}"]
            argv += ["--hostname-override=node-a", f"--cni-conf-dir={conf_dir}"]
            procs.start(argv, tmp_path / "kindnetd.log", ns)

            def routes() -> list[str]:
                out = run("ip", "-j", "-4", "route", "show", "proto", ROUTE_PROTO, ns=ns).stdout
                return [f"{r['dst']} via {r['gateway']}" for r in json.loads(out or "[]")]

            wait_until(lambda: routes() == ["10.244.2.0/24 via 10.250.3.2"], 60, "the route to node-b's Pods")
            assert not (conf_dir / CONFLIST_NAME).exists()  # node-a has no podCIDR yet: no network, NotReady
            api.kubectl("patch", "node", "node-a", "-p", json.dumps({"spec": {"podCIDR": "10.244.1.0/24"}}))
            written = wait_until(lambda: (conf_dir / CONFLIST_NAME).exists(), 30, "the conflist")
            assert written
            doc = json.loads((conf_dir / CONFLIST_NAME).read_text())
            assert doc == render_conflist(["10.244.1.0/24"])
            assert [p["type"] for p in doc["plugins"]] == ["bridge", "portmap"] and doc["cniVersion"] == "0.4.0"
            assert list(conf_dir.iterdir()) == [conf_dir / CONFLIST_NAME]  # no temporary file left behind
            # the conflist comes first (the node is Ready on it), the masquerading right after
            masq = wait_until(
                lambda: run("nft", "list", "table", "ip", "kindnet-masq", ns=ns, check=False).stdout, 30, "masquerading"
            )
            assert "ip saddr 10.244.1.0/24 ip daddr != { 10.244.1.0-10.244.2.255 } masquerade" in masq, masq  # merged
            api.kubectl("delete", "node", "node-b")
            wait_until(lambda: routes() == [], 30, "node-b's route to go")
        finally:
            procs.stop_all()
        assert "Traceback" not in (tmp_path / "kindnetd.log").read_text()
    assert run("nft", "list", "tables").stdout == host_tables  # the host's nftables untouched
