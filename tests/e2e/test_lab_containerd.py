"""A containerd lab end to end (`lab up --runtime containerd --registry`, one control plane and one worker): each
node's own containerd in the node's network namespace answering CRI with kubeadm's pause image preloaded and
kubeadm's criSocket pointing at it, `lab load` of a docker archive built here (Debian's busybox-static packed with
umoci, converted with skopeo) into every node and a Pod of it with `imagePullPolicy: Never` (its output through
`kubectl logs`), the lab's registry published on 127.0.0.1:5001 taking a push and serving `localhost:5001/busybox` to
a node's containerd through CRI PullImage, kind's local-registry-hosting ConfigMap, the issue's Deployment of that
image (`httpd -f -p 80`, 3 replicas) run by the kubelet through CRI (`containerd://` IDs) behind a ClusterIP Service
that answers a Pod, `kubectl exec -i` (1.33 and 1.27) answering line by line, `kubectl port-forward` on the host's
127.0.0.1, `kubectl delete` leaving no container (ListContainers); a second registry with htpasswd auth on the lab
network (a test's: the lab's registry stays open, as kind's) refusing a Pod without a pull secret with its 401 and
serving one with it; and `lab down` leaving no containerd, registry, shim, mount or namespace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.e2e.test_exec_interactive import _Lines
from tests.e2e.test_lab import _processes_under, pykubeadm
from tests.e2e.test_lab_netns import _host_state, netns_lab_up
from tests.e2e.test_pods import wait_for

from pykubeadm import constants as c
from pykubeadm.cri.client import CRIClient
from pykubeadm.lab import network
from pykubeadm.layout import Layout
from pykubeadm.testing.etcd import free_port
from pykubeadm.testing.images import BUSYBOX
from pykubeadm.util.child import terminate_child

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and containerd need root"),
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in ("containerd", "ctr", "docker-registry", "skopeo", "umoci"))
        or not BUSYBOX.is_file(),
        reason="needs Debian's containerd, docker-registry, skopeo, umoci and busybox-static",
    ),
]

NODES = ["lab-control-plane", "lab-worker"]
LOADED = "pykubeadm.test/loaded:1.0"
#: kubectl by minor: 1.33 execs over WebSocket, 1.27 over SPDY (the machine's kubectl picks the server's minor).
KUBECTL = {minor: f"/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}" for minor in (33, 27)}


@dataclass
class ContainerdLab:
    dir: Path
    before: dict[str, set[str]]
    up_output: str

    def endpoint(self, node: str) -> str:
        return f"unix://{Layout(self.dir / node).containerd_socket}"

    def cri(self, node: str, call: str, *args: object) -> Any:
        async def run() -> object:
            async with CRIClient(self.endpoint(node), timeout=60) as cri:
                return await getattr(cri, call)(*args)

        return asyncio.run(run())

    def run_kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = ["kubectl", "--kubeconfig", str(self.dir / "kubeconfig"), *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=90, input=input)

    def kubectl(self, *args: str, input: str | None = None) -> str:
        res = self.run_kubectl(*args, input=input)
        assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res.stdout


@dataclass
class Web:
    """The Deployment's Pods (name → the Pod as it was Ready)."""

    pods: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainerdLab]:
    lab_dir = tmp_path_factory.mktemp("ctrd") / "lab"
    before = _host_state(lab_dir)
    with netns_lab_up(lab_dir, "--workers", "1", "--runtime", "containerd", "--registry") as output:
        yield ContainerdLab(lab_dir, before, output)


def _busybox_layout(tmp: Path) -> str:
    """An OCI layout `tmp/oci` with image `busybox`: Debian's static busybox at /bin/busybox with a symlink per
    applet, `sh` as its command; built with umoci. Returns skopeo's name for it."""
    rootfs = tmp / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    (rootfs / "tmp").mkdir()
    shutil.copy2(BUSYBOX, rootfs / "bin/busybox")
    applets = subprocess.run([str(BUSYBOX), "--list-full"], capture_output=True, text=True, check=True).stdout
    for applet in applets.split():
        link = rootfs / applet
        if applet != "bin/busybox" and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    layout = tmp / "oci"
    for cmd in (
        ["umoci", "init", "--layout", str(layout)],
        ["umoci", "new", "--image", f"{layout}:busybox"],
        ["umoci", "insert", "--image", f"{layout}:busybox", str(rootfs), "/"],
        ["umoci", "config", "--image", f"{layout}:busybox", "--config.cmd", "sh"],
    ):
        subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60)
    return f"oci:{layout}:busybox"


@pytest.fixture(scope="module")
def busybox(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _busybox_layout(tmp_path_factory.mktemp("busybox"))


def _skopeo(*args: str) -> None:
    res = subprocess.run(["skopeo", "copy", "--quiet", *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_each_node_runs_its_own_containerd_in_its_network_namespace(lab: ContainerdLab) -> None:
    assert "[lab] Runtime: containerd (asked for)" in lab.up_output
    pids = set()
    for node in NODES:
        pid = int((lab.dir / f".lab/{node}-containerd.pid").read_text())
        pids.add(pid)
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert str(lab.dir / node / "etc/containerd/config.toml").encode() in args
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(lab.dir / f".lab/netns/{node}/net").st_ino
        version = lab.cri(node, "version")
        assert version.runtime_name == "containerd", version
        pause = lab.cri(node, "image_status", "registry.k8s.io/pause:3.10")
        assert pause is not None, f"kubeadm's pause image is not preloaded on {node}"
        flags = Layout(lab.dir / node).kubelet_env_file.read_text()
        assert f"--container-runtime-endpoint={lab.endpoint(node)}" in flags
    assert len(pids) == 2


def test_the_containerd_config_fits_this_machine(lab: ContainerdLab) -> None:
    import tomllib

    from pykubeadm.containerd.config import negative_oom_score_adj_refused

    config = tomllib.loads((lab.dir / "lab-worker/etc/containerd/config.toml").read_text())
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert cri["restrict_oom_score_adj"] is negative_oom_score_adj_refused()
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"
    assert cri["cni"]["conf_dir"] == str(lab.dir / "lab-worker/etc/cni/net.d")
    # the directory kindnet writes the node's conflist into is the one containerd reads
    assert any((lab.dir / "lab-worker/etc/cni/net.d").glob("*.conflist")) or "kindnet" in lab.kubectl(
        "-n", "kube-system", "get", "daemonset"
    )


def test_lab_load_imports_a_docker_archive_into_every_node(lab: ContainerdLab, busybox: str, tmp_path: Path) -> None:
    archive = tmp_path / "loaded.tar"
    _skopeo(busybox, f"docker-archive:{archive}:{LOADED}")
    res = pykubeadm("lab", "load", "--dir", str(lab.dir), str(archive), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    for node in NODES:
        assert f"[lab] {node}: loaded" in res.stdout
        tags = {tag for image in lab.cri(node, "list_images") for tag in image.repo_tags}
        assert LOADED in tags, (node, tags)


def test_lab_load_refuses_what_is_not_an_image_archive(lab: ContainerdLab, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an image")
    res = pykubeadm("lab", "load", "--dir", str(lab.dir), str(tmp_path / "notes.txt"), str(tmp_path / "x.tar"))
    assert res.returncode != 0
    assert "is not an image archive" in res.stderr + res.stdout


def test_an_image_pushed_to_the_lab_registry_is_pulled_by_a_node(lab: ContainerdLab, busybox: str) -> None:
    _skopeo("--dest-tls-verify=false", busybox, "docker://127.0.0.1:5001/busybox:latest")
    ref = lab.cri("lab-worker", "pull_image", "localhost:5001/busybox")
    assert str(ref).startswith("sha256:")
    image = lab.cri("lab-worker", "image_status", "localhost:5001/busybox:latest")
    assert image is not None and "localhost:5001/busybox:latest" in image.repo_tags


@pytest.fixture(scope="module")
def web(lab: ContainerdLab, busybox: str) -> Web:
    """The issue's Deployment of the image pushed to the lab's registry, every replica Ready, each serving a page
    naming its Pod (written with kubectl exec: busybox's httpd serves its working directory, /)."""
    _skopeo("--dest-tls-verify=false", busybox, "docker://127.0.0.1:5001/busybox:latest")
    lab.kubectl(
        "create", "deployment", "web", "--image=localhost:5001/busybox", "--replicas=3", "--", "httpd", "-f", "-p", "80"
    )

    def ready() -> list[dict[str, Any]] | None:
        pods = [
            p
            for p in json.loads(lab.kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
            if not p["metadata"].get("deletionTimestamp")
        ]
        statuses = [s for p in pods for s in p["status"].get("containerStatuses") or []]
        return pods if len(pods) == 3 and len(statuses) == 3 and all(s["ready"] for s in statuses) else None

    pods = wait_for(ready, 120, "3 web replicas Ready")
    for pod in pods:
        name = pod["metadata"]["name"]
        lab.kubectl("exec", name, "--", "sh", "-c", f"echo {name} > /index.html")
    return Web({p["metadata"]["name"]: p for p in pods})


def test_a_deployment_of_the_pushed_image_runs_on_the_nodes_containerd(lab: ContainerdLab, web: Web) -> None:
    """kubectl create deployment of `localhost:5001/busybox` (pushed to the lab's registry): 3 replicas Ready, run by
    containerd (`containerd://` IDs), each on its node's Pod network."""
    statuses = [s for p in web.pods.values() for s in p["status"]["containerStatuses"]]
    assert all(s["containerID"].startswith("containerd://") for s in statuses), statuses
    ids = {s["containerID"].removeprefix("containerd://") for s in statuses}
    running = {c.id for node in NODES for c in lab.cri(node, "list_containers")}
    assert ids <= running, (ids, running)
    assert len({p["status"]["podIP"] for p in web.pods.values()}) == 3


def test_a_service_answers_from_a_pod(lab: ContainerdLab, web: Web) -> None:
    """A ClusterIP Service in front of the Deployment answers a Pod's GET by its IP and by its name (the sandbox's
    DNS config: clusterDNS and the search path), with the page of one of the replicas."""
    lab.kubectl("expose", "deployment", "web", "--port=80")
    cluster_ip = lab.kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
    client = next(iter(web.pods))
    for url in (f"http://{cluster_ip}/", "http://web/"):

        def get(url: str = url) -> str | None:
            # busybox's `timeout`, not wget's -T (which crashes Debian's static busybox)
            res = lab.run_kubectl("exec", client, "--", "timeout", "5", "wget", "-q", "-O", "-", url)
            return res.stdout.strip() if res.returncode == 0 else None

        # kube-proxy's rules and CoreDNS may follow the Service by a moment
        assert wait_for(get, 60, f"{url} from {client}") in web.pods


def test_kubectl_exec_keeps_stdin_open_and_answers_each_line(lab: ContainerdLab, web: Web) -> None:
    """kubectl 1.33 (WebSocket) and 1.27 (SPDY): `exec -i` into a containerd container, each line typed answered
    while the stream stays open, the shell's exit code returned when stdin closes."""
    pod = next(iter(web.pods))
    for minor, kubectl in KUBECTL.items():
        argv = [kubectl, "--kubeconfig", str(lab.dir / "kubeconfig"), "exec", "-i", pod, "--", "sh"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdin is not None
            lines = _Lines(proc.stdout)
            proc.stdin.write("cat /index.html\n")
            proc.stdin.flush()
            assert lines.next(30) == f"{pod}\n", (minor, proc.stderr)
            for i in range(3):
                proc.stdin.write(f"echo line {i} from $HOSTNAME\n")
                proc.stdin.flush()
                assert lines.next(5) == f"line {i} from {pod}\n", minor
            proc.stdin.write("exit 3\n")
            proc.stdin.close()
            assert proc.wait(30) == 3, (minor, proc.stderr.read() if proc.stderr else "")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


def test_kubectl_port_forward_to_a_pod(lab: ContainerdLab, web: Web) -> None:
    """kubectl port-forward (1.33 and 1.27) to a replica's port 80: a GET on the host's 127.0.0.1 gets its page."""
    pod = next(iter(web.pods))
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    for minor, kubectl in KUBECTL.items():
        local = free_port()
        argv = [kubectl, "--kubeconfig", str(lab.dir / "kubeconfig"), "port-forward", f"pod/{pod}", f"{local}:80"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            lines = _Lines(proc.stdout)
            line = lines.next(30)
            assert f"127.0.0.1:{local} -> 80" in line, (minor, line)
            with direct.open(f"http://127.0.0.1:{local}/", timeout=10) as resp:
                assert resp.read().decode() == f"{pod}\n", minor
        finally:
            proc.kill()
            proc.wait(10)


def test_a_pod_of_a_loaded_image_runs_without_a_pull_and_kubectl_logs_shows_its_output(lab: ContainerdLab) -> None:
    """`lab load` put the image on every node (above): a Pod with `imagePullPolicy: Never` runs it, and `kubectl
    logs` reads what it wrote from the CRI log file."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "loaded"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": LOADED,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", "echo ran-the-loaded-image; exec sleep 3600"],
                }
            ]
        },
    }
    lab.kubectl("create", "-f", "-", input=json.dumps(pod))

    def running() -> bool:
        status = json.loads(lab.kubectl("get", "pod", "loaded", "-o", "json"))["status"]
        return any("running" in (s.get("state") or {}) for s in status.get("containerStatuses") or [])

    wait_for(running, 60, "the loaded image's Pod Running")
    wait_for(lambda: "ran-the-loaded-image" in lab.kubectl("logs", "loaded"), 30, "its output in kubectl logs")
    lab.kubectl("delete", "pod", "loaded", "--grace-period=1")


#: The htpasswd registry's address on the lab network (the lab's own registry is on :5000).
AUTH_REGISTRY = f"{network.GATEWAY}:5002"


@contextlib.contextmanager
def _htpasswd_registry(lab: ContainerdLab, root: Path, user: str, password: str) -> Iterator[str]:
    """A second docker-registry, asking for HTTP basic auth (htpasswd, bcrypt), in the lab's network namespace on the
    lab network; every node's containerd pulls `AUTH_REGISTRY/...` from it over http (hosts.toml). The lab's own
    registry stays open, as kind's is. Yields its host."""
    from pykubeadm.containerd.config import write_registry_hosts
    from pykubeadm.testing.registry import htpasswd_line
    from pykubeadm.util.namespaces import nsenter_prefix

    root.mkdir(parents=True)
    (root / "htpasswd").write_text(htpasswd_line(user, password))
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
        "http": {"addr": AUTH_REGISTRY},
        "auth": {"htpasswd": {"realm": "lab-private", "path": str(root / "htpasswd")}},
    }
    (root / "config.yml").write_text(yaml.safe_dump(config))
    netns = nsenter_prefix(network.network_namespace(lab.dir / ".lab"))
    with open(root / "registry.log", "ab") as log:
        proc = subprocess.Popen(
            [*netns, "docker-registry", "serve", str(root / "config.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        for node in NODES:
            write_registry_hosts(Layout(lab.dir / node), AUTH_REGISTRY, f"http://{AUTH_REGISTRY}")
        yield AUTH_REGISTRY
    finally:
        terminate_child(proc)
        for node in NODES:
            shutil.rmtree(Layout(lab.dir / node).containerd_certs_dir / AUTH_REGISTRY, ignore_errors=True)


def test_a_registry_with_htpasswd_auth_wants_the_pull_secret(lab: ContainerdLab, busybox: str, tmp_path: Path) -> None:
    """Without a pull secret the Pod waits in ErrImagePull/ImagePullBackOff with the registry's 401; a Pod with
    `imagePullSecrets` naming a docker-registry Secret runs."""
    from pykubeadm.util.namespaces import nsenter_prefix

    user, password = "puller", "pw-for-the-lab-test"
    with _htpasswd_registry(lab, tmp_path / "private", user, password) as host:
        image = f"{host}/team/busybox:1.35"
        push = [
            *nsenter_prefix(network.network_namespace(lab.dir / ".lab")),
            "skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"--dest-creds={user}:{password}",
            busybox, f"docker://{image}",
        ]  # fmt: skip

        def pushed() -> bool:  # the push into the lab network, retried until the registry serves
            return subprocess.run(push, capture_output=True, text=True, timeout=120).returncode == 0

        wait_for(pushed, 60, f"a push to {host}")

        def pod(name: str, **spec: Any) -> str:
            container = {"name": "main", "image": image, "command": ["sleep", "3600"]}
            return json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {"containers": [container], **spec},
                }
            )

        def waiting(name: str) -> dict[str, Any] | None:
            status = json.loads(lab.kubectl("get", "pod", name, "-o", "json"))["status"]
            states = [s.get("state") or {} for s in status.get("containerStatuses") or []]
            return next((s["waiting"] for s in states if s.get("waiting", {}).get("message")), None)

        lab.kubectl("create", "-f", "-", input=pod("private"))
        state = wait_for(lambda: waiting("private"), 60, "ErrImagePull")
        assert state["reason"] in ("ErrImagePull", "ImagePullBackOff"), state
        assert "401 Unauthorized" in state["message"], state
        lab.kubectl(
            "create", "secret", "docker-registry", "regcred", f"--docker-server={host}",
            f"--docker-username={user}", f"--docker-password={password}",
        )  # fmt: skip
        lab.kubectl("create", "-f", "-", input=pod("private2", imagePullSecrets=[{"name": "regcred"}]))

        def running() -> bool:
            status = json.loads(lab.kubectl("get", "pod", "private2", "-o", "json"))["status"]
            return any("running" in (s.get("state") or {}) for s in status.get("containerStatuses") or [])

        wait_for(running, 60, "the Pod with the pull secret Running")
        lab.kubectl("delete", "pod", "private", "private2", "--grace-period=1")


def test_kubectl_delete_leaves_no_container(lab: ContainerdLab, web: Web) -> None:
    """kubectl delete of the Deployment's Pods returns once they are gone, and no container or sandbox of theirs is
    left on any node's containerd (ListContainers, ListPodSandbox by the Pod's UID label)."""
    from pykubeadm.cri.v1 import api_pb2 as api

    uids = [p["metadata"]["uid"] for p in web.pods.values()]
    lab.kubectl("delete", "service", "web")
    # the Pods themselves with a short grace period (httpd as PID 1 ignores SIGTERM: the kubelet kills it after it)
    lab.kubectl("delete", "deployment", "web", "--cascade=orphan")
    lab.kubectl("delete", "replicaset", "-l", "app=web", "--cascade=orphan")
    lab.kubectl("delete", "pod", *web.pods, "--grace-period=2")  # kubectl waits until they are gone
    assert lab.kubectl("get", "pods", "-l", "app=web", "-o", "name") == ""
    for node in NODES:
        for uid in uids:
            selector = {"io.kubernetes.pod.uid": uid}
            assert list(lab.cri(node, "list_containers", api.ContainerFilter(label_selector=selector))) == [], node
            assert list(lab.cri(node, "list_pod_sandbox", api.PodSandboxFilter(label_selector=selector))) == [], node


def test_the_local_registry_hosting_configmap(lab: ContainerdLab) -> None:
    cm = json.loads(lab.kubectl("-n", "kube-public", "get", "configmap", "local-registry-hosting", "-o", "json"))
    value = yaml.safe_load(cm["data"]["localRegistryHosting.v1"])
    assert value["host"] == "localhost:5001"
    assert value["help"].startswith("https://")


def test_a_pod_sandbox_gets_an_address_from_the_workers_pod_network(lab: ContainerdLab) -> None:
    """The node's containerd makes Pod networks with the CNI config kindnet wrote for the node (its podCIDR). The
    sandbox is left running: lab down must take it, its shim and its network namespace away."""
    import ipaddress
    import uuid

    from pykubeadm.cri.v1 import api_pb2 as api

    uid = str(uuid.uuid4())
    config = api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name="probe", namespace="default", uid=uid, attempt=0),
        hostname="probe",
        log_directory=str(lab.dir / f"lab-worker/var/log/pods/default_probe_{uid}"),
        linux=api.LinuxPodSandboxConfig(),
    )
    sandbox = lab.cri("lab-worker", "run_pod_sandbox", config)
    status = lab.cri("lab-worker", "pod_sandbox_status", sandbox)
    ip = ipaddress.ip_address(status.status.network.ip)
    cidr = lab.kubectl("get", "node", "lab-worker", "-o", "jsonpath={.spec.podCIDR}")
    assert ip in ipaddress.ip_network(cidr), (ip, cidr)
    assert _containerd_leftovers(lab.dir), "no shim runs for the sandbox"


def _containerd_leftovers(lab_dir: Path) -> list[str]:
    """containerd daemons, shims and registries naming the lab dir, and mounts under it."""
    found = []
    for pid in _processes_under(lab_dir):
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        if any(word in args for word in ("containerd", "docker-registry")):
            found.append(f"{pid}: {args[:200]}")
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    found += [line.split()[4] for line in mounts if line.split()[4].startswith(f"{lab_dir}/")]
    return found


def test_zz_lab_down_leaves_no_containerd_registry_shim_mount_or_namespace(lab: ContainerdLab) -> None:
    assert lab.cri("lab-worker", "list_images")  # the lab is up
    res = pykubeadm("lab", "down", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[lab] stopped the registry" in res.stdout
    assert _containerd_leftovers(lab.dir) == []
    after = _host_state(lab.dir)
    assert not after["processes"], after["processes"]
    assert not {n for n in after["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}
    assert {n for n in after["netns"] - lab.before["netns"] if not n.startswith("pk-")} == set()
    assert not (lab.dir / ".lab/netns").exists()
    socket_links = Path(c.CONTAINERD_SOCKET_LINK_DIR)
    into_lab = [p for p in socket_links.iterdir() if str(lab.dir) in os.readlink(p)] if socket_links.is_dir() else []
    assert not into_lab, into_lab
