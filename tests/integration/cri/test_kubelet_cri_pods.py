"""A real kubelet against a real apiserver, with a real containerd as its CRI runtime (all on free loopback ports,
their files under tmp dirs): busybox Pods built offline run on containerd with `containerd://` IDs and answer HTTP,
`kubectl logs` reads their CRI log files, CrashLoopBackOff restarts with growing delays, a 16Mi limit ends in
OOMKilled, an exec readiness probe makes a Pod Ready, the image's ENTRYPOINT runs when `command` is unset, a pull
from a registry wanting credentials fails with its 401 (ErrImagePull), a deleted Pod is gone within its grace period
+ 2 s with no container left, and a kubelet killed and started again keeps the same container IDs and restart counts.
The Pods use the node's network (hostNetwork), their servers bound to 127.0.0.1 on free ports.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.apiserver.test_exec_proxy import background, wait_for_line
from tests.integration.kubelet.kubelet_procs import KubeletProcess

from pykubeadm.containerd.daemon import ContainerdProcess
from pykubeadm.containerd.images import import_archive
from pykubeadm.containerd.ociimage import ImageConfig, LayerFile, write_oci_archive
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.testing.apiserver import ApiServer, free_port
from pykubeadm.testing.images import BUSYBOX
from pykubeadm.testing.registry import LocalRegistry, registry_skip_reason

from .conftest import BUSYBOX_IMAGE

pytestmark = [pytest.mark.integration]
asyncio_module = pytest.mark.asyncio(loop_scope="module")

NODE = "cri-node"
KUBECTL = {v: f"/usr/lib/google-cloud-sdk/bin/kubectl.1.{v}" for v in (27, 33)}
ENTRY_IMAGE = "pykubeadm.test/entry:1"


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def embedded_kubeconfig(server: ApiServer, cert: Path, key: Path) -> str:
    """A kubeconfig with its credentials inline (the kubelet reads file paths under its node root)."""

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "k", "cluster": {"server": server.url, "certificate-authority-data": b64(server.pki.ca_cert)}}
            ],
            "users": [{"name": "u", "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "current-context": "c",
        }
    )


class Node:
    """A kubelet process whose node root is containerd's, so the CRI log files are where the kubelet reads them."""

    def __init__(self, root: Path, server: ApiServer, containerd: ContainerdProcess) -> None:
        self.root = root
        self.port, self.healthz = free_port(), free_port()
        cert, key = server.client_cert(f"system:node:{NODE}", ["system:nodes"])
        (root / "etc/kubernetes/pki").mkdir(parents=True, exist_ok=True)
        (root / "etc/kubernetes/kubelet.conf").write_text(embedded_kubeconfig(server, cert, key))
        (root / "etc/kubernetes/pki/ca.crt").write_bytes(server.pki.ca_cert.read_bytes())
        (root / "var/lib/kubelet").mkdir(parents=True, exist_ok=True)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDNS": ["10.96.0.10"],
            "clusterDomain": "cluster.local",
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.healthz,
            "port": self.port,
            "containerRuntimeEndpoint": containerd.endpoint,
            "resolvConf": "",
        }
        (root / "var/lib/kubelet/config.yaml").write_text(yaml.safe_dump(config))
        self.kubelet = KubeletProcess(
            root,
            [
                "--kubeconfig=/etc/kubernetes/kubelet.conf",
                "--config=/var/lib/kubelet/config.yaml",
                "--node-ip=127.0.0.1",
                f"--hostname-override={NODE}",
                "--static-pod-backoff=1",
            ],
            root.parent / "kubelet.log",
        )


@pytest.fixture(scope="module")
def node(api_server: ApiServer, containerd: ContainerdProcess) -> Iterator[Node]:
    root = containerd.cfg.layout.root
    archive = root.parent / "entry.oci.tar"
    write_oci_archive(
        archive,
        ENTRY_IMAGE,
        ImageConfig(entrypoint=["/bin/sh", "-c"], cmd=["echo from-the-entrypoint; exec sleep 3600"]),
        files=[LayerFile("/bin/busybox", BUSYBOX)],
        symlinks={"/bin/sh": "/bin/busybox", "/bin/sleep": "/bin/busybox", "/bin/echo": "/bin/busybox"},
        dirs=["/tmp", "/proc", "/sys", "/dev", "/etc"],
    )
    import_archive(containerd.cfg, archive)
    n = Node(root, api_server, containerd)
    n.kubelet.start()
    try:
        yield n
    finally:
        n.kubelet.stop()


def pod(name: str, *containers: dict[str, Any], **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": NODE,
                "hostNetwork": True,
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 5,
                "containers": list(containers),
                **spec,
            },
        }
    )


def get_pod(server: ApiServer, name: str) -> dict[str, Any]:
    res = server.kubectl("get", "pod", name, "-o", "json", check=False)
    return dict(json.loads(res.stdout)) if res.returncode == 0 else {}


def status_of(server: ApiServer, name: str, i: int = 0) -> dict[str, Any]:
    statuses = (get_pod(server, name).get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[i])


def running(server: ApiServer, name: str) -> dict[str, Any] | None:
    st = status_of(server, name)
    return st if "running" in (st.get("state") or {}) else None


def http_get(port: int) -> bytes:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(f"http://127.0.0.1:{port}/index.html", timeout=5) as r:
        return bytes(r.read())


def test_a_busybox_pod_runs_on_containerd(api_server: ApiServer, node: Node, containerd: ContainerdProcess) -> None:
    port = free_port()
    web = {
        "name": "web",
        "image": BUSYBOX_IMAGE,
        "command": [
            "sh",
            "-c",
            f"mkdir -p /www && echo hello-from-busybox > /www/index.html && echo started && "
            f"exec httpd -f -v -p 127.0.0.1:{port} -h /www",
        ],
        "readinessProbe": {"exec": {"command": ["cat", "/www/index.html"]}, "periodSeconds": 1},
    }
    api_server.kubectl("create", "-f", "-", input=pod("web", web))
    st = wait_for(lambda: running(api_server, "web"), 60, "web running")
    assert st["containerID"].startswith("containerd://"), st
    assert st["imageID"], st
    assert wait_for(lambda: status_of(api_server, "web").get("ready"), 30, "web ready (exec readiness probe)")
    assert http_get(port) == b"hello-from-busybox\n"
    logs = api_server.kubectl("logs", "web").stdout
    assert "started" in logs
    stamped = api_server.kubectl("logs", "web", "--timestamps").stdout
    assert stamped.split(" ", 1)[0].endswith("Z") and "started" in stamped
    metrics = wait_for(lambda: _resource_metric(api_server, node, "web"), 30, "web in /metrics/resource")
    assert float(metrics.split()[1]) > 0, metrics  # the runtime's working set of the container
    with background(["kubectl", "logs", "-f", "--tail=0", "web"], api_server.kubectl_env()) as (_, lines):
        wait_for_line(lines, "response:200", lambda: http_get(port))  # httpd -v logs each answer: -f shows it


@asyncio_module
async def test_the_node_reports_the_cri_runtimes_version(api_server: ApiServer, node: Node, cri: CRIClient) -> None:
    """nodeInfo.containerRuntimeVersion is the runtime's own (`containerd://1.6.20~ds1`, as `kubectl get nodes -o
    wide` shows it), not the built-in runtime's, once the kubelet has a CRI runtime."""
    version = await cri.version()
    node_obj = json.loads(api_server.kubectl("get", "node", NODE, "-o", "json").stdout)
    assert node_obj["status"]["nodeInfo"]["containerRuntimeVersion"] == (
        f"{version.runtime_name}://{version.runtime_version}"
    )


def _kubectl(server: ApiServer, minor: int, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL[minor], *args], env=server.kubectl_env(), capture_output=True, text=True, input=input, timeout=60
    )


@pytest.fixture(scope="module")
def srv(api_server: ApiServer, node: Node) -> int:
    """A running busybox httpd Pod `srv` on containerd (with an env var); its port."""
    port = free_port()
    spec = {
        "name": "srv",
        "image": BUSYBOX_IMAGE,
        "command": [
            "sh",
            "-c",
            f"mkdir /www && echo forwarded > /www/index.html && exec httpd -f -p 127.0.0.1:{port} -h /www",
        ],
        "env": [{"name": "GREETING", "value": "from-containerd"}],
    }
    api_server.kubectl("create", "-f", "-", input=pod("srv", spec))
    wait_for(lambda: running(api_server, "srv"), 60, "srv running")
    return port


def _upgrades(stderr: str, subresource: str, pod: str = "srv") -> list[str]:
    """The methods of kubectl -v=7's requests for `subresource`: GET is a WebSocket upgrade, POST a SPDY one (1.27
    logs `POST https://…`, 1.33 `"Request" verb="GET" url="https://…"`)."""
    found = (re.search(r'verb="(\w+)"|\b(GET|POST) https://', line) for line in stderr.splitlines())
    return [
        m.group(1) or m.group(2)
        for m, line in zip(found, stderr.splitlines(), strict=True)
        if m and f"/pods/{pod}/{subresource}" in line
    ]


@pytest.mark.parametrize("minor", sorted(KUBECTL))
def test_exec_and_port_forward_through_the_runtimes_streaming_server(
    api_server: ApiServer, srv: int, minor: int
) -> None:
    """1.33 speaks WebSocket (exec v5, port-forward SPDY tunnelled in WebSocket) and 1.27 SPDY; containerd 1.6's
    streaming server speaks only SPDY for these: the API server translates for 1.33, which never falls back."""
    res = _kubectl(api_server, minor, "-v=7", "exec", "srv", "--", "sh", "-c", 'echo "$GREETING"; cat /proc/1/cmdline')
    assert res.returncode == 0 and res.stdout.startswith("from-containerd\nhttpd"), (minor, res)
    sent = _upgrades(res.stderr, "exec")
    method = "GET" if minor == 33 else "POST"  # GET: a WebSocket upgrade; POST: SPDY
    assert sent == [method], (minor, res.stderr)  # one upgrade: no second try over SPDY
    assert "101 Switching Protocols" in res.stderr and "fallback" not in res.stderr.lower(), res.stderr
    res = _kubectl(api_server, minor, "exec", "-i", "srv", "--", "sh", "-c", "cat; exit 3", input="piped\n")
    assert (res.returncode, res.stdout) == (3, "piped\n"), (minor, res)
    assert "command terminated with exit code 3" in res.stderr, res.stderr
    local = free_port()
    argv = [KUBECTL[minor], "-v=7", "port-forward", "pod/srv", f"{local}:{srv}"]
    with background(argv, api_server.kubectl_env(), collect="stderr") as (proc, log):
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"127.0.0.1:{local} -> {srv}" in line, (line, log)
        assert http_get(local) == b"forwarded\n"
        assert _upgrades("".join(log), "portforward") == [method], (minor, log)
        assert "fallback" not in "".join(log).lower(), log


def test_kubectl_exec_keeps_stdin_open_and_answers_each_line(api_server: ApiServer, srv: int) -> None:
    """kubectl 1.33 (WebSocket v5 → SPDY to containerd): each line is answered while stdin stays open; closing stdin
    ends the shell, whose exit code is kubectl's."""
    argv = [KUBECTL[33], "exec", "-i", "srv", "--", "sh", "-c", 'while read l; do echo "got $l"; done; exit 5']
    proc = subprocess.Popen(
        argv,
        env=api_server.kubectl_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for i in range(3):
            proc.stdin.write(f"line {i}\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == f"got line {i}\n"  # answered before the next line is sent
        proc.stdin.close()
        assert proc.wait(30) == 5
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.parametrize("minor", sorted(KUBECTL))
def test_attach_through_the_runtimes_streaming_server(api_server: ApiServer, node: Node, minor: int) -> None:
    """kubectl attach (1.33 WebSocket v5, translated; 1.27 SPDY) follows a containerd container's output."""
    name = f"ticker{minor}"
    ticker = {"name": "ticker", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", "while true; do date; sleep 0.2; done"]}
    api_server.kubectl("create", "-f", "-", input=pod(name, ticker))
    wait_for(lambda: running(api_server, name), 60, f"{name} running")
    argv = [KUBECTL[minor], "-v=7", "attach", name]
    with background(argv, api_server.kubectl_env()) as (proc, lines):
        wait_for_line(lines, "UTC")  # busybox date: `Mon Dec  7 22:40:01 UTC 2026`, a new line every 0.2 s
        assert proc.poll() is None  # still attached
    assert proc.stderr is not None
    log = proc.stderr.read()
    assert _upgrades(log, "attach", name) == ["GET" if minor == 33 else "POST"], log  # no second try
    api_server.kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false")


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_python_client_exec_on_a_containerd_pod(api_server: ApiServer, srv: int, protocol: str) -> None:
    """The official Python client's `stream()`: v5 is translated by the API server, v4 goes through to containerd."""
    from kubernetes import client
    from kubernetes.stream import stream

    c = api_server.python_client()
    try:
        resp = stream(
            client.CoreV1Api(c).connect_get_namespaced_pod_exec,
            "srv",
            "default",
            command=["sh", "-c", 'read l; echo "out $l $GREETING"; echo err >&2; read l; exit 4'],
            stdin=True,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
            _headers={"sec-websocket-protocol": protocol},
        )
        try:
            assert resp.subprotocol == protocol
            resp.write_stdin("hi\n")
            assert resp.readline_stdout(timeout=30) == "out hi from-containerd"  # answered while stdin is open
            resp.write_stdin("bye\n")
            resp.run_forever(timeout=30)
            assert resp.read_stderr() == "err\n"
            assert resp.returncode == 4
        finally:
            resp.close()
    finally:
        c.close()


def _resource_metric(server: ApiServer, node: Node, pod: str) -> str | None:
    """The kubelet's container_memory_working_set_bytes sample of `pod`'s container (an admin client cert)."""
    cert, key = server.client_cert("metrics-reader", ["system:masters"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the kubelet's self-signed serving certificate
    ctx.load_cert_chain(str(cert), str(key))
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
    with direct.open(f"https://127.0.0.1:{node.port}/metrics/resource", timeout=10) as r:
        text = r.read().decode()
    prefix = f'container_memory_working_set_bytes{{container="{pod}",namespace="default",pod="{pod}"}}'
    return next((line for line in text.splitlines() if line.startswith(prefix)), None)


def test_the_image_entrypoint_runs_without_a_command(api_server: ApiServer, node: Node) -> None:
    api_server.kubectl("create", "-f", "-", input=pod("entry", {"name": "entry", "image": ENTRY_IMAGE}))
    wait_for(lambda: running(api_server, "entry"), 60, "entry running")
    wait_for(lambda: "from-the-entrypoint" in api_server.kubectl("logs", "entry").stdout, 30, "entrypoint output")


def test_crash_loop_back_off_with_growing_delays(api_server: ApiServer, node: Node) -> None:
    crash = {"name": "crash", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", "echo attempt; exit 3"]}
    api_server.kubectl("create", "-f", "-", input=pod("crash", crash))
    seen: list[float] = []
    last = -1

    def restarted() -> bool:
        nonlocal last
        count = int(status_of(api_server, "crash").get("restartCount") or 0)
        if count != last:
            last = count
            seen.append(time.monotonic())
        return count >= 4

    wait_for(restarted, 90, "4 restarts")
    st = status_of(api_server, "crash")
    assert st["lastState"]["terminated"]["exitCode"] == 3 and st["lastState"]["terminated"]["reason"] == "Error"
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert gaps[-1] > gaps[0] + 1.0, gaps  # 1 s doubling: the waits grow
    wait_for(
        lambda: (
            (status_of(api_server, "crash").get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"
        ),
        30,
        "CrashLoopBackOff",
    )
    assert "attempt" in api_server.kubectl("logs", "crash", "--previous").stdout


def test_oom_killed_under_a_16mi_limit(api_server: ApiServer, node: Node) -> None:
    hog = {
        "name": "hog",
        "image": BUSYBOX_IMAGE,
        "command": ["dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"],
        "resources": {"limits": {"memory": "16Mi"}},
    }
    api_server.kubectl("create", "-f", "-", input=pod("hog", hog, restartPolicy="Never"))
    term = wait_for(lambda: (status_of(api_server, "hog").get("state") or {}).get("terminated"), 60, "hog terminated")
    assert term["reason"] == "OOMKilled" and term["exitCode"] == 137, term


def test_a_pull_without_the_secret_is_err_image_pull(
    api_server: ApiServer, node: Node, containerd: ContainerdProcess, tmp_path: Path
) -> None:
    reason = registry_skip_reason(auth=True)
    if reason:
        pytest.skip(reason)
    from pykubeadm.containerd.config import write_registry_hosts
    from pykubeadm.testing.images import write_busybox_image

    reg = LocalRegistry(tmp_path / "registry", users={"puller": "pw-for-the-test"})
    reg.start()
    try:
        image = reg.push(write_busybox_image(tmp_path / "b.tar", "x/busybox:1"), "team/busybox:1.35")
        write_registry_hosts(containerd.cfg.layout, reg.host, f"http://{reg.host}")
        spec = {"name": "private", "image": image, "command": ["sleep", "3600"]}
        api_server.kubectl("create", "-f", "-", input=pod("private", spec))
        waiting = wait_for(
            lambda: (status_of(api_server, "private").get("state") or {}).get("waiting", {}).get("message"),
            60,
            "ErrImagePull",
        )
        st = status_of(api_server, "private")["state"]["waiting"]
        assert st["reason"] in ("ErrImagePull", "ImagePullBackOff") and "401 Unauthorized" in waiting, st
        # with the pull secret, the next Pod runs
        auth = {"auths": {reg.host: {"username": "puller", "password": "pw-for-the-test"}}}
        api_server.kubectl(
            "create",
            "secret",
            "generic",
            "regcred",
            "--type=kubernetes.io/dockerconfigjson",
            f"--from-literal=.dockerconfigjson={json.dumps(auth)}",
        )
        api_server.kubectl("create", "-f", "-", input=pod("private2", spec, imagePullSecrets=[{"name": "regcred"}]))
        st = wait_for(lambda: running(api_server, "private2"), 60, "private2 running")
        assert "@sha256:" in st["imageID"] or st["imageID"].startswith("sha256:"), st
    finally:
        reg.stop()


@asyncio_module
async def test_a_restarted_kubelet_keeps_ids_and_counts(api_server: ApiServer, node: Node, cri: CRIClient) -> None:
    keep = {"name": "keep", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    flap = {"name": "flap", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", "sleep 1; exit 1"]}
    api_server.kubectl("create", "-f", "-", input=pod("keep", keep))
    api_server.kubectl("create", "-f", "-", input=pod("flap", flap))
    before = wait_for(lambda: running(api_server, "keep"), 60, "keep running")
    wait_for(lambda: status_of(api_server, "flap").get("restartCount", 0) >= 2, 60, "flap restarted twice")
    flaps = int(status_of(api_server, "flap")["restartCount"])
    proc = node.kubelet.proc
    assert proc is not None
    proc.kill()  # no chance to tidy up: the next kubelet finds what containerd still runs
    proc.wait(10)
    node.kubelet.start()
    uid = get_pod(api_server, "keep")["metadata"]["uid"]
    await asyncio.to_thread(
        wait_for,
        lambda: "adopted sandbox" in node.kubelet.log().split("default/keep")[-1] or None,
        60,
        "keep adopted",
    )
    after = await asyncio.to_thread(wait_for, lambda: running(api_server, "keep"), 60, "keep running again")
    assert (after["containerID"], after["restartCount"]) == (before["containerID"], 0)
    await asyncio.to_thread(
        wait_for, lambda: status_of(api_server, "flap").get("restartCount", 0) > flaps, 60, "flap restarting on"
    )
    sandboxes = await cri.list_pod_sandbox(api.PodSandboxFilter(label_selector={"io.kubernetes.pod.uid": uid}))
    assert len(sandboxes) == 1  # no second sandbox for an adopted Pod
    flap_uid = get_pod(api_server, "flap")["metadata"]["uid"]
    flap_ids = await cri.list_containers(api.ContainerFilter(label_selector={"io.kubernetes.pod.uid": flap_uid}))
    attempts = sorted(c.metadata.attempt for c in flap_ids)
    assert attempts[-1] >= flaps, attempts  # the count went on from where it was, not from 0


@asyncio_module
async def test_delete_within_the_grace_period_leaves_no_container(
    api_server: ApiServer, node: Node, cri: CRIClient
) -> None:
    gone = {"name": "gone", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}  # sleep ignores SIGTERM as PID 1
    api_server.kubectl("create", "-f", "-", input=pod("gone", gone))
    wait_for(lambda: running(api_server, "gone"), 60, "gone running")
    uid = get_pod(api_server, "gone")["metadata"]["uid"]
    started = time.monotonic()
    await asyncio.to_thread(api_server.kubectl, "delete", "pod", "gone", "--grace-period=3")
    # `sleep` ignores SIGTERM: the delete returns because the kubelet kills it once the 3 s grace period is over.
    # The bound only tells that from a hang (the "grace + 2 s" is a speed figure, for benchmarks).
    assert time.monotonic() - started < 3 + 30
    left = await cri.list_containers(api.ContainerFilter(label_selector={"io.kubernetes.pod.uid": uid}))
    assert list(left) == []
    assert await cri.list_pod_sandbox(api.PodSandboxFilter(label_selector={"io.kubernetes.pod.uid": uid})) == []


def test_python_client_port_forward_on_a_containerd_pod(api_server: ApiServer, srv: int) -> None:
    """The official Python client's `portforward` (WebSocket channels, v4.channel.k8s.io) goes through the kubelet to
    containerd's streaming server as it came."""
    from kubernetes import client
    from kubernetes.stream import portforward

    c = api_server.python_client()
    try:
        pf = portforward(client.CoreV1Api(c).connect_get_namespaced_pod_portforward, "srv", "default", ports=str(srv))
        sock = pf.socket(srv)
        sock.settimeout(30)
        sock.sendall(b"GET /index.html HTTP/1.0\r\nHost: srv\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        sock.close()
        assert reply.startswith(b"HTTP/1.1 200 OK") and reply.endswith(b"forwarded\n"), reply
        assert pf.error(srv) is None
    finally:
        c.close()
