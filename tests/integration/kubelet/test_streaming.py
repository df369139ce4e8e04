"""The built-in kubelet's streaming API end to end: a joined node runs a static Pod (`python3 -m http.server`); kubectl
1.33 (WebSocket) and 1.27 (SPDY) exec into it and port-forward to it through the API server; the kubelet asks the API
(SubjectAccessReview, nodes/proxy) before it streams, so a client the API does not allow gets 403 from the kubelet."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import signal
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest
import yaml
from tests.integration.apiserver.test_exec_proxy import background, wait_for_line
from tests.integration.kubelet.controlplane import run_signer
from tests.integration.kubelet.test_tls_bootstrap import Node, apiserver, cancel, eventually  # noqa: F401

from pykubeadm.testing.etcd import free_port

pytestmark = pytest.mark.integration

KUBECTL = {v: f"/usr/lib/google-cloud-sdk/bin/kubectl.1.{v}" for v in (27, 33)}
IP = "127.0.10.31"


def _kubectl(server, minor: int, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(
        [KUBECTL[minor], *args], env=server.api.kubectl_env(), capture_output=True, text=True, input=input, timeout=60
    )


async def test_exec_and_port_forward_into_a_static_pod(apiserver, tmp_path):  # noqa: F811
    server, admin = apiserver
    node = Node(tmp_path, server, "node-s", IP)
    http_port = free_port(IP)
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "kube-system"},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "python:3.12",
                    "command": ["python3", "-u", "-m", "http.server", str(http_port), "--bind", IP],
                    "env": [{"name": "GREETING", "value": "from-the-pod"}],
                }
            ]
        },
    }
    (node.root / "etc/kubernetes/manifests/web.yaml").write_text(yaml.safe_dump(manifest))
    # kubeadm init binds its admins group (the apiserver's kubelet client certificate is in it) to cluster-admin
    await admin.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": "kubeadm:cluster-admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kubeadm:cluster-admins"}],
        },
    )
    signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
    node.kubelet.start()
    try:

        async def running():
            pod = await admin.get("/api/v1/namespaces/kube-system/pods/web-node-s")
            cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
            return pod if "running" in (cs.get("state") or {}) else None

        await eventually(running, 60, "mirror pod web-node-s running")

        async def serving():  # :10250 opens once the kubelet has its serving certificate
            try:
                _, w = await asyncio.open_connection(IP, node.port)
            except OSError:
                return False
            w.close()
            return True

        await eventually(serving, 60, "the kubelet API listening")

        for minor in KUBECTL:
            res = await asyncio.to_thread(
                _kubectl, server, minor, "exec", "-n", "kube-system", "web-node-s", "--", "sh", "-c", 'echo "$GREETING"'
            )
            assert (res.returncode, res.stdout) == (0, "from-the-pod\n"), res.stderr
            res = await asyncio.to_thread(
                _kubectl,
                server,
                minor,
                "exec",
                "-i",
                "-n",
                "kube-system",
                "web-node-s",
                "--",
                "sh",
                "-c",
                "cat; exit 3",
                input="piped\n",
            )
            assert res.returncode == 3 and res.stdout == "piped\n", res.stderr
            assert "command terminated with exit code 3" in res.stderr
            await asyncio.to_thread(_port_forward, server, minor, http_port)

        await asyncio.to_thread(_logs, server, http_port)
        await _kubelet_denies_a_client_without_nodes_proxy(server, node)
        await asyncio.to_thread(_stop_while_logs_follow, server, node, http_port)
    finally:
        await cancel(signer)
        node.kubelet.stop()


def _port_forward(server, minor: int, http_port: int) -> None:  # type: ignore[no-untyped-def]
    local = free_port()
    argv = [KUBECTL[minor], "port-forward", "-n", "kube-system", "pod/web-node-s", f"{local}:{http_port}"]
    with background(argv, server.api.kubectl_env(), collect="stderr") as (proc, errors):
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"127.0.0.1:{local} -> {http_port}" in line, (line, errors)
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=30) as r:
            assert r.status == 200 and b"Directory listing" in r.read()


def _logs(server, http_port: int) -> None:  # type: ignore[no-untyped-def]
    """kubectl logs options the kubelet applies: --tail, --limit-bytes, -f (through the API server's pods/log)."""
    pod = ["-n", "kube-system", "web-node-s"]
    last = _kubectl(server, 33, "logs", *pod, "--tail=1")
    assert last.returncode == 0 and last.stdout.count("\n") == 1 and '"GET / HTTP/1.1" 200' in last.stdout, last
    assert len(_kubectl(server, 33, "logs", *pod, "--limit-bytes=9").stdout) == 9
    marker = "/followed-line"

    def request() -> None:  # each request is a new log line: `logs -f` must show the ones written after it started
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://{IP}:{http_port}{marker}", timeout=30)

    with background([KUBECTL[27], "logs", "-f", "--tail=0", *pod], server.api.kubectl_env()) as (_, lines):
        wait_for_line(lines, marker, request)


def _stop_while_logs_follow(server, node: Node, http_port: int) -> None:  # type: ignore[no-untyped-def]
    """A `kubectl logs -f` stream open through the kubelet does not hold its stop: SIGTERM ends it without the test
    helper's SIGKILL (its servers wait 5 s for open requests, not aiohttp's default 60 s)."""
    marker = "/held-open"

    def request() -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://{IP}:{http_port}{marker}", timeout=30)

    pod = ["-n", "kube-system", "web-node-s"]
    with background([KUBECTL[33], "logs", "-f", "--tail=0", *pod], server.api.kubectl_env()) as (_, lines):
        wait_for_line(lines, marker, request)
        rc = node.kubelet.stop(timeout=20.0)
    assert rc is not None and rc != -signal.SIGKILL, rc


async def _kubelet_denies_a_client_without_nodes_proxy(server, node) -> None:  # type: ignore[no-untyped-def]
    cert, key = server.pki.sign("stranger")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(cert), str(key))
    reader, writer = await asyncio.open_connection(IP, node.port, ssl=ctx)
    try:
        writer.write(
            b"POST /exec/kube-system/web-node-s/web?command=true&output=1 HTTP/1.1\r\nHost: x\r\n"
            b"Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
            b"Content-Length: 0\r\n\r\n"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        body = await asyncio.wait_for(reader.read(1000), 30)
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.1 403"), head
    assert b"Forbidden (user=stranger, verb=create, resource=nodes, subresource=proxy)" in body
