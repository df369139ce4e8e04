"""The kubelet with `--cni-conf-dir`, as a real process inside a network namespace the test makes (the node), against
a real apiserver on the host's loopback reached through a Unix-socket relay.

Before the node has a CNI configuration, its Node is NotReady with the real kubelet's message and a Pod without
hostNetwork is not started ("network is not ready") while a hostNetwork Pod runs on the node's address; once the conflist appears the Node turns Ready, and two Pods
both serving port 80 each get their own address in the node's podCIDR through Debian's bridge + host-local + portmap,
a hostPort included. Deleting them, and deleting one while the kubelet is down, leaves no address in host-local's
store and no namespace file behind.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.cni._netns import Procs, api_relay, namespaces, needs_netns, run, wait_until
from tests.integration.cni.test_plugins import allocated, conflist

from pykubeadm.kubelet.builtin import sandbox
from pykubeadm.kubelet.builtin.podnetwork import NETWORK_NOT_READY
from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = [
    pytest.mark.timeout(300),
    *needs_netns,
    pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and mount/PID namespaces"),
]

NODE, NODE_IP, CLIENT_IP, NS = "cni-node", "10.250.0.2", "10.250.0.3", "cni"
POD_CIDR = "10.244.1.0/24"


def pod(name: str, host_port: int | None = None) -> dict[str, Any]:
    port: dict[str, Any] = {"containerPort": 80}
    if host_port:
        port["hostPort"] = host_port
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeName": NODE,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "web",
                    "image": "python:3",
                    "command": ["python3", "-c", SERVER, name],
                    "ports": [port],
                }
            ],
        },
    }


#: Serves its Pod's name on :80 of every address of the Pod.
SERVER = (
    "import http.server, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.send_response(200); self.end_headers(); self.wfile.write(sys.argv[1].encode())\n"
    "http.server.ThreadingHTTPServer(('', 80), H).serve_forever()\n"
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[dict[str, Any]]:
    procs = Procs()
    root = tmp_path / "node"
    root.mkdir()
    with namespaces() as make, running_apiserver(tmp_path / "api") as api:
        ns, client = make("knode"), make("kclient")
        # the node's interface, its peer in another namespace: a machine next to the node
        run("ip", "link", "add", "n0", "type", "veth", "peer", "name", "n1", "netns", client, ns=ns)
        run("ip", "addr", "add", f"{NODE_IP}/24", "dev", "n0", ns=ns)
        run("ip", "link", "set", "n0", "up", ns=ns)
        run("ip", "addr", "add", f"{CLIENT_IP}/24", "dev", "n1", ns=client)
        run("ip", "link", "set", "n1", "up", ns=client)
        api_relay(procs, api, ns, tmp_path)
        api.kubectl(
            "apply",
            "-f",
            "-",
            input=yaml.safe_dump_all(
                [
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": NS}},
                ]
            ),
        )
        kubeconfig = "/etc/kubernetes/kubelet.conf"  # a node path: under the node's root, credentials embedded
        embedded_kubeconfig(api, root / kubeconfig.lstrip("/"))
        env = {"api": api, "ns": ns, "client": client, "root": root, "tmp": tmp_path, "procs": procs, "kubelets": []}

        def start_kubelet() -> subprocess.Popen[bytes]:
            argv = [
                sys.executable, "-m", "pykubeadm", "component", "kubelet",
                f"--node-root-dir={root}",
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={NODE}",
                f"--node-ip={NODE_IP}",
                "--cni-conf-dir=/etc/cni/net.d",
                "--static-pod-backoff=1",
            ]  # fmt: skip
            proc = procs.start(argv, tmp_path / "kubelet.log", ns)
            env["kubelets"].append(proc)
            return proc

        env["start_kubelet"] = start_kubelet
        try:
            yield env
        finally:
            with contextlib.suppress(Exception):  # the Pods first, while a kubelet can still release their network
                api.kubectl("delete", "pods", "--all", "-n", NS, "--wait=true", "--timeout=60s", check=False)
            procs.stop_all()
            _kill_pod_processes(root)
            _unmount_below(root)


def embedded_kubeconfig(api: ApiServer, path: Path) -> None:
    import base64

    cert, key = api.client_cert(f"system:node:{NODE}", ["system:nodes"])
    b64 = lambda p: base64.b64encode(Path(p).read_bytes()).decode()  # noqa: E731
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "node",
        "clusters": [{"name": "c", "cluster": {"server": api.url, "certificate-authority-data": b64(api.pki.ca_cert)}}],
        "users": [{"name": "u", "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": "node", "context": {"cluster": "c", "user": "u"}}],
    }
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)


def _kill_pod_processes(root: Path) -> None:
    """Whatever a kubelet of the test left running under its shims (by the pids they recorded)."""
    from pykubeadm.kubelet.builtin.shim import ShimProcess

    for shim_dir in root.glob("var/lib/kubelet/pods/*/containers/*/*"):
        proc = ShimProcess.adopt(shim_dir)
        if proc is not None and proc.running():
            proc.kill_all()


def _unmount_below(root: Path) -> None:
    from pykubeadm.kubelet.builtin import netns

    for path in root.glob("var/lib/kubelet/pods/*/netns"):
        with contextlib.suppress(OSError):
            netns.remove(path)


def node_ready(api: ApiServer) -> dict[str, Any] | None:
    res = api.kubectl("get", "node", NODE, "-o", "json", check=False)
    if res.returncode != 0:
        return None
    conds = json.loads(res.stdout)["status"].get("conditions") or []
    return next((c for c in conds if c["type"] == "Ready"), None)


def get_pod(api: ApiServer, name: str) -> dict[str, Any]:
    return dict(json.loads(api.kubectl("get", "pod", name, "-n", NS, "-o", "json").stdout))


def http_get(ns: str, url: str) -> str:
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=3).read().decode())"
    res = run(sys.executable, "-c", code, ns=ns, check=False)
    return res.stdout.strip() if res.returncode == 0 else ""


def test_pods_get_their_own_addresses_once_the_network_is_ready(node: dict[str, Any]) -> None:
    api, ns, root = node["api"], node["ns"], node["root"]

    def running(name: str) -> dict[str, Any] | None:
        st = get_pod(api, name)["status"]
        ok = st.get("phase") == "Running" and st.get("podIP") and st["containerStatuses"][0].get("ready")
        return st if ok else None

    node["start_kubelet"]()
    ready = wait_until(lambda: node_ready(api), 60, "the Node to register")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "KubeletNotReady", NETWORK_NOT_READY)

    api.kubectl("create", "-f", "-", input=json.dumps(pod("web-a")))
    wait_until(
        lambda: (
            "network is not ready: " + NETWORK_NOT_READY
            in api.kubectl("get", "events", "-n", NS, "--field-selector=reason=NetworkNotReady", "-o", "json").stdout
        ),
        30,
        "the NetworkNotReady event",
    )
    status = get_pod(api, "web-a")["status"]
    assert status.get("phase") == "Pending" and "podIP" not in status
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"

    # a hostNetwork Pod (the network addon is one) runs at once, on the node's address, its :80 the node's
    host = pod("host-web")
    host["spec"]["hostNetwork"] = True
    api.kubectl("create", "-f", "-", input=json.dumps(host))
    h = wait_until(lambda: running("host-web"), 60, "host-web running while the network is not ready")
    assert h["podIP"] == h["hostIP"] == NODE_IP
    assert wait_until(lambda: http_get(ns, f"http://{NODE_IP}/"), 30, "host-web's :80") == "host-web"
    assert (node_ready(api) or {}).get("status") == "False"

    # the network addon's part: the node's conflist appears (atomically, as a rename)
    confdir = root / "etc/cni/net.d"
    assert confdir.is_dir()  # made by the kubelet as it follows it (as containerd makes its conf dir)
    tmp = confdir / ".10-podnet.conflist.tmp"
    tmp.write_text(json.dumps(conflist(Path("/var/lib/cni/networks"), POD_CIDR)))
    tmp.rename(confdir / "10-podnet.conflist")
    wait_until(lambda: (node_ready(api) or {}).get("status") == "True", 30, "the Node to turn Ready")

    api.kubectl("create", "-f", "-", input=json.dumps(pod("web-b", host_port=8080)))

    a = wait_until(lambda: running("web-a"), 60, "web-a running")
    b = wait_until(lambda: running("web-b"), 60, "web-b running")
    net = ipaddress.ip_network(POD_CIDR)
    assert a["podIP"] != b["podIP"]
    assert ipaddress.ip_address(a["podIP"]) in net and ipaddress.ip_address(b["podIP"]) in net
    assert a["podIPs"] == [{"ip": a["podIP"]}] and a["hostIP"] == NODE_IP
    # both serve port 80, each on its own address, reached from the node
    assert wait_until(lambda: http_get(ns, f"http://{a['podIP']}/"), 30, "web-a's :80") == "web-a"
    assert wait_until(lambda: http_get(ns, f"http://{b['podIP']}/"), 30, "web-b's :80") == "web-b"
    # web-b's hostPort maps through portmap on the node's address, for a machine next to the node
    assert wait_until(lambda: http_get(node["client"], f"http://{NODE_IP}:8080/"), 30, "hostPort 8080") == "web-b"
    store = root / "var/lib/cni/networks/podnet"  # host-local's dataDir, under the node's root
    assert allocated(store) == sorted([a["podIP"], b["podIP"]])

    # a kubelet restart adopts the Pods with their addresses; a Pod deleted meanwhile is released at its start
    b_uid = get_pod(api, "web-b")["metadata"]["uid"]
    kubelet = node["kubelets"][-1]
    Procs.stop(kubelet)
    api.kubectl("delete", "pod", "web-b", "-n", NS, "--grace-period=0", "--force", "--wait=false")
    wait_until(lambda: "web-b" not in api.kubectl("get", "pods", "-n", NS).stdout, 30, "web-b gone from the API")
    node["start_kubelet"]()
    wait_until(lambda: allocated(store) == [a["podIP"]], 60, "web-b's address released")
    wait_until(lambda: not (root / "var/lib/kubelet/pods" / b_uid).exists(), 30, "web-b's directory removed")
    assert get_pod(api, "web-a")["status"]["podIP"] == a["podIP"]
    assert http_get(ns, f"http://{a['podIP']}/") == "web-a"

    api.kubectl("delete", "pod", "web-a", "-n", NS, "--wait=true", "--timeout=60s")
    wait_until(lambda: allocated(store) == [], 30, "web-a's address released")
    assert not list(root.glob("var/lib/kubelet/pods/*/netns"))
    assert not list((root / "var/lib/cni/results").iterdir())
