"""The network-namespace lab end to end (`lab up --topology netns`): nodes in namespaces of their own on the lab's
bridge, reached from the host only through `<lab>/kubeconfig` (the relay on 127.0.0.1), `lab exec`, a NodePort
published with `--publish`, and `lab down` leaving the host as it found it."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from tests.e2e.test_lab import _kill_leftovers, _processes_under, pykubeadm

from pykubeadm.layout import Layout

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]

WORKERS = ["lab-worker", "lab-worker2"]
NODES = ["lab-control-plane", *WORKERS]
NODE_PORT = 30080


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _out(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout


def _host_state(lab_dir: Path) -> dict[str, set[str]]:
    """What the lab could leave in the host: named namespaces, links, nftables tables, mounts, its processes."""
    mounts = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}
    return {
        "netns": set(_out("ip", "netns", "list").split("\n")) - {""},
        "links": {line.split(":")[1].strip().split("@")[0] for line in _out("ip", "-o", "link").splitlines()},
        "addresses": set(re.findall(r"inet (\S+)", _out("ip", "-4", "-o", "addr"))),
        "nft": set(_out("nft", "list", "tables").splitlines()),
        "mounts": mounts,
        "processes": {str(p) for p in _processes_under(lab_dir)},
    }


@dataclass
class NetnsLab:
    dir: Path
    published: int
    before: dict[str, set[str]]
    up_output: str

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def kubectl(self, *args: str, input: str | None = None) -> str:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res.stdout

    def exec(self, node: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        return pykubeadm("lab", "exec", "--dir", str(self.dir), node, "--", *cmd, timeout=60)

    def address(self, node: str) -> str:
        nodes = yaml.safe_load((self.dir / ".lab/nodes.yaml").read_text())["nodes"]
        return str(next(n["address"] for n in nodes if n["name"] == node))


@contextlib.contextmanager
def netns_lab_up(lab_dir: Path, *args: str, timeout: float = 240) -> Iterator[str]:
    """`lab up --topology netns ARGS` in `lab_dir` (its output), `lab down` after, whatever happened."""
    res = pykubeadm("lab", "up", "--dir", str(lab_dir), "--topology", "netns", *args, timeout=timeout)
    try:
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        yield res.stdout
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        _kill_leftovers(lab_dir)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsLab]:
    lab_dir = tmp_path_factory.mktemp("netns") / "lab"
    before = _host_state(lab_dir)
    port = _free_port()
    # the built-in runtime: the lab's Pods run `python3` from the image map (offline), not python:3 from a registry
    with netns_lab_up(lab_dir, "--workers", "2", "--runtime", "builtin", "--publish", f"{port}:{NODE_PORT}") as output:
        yield NetnsLab(lab_dir, port, before, output)


def test_lab_up_says_which_topology_it_built(lab: NetnsLab) -> None:
    lines = [line for line in lab.up_output.splitlines() if line.startswith("[lab] Topology:")]
    assert len(lines) == 1 and lines[0].startswith("[lab] Topology: netns"), lab.up_output[:2000]


def test_nodes_ready_on_lab_addresses_through_the_host_kubeconfig(lab: NetnsLab) -> None:
    config = yaml.safe_load(lab.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert lab.kubeconfig.stat().st_mode & 0o777 == 0o600
    rows = [line.split() for line in lab.kubectl("get", "nodes", "-o", "wide", "--no-headers").splitlines()]
    assert {r[0]: r[1] for r in rows} == dict.fromkeys(NODES, "Ready")
    for r in rows:
        assert r[5] == lab.address(r[0]) and r[5].startswith("172.18."), r


def test_each_node_has_its_own_address_and_hostname(lab: NetnsLab) -> None:
    res = lab.exec("lab-worker", "ip", "-4", "-o", "addr")
    assert res.returncode == 0, res.stderr
    assert f"inet {lab.address('lab-worker')}/16" in res.stdout
    assert "127.0.10." not in res.stdout
    for node in NODES:
        res = lab.exec(node, "hostname")
        assert res.returncode == 0 and res.stdout.strip() == node, (node, res.stdout, res.stderr)


def test_nodes_keep_kubeadms_bind_addresses_and_no_hostname_override(lab: NetnsLab) -> None:
    """A node with a network of its own is configured as kubeadm configures a node (issue #41): the controller-manager
    and scheduler bind kubeadm's 127.0.0.1, and the kubelet gets no --hostname-override (its UTS namespace gives it
    the node's name)."""
    cp = Layout(lab.dir / "lab-control-plane")
    for component in ("kube-controller-manager", "kube-scheduler"):
        command = yaml.safe_load(cp.manifest(component).read_text())["spec"]["containers"][0]["command"]
        assert "--bind-address=127.0.0.1" in command, (component, command)
    for node in NODES:
        flags = Layout(lab.dir / node).kubelet_env_file.read_text()
        assert "--hostname-override" not in flags, (node, flags)


def test_every_process_of_a_node_runs_in_its_namespaces(lab: NetnsLab) -> None:
    from pykubeadm.phases.reset.processes import node_processes

    for node in NODES:
        ns = {kind: os.stat(lab.dir / ".lab/netns" / node / kind).st_ino for kind in ("net", "uts")}
        pids = node_processes(lab.dir / node)
        assert len(pids) >= 2, (node, pids)  # its kubelet and kube-proxy at least
        for pid in pids:
            try:
                net = os.stat(f"/proc/{pid}/ns/net").st_ino
            except FileNotFoundError:
                continue  # ended meanwhile
            assert net == ns["net"], (node, pid, Path(f"/proc/{pid}/cmdline").read_bytes()[:200])
        kubelet = int(Layout(lab.dir / node).kubelet_pid_file.read_text())
        assert os.stat(f"/proc/{kubelet}/ns/uts").st_ino == ns["uts"]  # (a container has a UTS namespace of its own)


def test_the_host_namespace_holds_no_lab_address_or_link(lab: NetnsLab) -> None:
    now = _host_state(lab.dir)
    assert not any(a.startswith("172.18.") for a in now["addresses"] - lab.before["addresses"])
    assert not {n for n in now["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}


def test_kube_proxy_runs_nftables_in_each_node_and_service_ips_answer(lab: NetnsLab) -> None:
    dns = lab.kubectl("-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")
    assert dns == "10.96.0.10"
    res = lab.exec("lab-worker", "nft", "list", "tables")
    assert "table ip kube-proxy" in res.stdout, res.stdout + res.stderr
    probe = "import socket; socket.create_connection(('10.96.0.1', 443), timeout=5).close(); print('ok')"
    deadline = time.monotonic() + 30
    while True:  # kube-proxy's first sync after the node's start
        res = lab.exec("lab-worker2", "python3", "-c", probe)
        if res.stdout.strip() == "ok" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert res.stdout.strip() == "ok", res.stderr


def test_kube_dns_answers_on_its_cluster_ip_inside_a_node(lab: NetnsLab) -> None:
    query = (
        "import dns.resolver; r = dns.resolver.Resolver(configure=False); r.nameservers = ['10.96.0.10']; "
        "print(r.resolve('kubernetes.default.svc.cluster.local', 'A', lifetime=5)[0])"
    )
    deadline = time.monotonic() + 30
    while True:  # CoreDNS may still be starting
        res = lab.exec("lab-worker", sys.executable, "-c", query)
        if res.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert res.stdout.strip() == "10.96.0.1", res.stderr[-1500:]


def test_nodes_were_not_ready_until_the_pod_network_then_ready(lab: NetnsLab) -> None:
    """Before the lab applies its network addon the first control plane's Node carries the kubelet's
    network-not-ready message (what `lab up` read from the API and said); then every Node is Ready."""
    from pykubeadm.kubelet.builtin.podnetwork import NETWORK_NOT_READY

    line = f"[lab] lab-control-plane before the Pod network: Ready=False (KubeletNotReady): {NETWORK_NOT_READY}"
    assert line in lab.up_output.splitlines(), lab.up_output[-3000:]
    applied = [i for i, x in enumerate(lab.up_output.splitlines()) if "Installed the Pod network addon kindnet" in x]
    assert applied and applied[0] > lab.up_output.splitlines().index(line)
    nodes = json.loads(lab.kubectl("get", "nodes", "-o", "json"))["items"]
    for node in nodes:
        ready = next(cd for cd in node["status"]["conditions"] if cd["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("True", "KubeletReady"), ready


def _pod_cidrs(lab: NetnsLab) -> dict[str, ipaddress.IPv4Network]:
    cidrs = {}
    for node in json.loads(lab.kubectl("get", "nodes", "-o", "json"))["items"]:
        spec = node["spec"]
        assert spec["podCIDRs"] == [spec["podCIDR"]], spec
        cidrs[node["metadata"]["name"]] = ipaddress.ip_network(spec["podCIDR"])
    return cidrs


def test_each_node_has_its_own_pod_cidr_inside_the_pod_subnet(lab: NetnsLab) -> None:
    cidrs = _pod_cidrs(lab)
    assert sorted(cidrs) == sorted(NODES)
    for net in cidrs.values():
        assert net.subnet_of(ipaddress.ip_network("10.244.0.0/16")) and net.prefixlen == 24, cidrs
    nets = list(cidrs.values())
    assert not [(a, b) for i, a in enumerate(nets) for b in nets[i + 1 :] if a.overlaps(b)], cidrs


def test_coredns_runs_on_pod_ips_behind_kube_dns(lab: NetnsLab) -> None:
    slices = json.loads(
        lab.kubectl(
            "-n", "kube-system", "get", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns", "-o", "json"
        )
    )["items"]
    addresses = [a for s in slices for e in s.get("endpoints") or [] for a in e["addresses"]]
    assert len(addresses) == 2 and all(
        ipaddress.ip_address(a) in ipaddress.ip_network("10.244.0.0/16") for a in addresses
    )


@dataclass
class Web:
    #: Pod name → (node, Pod IP)
    pods: dict[str, tuple[str, str]]
    cluster_ip: str


@pytest.fixture(scope="module")
def web(lab: NetnsLab) -> Web:
    """The issue's Deployment (4 × `python3 -m http.server 80`) behind a NodePort Service on the published port. Its
    Pods stop within a second when deleted: http.server, PID 1 of its container, ignores SIGTERM, so kube's 30 s grace
    period would be waited out in full (test_deleting_pods_frees_their_ips)."""
    create = ["create", "deployment", "web", "--image=python:3", "--replicas=4", "--dry-run=client", "-o", "json"]
    made = json.loads(lab.kubectl(*create, "--", "python3", "-m", "http.server", "80"))
    made["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    lab.kubectl("create", "-f", "-", input=json.dumps(made))
    lab.kubectl("create", "service", "nodeport", "web", "--tcp=80:80", f"--node-port={NODE_PORT}")
    lab.kubectl("rollout", "status", "deployment/web", "--timeout=120s")
    pods = {}
    for pod in json.loads(lab.kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        pods[pod["metadata"]["name"]] = (pod["spec"]["nodeName"], pod["status"].get("podIP", ""))
    cluster_ip = lab.kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
    return Web(pods, cluster_ip)


def test_four_web_pods_on_two_workers_each_with_its_own_ip_in_its_nodes_pod_cidr(lab: NetnsLab, web: Web) -> None:
    assert len(web.pods) == 4, web.pods
    assert {node for node, _ in web.pods.values()} == set(WORKERS), web.pods  # both serve port 80 on one node
    ips = [ip for _, ip in web.pods.values()]
    assert len(set(ips)) == 4, ips
    cidrs = _pod_cidrs(lab)
    for name, (node, ip) in web.pods.items():
        assert ipaddress.ip_address(ip) in cidrs[node], (name, node, ip, cidrs[node])
    ready = lab.kubectl("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")
    assert ready == "4"


def _http_from_pod(lab: NetnsLab, pod: str, url: str, timeout: float = 60.0) -> None:
    """GET `url` from inside `pod` (its own network namespace) until it answers 200."""
    code = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).status)"
    deadline = time.monotonic() + timeout
    while True:  # kube-proxy's sync and CoreDNS's readiness may follow the Pods by a moment
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(lab.kubeconfig), "exec", pod, "--", "python3", "-c", code, url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if res.returncode == 0 and res.stdout.strip() == "200":
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{url} from {pod}: {res.stdout[-500:]} {res.stderr[-1500:]}")
        time.sleep(0.3)


@pytest.mark.parametrize("client_node", WORKERS)
def test_a_pod_reaches_a_pod_on_the_other_worker_the_cluster_ip_and_the_service_name(
    lab: NetnsLab, web: Web, client_node: str
) -> None:
    client = next(name for name, (node, _) in web.pods.items() if node == client_node)
    other = next(ip for node, ip in web.pods.values() if node != client_node)
    assert ipaddress.ip_address(web.cluster_ip) in ipaddress.ip_network("10.96.0.0/12")
    _http_from_pod(lab, client, f"http://{other}/")
    _http_from_pod(lab, client, f"http://{web.cluster_ip}/")
    _http_from_pod(lab, client, "http://web.default.svc.cluster.local/")


def test_a_published_node_port_answers_on_the_hosts_loopback(lab: NetnsLab, web: Web) -> None:
    deadline = time.monotonic() + 60
    last: object = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{lab.published}/", timeout=3) as resp:
                assert resp.status == 200
                return
        except OSError as err:
            last = err
            time.sleep(0.3)
    pytest.fail(f"nothing answered on the published 127.0.0.1:{lab.published}: {last}")


HOST_PORT_POD = """
apiVersion: v1
kind: Pod
metadata: {name: hostport}
spec:
  nodeName: lab-worker
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: python:3
    command: [python3, -m, http.server, "80"]
    ports: [{containerPort: 80, hostPort: 8080}]
"""


def test_a_host_port_answers_on_its_nodes_lab_address(lab: NetnsLab, web: Web) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.kubeconfig), "apply", "-f", "-"],
        input=HOST_PORT_POD,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    lab.kubectl("wait", "--for=condition=Ready", "pod/hostport", "--timeout=60s")
    code = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).status)"
    url = f"http://{lab.address('lab-worker')}:8080/"
    deadline = time.monotonic() + 30
    while True:
        res = lab.exec("lab-worker2", "python3", "-c", code, url)
        if res.stdout.strip() == "200" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert res.stdout.strip() == "200", res.stderr[-1500:]


def _host_local_ips(lab: NetnsLab, node: str) -> set[str]:
    """The addresses host-local holds on `node` (one file per address in its store)."""
    store = Layout(lab.dir / node).host("/var/lib/cni/networks")
    return {p.name for p in store.glob("*/*") if re.fullmatch(r"[0-9.]+", p.name)}


def _pod_ips_by_node(lab: NetnsLab) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {n: set() for n in NODES}
    for pod in json.loads(lab.kubectl("get", "pods", "-A", "-o", "json"))["items"]:
        if pod["spec"].get("hostNetwork") or not pod["status"].get("podIP"):
            continue
        out[pod["spec"]["nodeName"]].add(pod["status"]["podIP"])
    return out


def test_deleting_pods_frees_their_ips(lab: NetnsLab, web: Web) -> None:
    held = {n: _host_local_ips(lab, n) for n in WORKERS}
    for node, ip in web.pods.values():
        assert ip in held[node], (node, ip, held)
    lab.kubectl("delete", "deployment", "web", "--wait=true")
    lab.kubectl("delete", "pod", "hostport", "--wait=true")
    deadline = time.monotonic() + 60
    while True:  # host-local's store holds exactly the addresses of the Pods still running (CoreDNS, local-path)
        left = {n: _host_local_ips(lab, n) for n in WORKERS}
        running = _pod_ips_by_node(lab)
        if all(left[n] == running[n] for n in WORKERS) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert all(left[n] == running[n] for n in WORKERS), (left, running)
    assert not {ip for _, ip in web.pods.values()} & set().union(*left.values())


def _wait_ready(lab: NetnsLab, node: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(lab.kubeconfig), "get", "node", node, "--no-headers"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        status = res.stdout.split()[1] if res.returncode == 0 and res.stdout.split() else res.stderr
        if status == "Ready":
            return
        time.sleep(0.3)
    pytest.fail(f"{node} is not Ready: {status}")


def test_stop_start_reset_and_join_again_keep_the_node_in_its_namespaces(lab: NetnsLab) -> None:
    for args in (["stop", "lab-worker2"], ["start", "lab-worker2"]):
        res = pykubeadm("lab", *args, "--dir", str(lab.dir))
        assert res.returncode == 0, res.stdout + res.stderr
    kubelet = int(Layout(lab.dir / "lab-worker2").kubelet_pid_file.read_text())
    worker_net = lab.dir / ".lab/netns/lab-worker2/net"
    assert os.stat(f"/proc/{kubelet}/ns/net").st_ino == os.stat(worker_net).st_ino
    _wait_ready(lab, "lab-worker2")
    res = pykubeadm("lab", "reset", "lab-worker2", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stdout + res.stderr
    res = pykubeadm("lab", "join", "--dir", str(lab.dir), "--node", "lab-worker2")
    assert res.returncode == 0, res.stdout + res.stderr
    _wait_ready(lab, "lab-worker2")
    res = lab.exec("lab-worker2", "ip", "-4", "-o", "addr")
    assert f"inet {lab.address('lab-worker2')}/16" in res.stdout


def test_zz_lab_down_leaves_the_host_as_before(lab: NetnsLab) -> None:
    res = pykubeadm("lab", "down", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stderr
    after = _host_state(lab.dir)
    assert not after["processes"], after["processes"]
    ours = str(lab.dir)
    assert not [m for m in after["mounts"] if m.startswith(ours)]
    assert not {n for n in after["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}
    assert not {a for a in after["addresses"] - lab.before["addresses"] if a.startswith("172.18.")}
    assert after["nft"] - lab.before["nft"] == set()
    # the lab names no namespace in /run/netns at all; other tests of the project (pk-*) may come and go meanwhile
    assert {n for n in after["netns"] - lab.before["netns"] if not n.startswith("pk-")} == set()
    assert list(lab.dir.iterdir()) == []
