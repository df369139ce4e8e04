"""kubectl exec / attach / port-forward through the API server to our kubelet's streaming server, with real processes.

kubectl 1.33 speaks WebSocket (v5 channels; port-forward as SPDY tunnelled in WebSocket), kubectl 1.27 speaks
SPDY/3.1; both go through the API server's upgrade-aware proxy to a KubeletServer whose container is a real
`python3 -m http.server` process. RBAC: without `create` on pods/exec, kubectl gets kube's Forbidden message.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from pykubeadm.kubelet.server import KubeletServer
from pykubeadm.testing.apiserver import free_port, running_apiserver

pytestmark = pytest.mark.integration

KUBECTL = {v: f"/usr/lib/google-cloud-sdk/bin/kubectl.1.{v}" for v in range(27, 34)}
#: Every installed minor: 1.27-1.29 exec over SPDY, 1.30+ over WebSocket; port-forward tunnels SPDY in WebSocket from 1.31
ALL_MINORS = [m for m in KUBECTL if os.access(KUBECTL[m], os.X_OK)]
#: The oldest and the newest, for the rest.
MINORS = [m for m in (27, 33) if m in ALL_MINORS]


@dataclass
class Ref:
    """A ContainerRef for a process the test started."""

    pid: int | None
    env: dict[str, str]
    cwd: str | None
    log_path: Path
    pod_ip: str = "127.0.0.1"
    enter_prefix: list[str] = field(default_factory=list)
    stdin: asyncio.StreamWriter | None = None


class Kubelet:
    """Our KubeletServer on 127.0.0.1 in a thread, with one Pod `default/web` whose container `app` is `ref`."""

    def __init__(self, ctx: ssl.SSLContext, ref: Ref):
        self.port = free_port()
        self.ctx = ctx
        self.ref = ref
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    def locate(self, namespace: str, pod: str, container: str) -> Ref | str:
        if (namespace, pod) != ("default", "web"):
            return f'pod "{pod}" in namespace "{namespace}" not found'
        if container != "app":
            return f'container "{container}" in pod "{pod}" is not available'
        return self.ref

    async def _start(self) -> None:
        pod = {"metadata": {"namespace": "default", "name": "web"}, "spec": {"containers": [{"name": "app"}]}}
        server = KubeletServer(
            node_name="n1",
            client=lambda: None,
            pods=lambda: [pod],
            containers=self.locate,
            anonymous=False,
            webhook_authn=False,
            authorization_mode="AlwaysAllow",
        )
        self.runner = web.AppRunner(server.app())
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port, ssl_context=self.ctx).start()

    def __enter__(self) -> Kubelet:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *_: object) -> None:
        if self.runner is not None:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@contextlib.contextmanager
def background(
    argv: list[str], env: dict[str, str], collect: str = "stdout"
) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """Run `argv` in its own process group, collecting the lines of `collect` (stdout or stderr) in a thread;
    always killed and reaped. The other stream stays readable as a pipe."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    lines: list[str] = []
    pipe = proc.stdout if collect == "stdout" else proc.stderr
    assert pipe is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(pipe.readline, "")), daemon=True)
    reader.start()
    try:
        yield proc, lines
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        reader.join(10)


def wait_for_line(lines: list[str], text: str, poke: Callable[[], object] = lambda: None, timeout: float = 30) -> None:
    """Wait until a collected line contains `text`, calling `poke` (something that makes output) meanwhile."""
    deadline = time.monotonic() + timeout
    while not any(text in line for line in lines) and time.monotonic() < deadline:
        poke()
        time.sleep(0.2)
    assert any(text in line for line in lines), lines


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"http.server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Kubelet, int]]:
    root = tmp_path_factory.mktemp("exec")
    (root / "www").mkdir()
    (root / "www" / "hello.txt").write_text("hello through the forward\n")
    http_port = free_port()
    log_path = root / "app.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", str(http_port), "--bind", "127.0.0.1"],
            cwd=root / "www",
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    try:
        _wait_listening(http_port, proc)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GREETING": "from-the-container", "HOME": "/"}
        ref = Ref(pid=proc.pid, env=env, cwd=str(root / "www"), log_path=log_path)
        with running_apiserver(root / "api") as api:
            cert, key = api.pki.sign("kubelet-n1", server=True, ips=["127.0.0.1"])
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(cert), str(key))
            ctx.load_verify_locations(str(api.pki.ca_cert))
            ctx.verify_mode = ssl.CERT_OPTIONAL
            with Kubelet(ctx, ref) as kubelet:
                from kubernetes import client

                c = api.python_client()
                try:
                    v1 = client.CoreV1Api(c)
                    v1.create_node(
                        {
                            "metadata": {"name": "n1"},
                            "status": {
                                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
                            },
                        }
                    )
                    v1.create_namespaced_service_account("default", {"metadata": {"name": "default"}})
                    containers = [{"name": "app", "image": "python:3", "ports": [{"containerPort": http_port}]}]
                    v1.create_namespaced_pod(
                        "default", {"metadata": {"name": "web"}, "spec": {"nodeName": "n1", "containers": containers}}
                    )
                    pod = v1.read_namespaced_pod("web", "default")
                    pod.status.phase = "Running"
                    v1.replace_namespaced_pod_status("web", "default", pod)
                finally:
                    c.close()
                yield api, kubelet, http_port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def kubectl(api, minor: int, *args: str, input: str | None = None, timeout: float = 60, kubeconfig=None):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [KUBECTL[minor], *args],
        env=api.kubectl_env(kubeconfig),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        check=False,
    )


@pytest.mark.parametrize("minor", ALL_MINORS)
def test_exec_output_env_and_cwd(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    res = kubectl(api, minor, "exec", "web", "--", "sh", "-c", 'echo "$GREETING"; ls; echo oops >&2')
    assert res.returncode == 0, res.stderr
    assert res.stdout == "from-the-container\nhello.txt\n"
    assert res.stderr == "oops\n"


@pytest.mark.parametrize("minor", MINORS)
def test_exec_exit_code(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    res = kubectl(api, minor, "exec", "web", "-c", "app", "--", "sh", "-c", "exit 3")
    assert res.returncode == 3
    assert "command terminated with exit code 3" in res.stderr


@pytest.mark.parametrize("minor", MINORS)
def test_exec_stdin(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    res = kubectl(api, minor, "exec", "-i", "web", "--", "sh", "-c", "tr a-z A-Z; echo done", input="abc\ndef\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "ABC\nDEF\ndone\n"


def _run_in_terminal(api, argv: list[str], rows: int, cols: int) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """Run kubectl with a pseudo-terminal (of rows x cols) as its stdin and stdout; (exit code, what it printed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        argv, env=api.kubectl_env(), stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: kubectl closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(30), out.decode(errors="replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        os.close(master)


@pytest.mark.parametrize("minor", MINORS)
def test_exec_tty(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    script = "test -t 0 && test -t 1 && echo is-a-tty; stty size; exit 5"
    code, out = _run_in_terminal(api, [KUBECTL[minor], "exec", "-it", "web", "--", "sh", "-c", script], 33, 111)
    lines = [line.strip() for line in out.splitlines()]
    assert "is-a-tty" in lines, out
    assert "33 111" in lines, out  # the terminal size reached the command (resize channel/stream)
    assert code == 5, out


@pytest.mark.parametrize("minor", MINORS)
def test_exec_unknown_command(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    res = kubectl(api, minor, "exec", "web", "--", "no-such-program")
    assert res.returncode != 0
    assert 'exec: "no-such-program": executable file not found in $PATH' in res.stderr


@pytest.mark.parametrize("minor", ALL_MINORS)
def test_port_forward_to_http_server(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, http_port = cluster
    local = free_port()
    argv = [KUBECTL[minor], "port-forward", "pod/web", f"{local}:{http_port}", "--address", "127.0.0.1"]
    with background(argv, api.kubectl_env(), collect="stderr") as (proc, errors):
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:LOCAL -> PORT" once it listens
        assert f"127.0.0.1:{local} -> {http_port}" in line, (line, errors)
        for _ in range(2):  # two connections over one session
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/hello.txt", timeout=30) as r:
                assert r.read() == b"hello through the forward\n"


@pytest.mark.parametrize("minor", MINORS)
def test_attach_streams_new_output(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, http_port = cluster
    marker = f"/attach-{minor}"

    def request() -> None:  # every request makes http.server log a line, written after attach started
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{http_port}{marker}", timeout=10)

    with background([KUBECTL[minor], "attach", "web", "-c", "app"], api.kubectl_env()) as (_, lines):
        wait_for_line(lines, marker, request)


@pytest.mark.parametrize("minor", MINORS)
def test_exec_needs_create_on_pods_exec(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    from kubernetes import client

    c = api.python_client()
    try:
        rbac = client.RbacAuthorizationV1Api(c)
        rbac.create_namespaced_role(
            "default",
            {
                "metadata": {"name": f"pod-reader-{minor}"},
                "rules": [
                    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get"]},
                ],
            },
        )
        rbac.create_namespaced_role_binding(
            "default",
            {
                "metadata": {"name": f"pod-reader-{minor}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"pod-reader-{minor}"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"viewer-{minor}"}],
            },
        )
    finally:
        c.close()
    kc = api.kubeconfig_for(f"viewer-{minor}")
    # a WebSocket GET needs `create` too (kubectl 1.33 then falls back to SPDY, which is refused as well)
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import stream

    c = api.python_client(kc)
    try:
        with pytest.raises(ApiException) as err:
            stream(client.CoreV1Api(c).connect_get_namespaced_pod_exec, "web", "default", command=["true"], stdout=True)
        assert "403" in str(err.value)
    finally:
        c.close()
    res = kubectl(api, minor, "exec", "web", "--", "true", kubeconfig=kc)
    assert res.returncode != 0
    assert (
        f'pods "web" is forbidden: User "viewer-{minor}" cannot create resource "pods/exec" in API group "" '
        'in the namespace "default"' in res.stderr
    ), res.stderr


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_python_client_exec(cluster, protocol: str) -> None:  # type: ignore[no-untyped-def]
    """The official Python client's `stream` (WebSocket): v5 translated to SPDY by the API server, v4 through to the
    kubelet's own WebSocket server."""
    api, _, _ = cluster
    from kubernetes import client
    from kubernetes.stream import stream

    c = api.python_client()
    try:
        v1 = client.CoreV1Api(c)
        resp = stream(
            v1.connect_get_namespaced_pod_exec,
            "web",
            "default",
            command=["sh", "-c", "echo out; echo err >&2; exit 4"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
            _headers={"sec-websocket-protocol": protocol},
        )
        assert resp.subprotocol == protocol
        resp.run_forever(timeout=30)
        assert resp.read_stdout() == "out\n"
        assert resp.read_stderr() == "err\n"
        assert resp.returncode == 4
    finally:
        c.close()


@pytest.mark.parametrize("minor", MINORS)
def test_port_forward_to_a_closed_port_reports_the_error(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = cluster
    local, closed = free_port(), free_port()
    argv = [KUBECTL[minor], "port-forward", "pod/web", f"{local}:{closed}"]
    with background(argv, api.kubectl_env(), collect="stderr") as (proc, errors):
        assert proc.stdout is not None
        assert f"-> {closed}" in proc.stdout.readline()
        with pytest.raises(OSError):  # the local connection is closed: nothing listens in the Pod
            urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=30).read()
        wait_for_line(errors, f"error forwarding port {closed} to pod web")


@pytest.mark.parametrize("minor", MINORS)
def test_exec_large_output_and_input(cluster, minor: int) -> None:  # type: ignore[no-untyped-def]
    """Megabytes both ways: far beyond SPDY's initial 64 KiB window and many WebSocket messages."""
    api, _, _ = cluster
    data = "".join(f"{i:07d}\n" for i in range(400_000))  # 3.2 MB
    res = kubectl(
        api, minor, "exec", "-i", "web", "--", "sh", "-c", "cat; head -c 2000000 /dev/zero | tr '\\0' y", input=data
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == data + "y" * 2_000_000


def test_python_client_port_forward(cluster) -> None:  # type: ignore[no-untyped-def]
    """The official Python client's `portforward` (WebSocket channels with `ports`) through the same proxy."""
    api, _, http_port = cluster
    from kubernetes import client
    from kubernetes.stream import portforward

    c = api.python_client()
    try:
        pf = portforward(
            client.CoreV1Api(c).connect_get_namespaced_pod_portforward, "web", "default", ports=str(http_port)
        )
        sock = pf.socket(http_port)
        sock.settimeout(30)
        sock.sendall(b"GET /hello.txt HTTP/1.0\r\nHost: web\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        sock.close()
        assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"hello through the forward\n")
        assert pf.error(http_port) is None
    finally:
        c.close()
