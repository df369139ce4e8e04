"""pods/log through the API server against a kubelet we control: the request reaches the Node's InternalIP and kubelet
port with the apiserver's kubelet client certificate, query options are passed on, errors come back as Status, and a
kubelet's redirect is refused rather than followed with the apiserver's credentials."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from pykubeadm.testing.apiserver import free_port, running_apiserver

pytestmark = pytest.mark.integration


class Kubelet:
    """A TLS server on 127.0.0.1 that plays a kubelet: it records what it was asked and answers as told."""

    def __init__(self, ctx: ssl.SSLContext):
        self.port = free_port()
        self.ctx = ctx
        self.seen: list[tuple[str, str, str | None]] = []  # (path, query, client CN)
        self.redirect_hits = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        cn = next((v for rdn in (peer or {}).get("subject", ()) for k, v in rdn if k == "commonName"), None)
        self.seen.append((request.path, request.query_string, cn))
        if request.match_info["container"] == "redirect":
            raise web.HTTPFound(f"https://127.0.0.1:{self.port}/elsewhere")
        if request.match_info["container"] == "missing":
            return web.Response(status=404, text='container "missing" not found')
        return web.Response(text="line 1\nline 2\n")

    async def _elsewhere(self, _: web.Request) -> web.Response:
        self.redirect_hits += 1
        return web.Response(text="secret")

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        app.router.add_get("/elsewhere", self._elsewhere)
        self.runner = web.AppRunner(app)
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Kubelet]]:
    with running_apiserver(tmp_path_factory.mktemp("podlog")) as api:
        cert, key = api.pki.sign("kubelet-n1", server=True, ips=["127.0.0.1"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        ctx.load_verify_locations(str(api.pki.ca_cert))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        with Kubelet(ctx) as kubelet:
            from kubernetes import client

            c = api.python_client()
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
            v1.create_namespaced_service_account("default", {"metadata": {"name": "default"}})  # no controller here
            containers = [{"name": n, "image": "x"} for n in ("app", "redirect", "missing")]
            v1.create_namespaced_pod(
                "default", {"metadata": {"name": "p1"}, "spec": {"nodeName": "n1", "containers": containers}}
            )
            with contextlib.closing(c):
                yield api, kubelet


def test_logs_reach_the_kubelet_with_the_apiserver_client_certificate(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubelet = cluster
    res = api.kubectl("logs", "p1", "-c", "app", "--tail=1", "--limit-bytes=100")  # type: ignore[attr-defined]
    assert res.stdout == "line 1\nline 2\n"
    path, query, cn = kubelet.seen[-1]
    assert path == "/containerLogs/default/p1/app"
    assert "tailLines=1" in query and "limitBytes=100" in query
    assert cn is not None and "kubelet-client" in cn  # --kubelet-client-certificate of the test apiserver


def test_kubelet_errors_and_choices_come_back_as_status(cluster) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    res = api.kubectl("logs", "p1", "-c", "missing", check=False)  # type: ignore[attr-defined]
    assert res.returncode != 0 and 'container "missing" not found' in res.stderr
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    c = api.python_client()  # type: ignore[attr-defined]
    with contextlib.closing(c), pytest.raises(ApiException) as err:
        client.CoreV1Api(c).read_namespaced_pod_log("p1", "default")  # kubectl would pick a default container
    assert err.value.status == 400
    assert "a container name must be specified for pod p1, choose one of: [app redirect missing]" in err.value.body


def test_a_kubelet_redirect_is_not_followed(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubelet = cluster
    res = api.kubectl("logs", "p1", "-c", "redirect", check=False)  # type: ignore[attr-defined]
    assert res.returncode != 0 and "redirects are not followed" in res.stderr
    assert kubelet.redirect_hits == 0
