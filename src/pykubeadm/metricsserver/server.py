"""The metrics server's run loop: list Nodes and Pods and scrape every resolution, serve the API over HTTPS.

Started by cli.py. The first scrape happens at start, then one every `--metric-resolution` (a scrape that overruns
delays the next rather than overlapping it); each cycle's duration, points stored and per-node failures are in
/metrics under metrics-server's names. The serving certificate is --tls-cert-file/--tls-private-key-file, else a
self-signed pair written to `--cert-dir` (apiserver.crt/apiserver.key), as metrics-server makes one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pykubeadm import constants as c
from pykubeadm.controllers.app.delegatedauth import DelegatingAuth
from pykubeadm.kubelet.api import KubeClient
from pykubeadm.metricsserver.api import MetricsAPI, resource_request
from pykubeadm.metricsserver.auth import ExtensionAuth
from pykubeadm.metricsserver.scrape import Scraper
from pykubeadm.metricsserver.storage import MetricsStorage
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.tlsclientauth import request_client_certificates

__all__ = ["MetricsServer", "ServerOptions", "serving_context"]

log = logging.getLogger("metrics-server")


@dataclass
class ServerOptions:
    bind_address: str = "0.0.0.0"
    secure_port: int = 10250
    cert_dir: Path = Path("apiserver.local.config/certificates")
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    resolution: float = 60.0
    address_types: tuple[str, ...] = ()
    kubelet_port: int = 10250
    use_node_status_port: bool = False
    kubelet_ssl: ssl.SSLContext = field(default_factory=ssl.create_default_context)


def serving_context(opts: ServerOptions, host_ip: str) -> ssl.SSLContext:
    """TLS for the secure port, asking every client for a certificate (judged by ExtensionAuth)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    request_client_certificates(ctx, None)
    if opts.tls_cert_file and opts.tls_private_key_file:
        ctx.load_cert_chain(opts.tls_cert_file, opts.tls_private_key_file)
        return ctx
    cert, key = opts.cert_dir / "apiserver.crt", opts.cert_dir / "apiserver.key"
    if not (cert.is_file() and key.is_file()):
        ips = ["127.0.0.1"] + ([host_ip] if host_ip not in ("", "0.0.0.0", "::", "127.0.0.1") else [])
        _generate_in_child(cert, key, ips)
    ctx.load_cert_chain(cert, key)
    return ctx


def _write_self_signed(cert: Path, key: Path, ips: list[str]) -> None:
    from pykubeadm.controllers.app.serving import self_signed_pair

    cert_pem, key_pem = self_signed_pair("localhost", ips, [])
    cert.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(key, key_pem, mode=0o600)
    write_file_atomic(cert, cert_pem, mode=0o644)


def _generate_in_child(cert: Path, key: Path, ips: list[str]) -> None:
    """_write_self_signed in a forked child, so that what RSA key generation touches (OpenSSL's and
    cryptography's code for it, ~2 MB) is never resident in this long-running process. Called before the process
    starts any thread; a failure is an OSError naming the files."""
    pid = os.fork()
    if pid == 0:  # the child: write the pair, exit without running the parent's cleanups
        code = 0
        try:
            _write_self_signed(cert, key, ips)
        except BaseException as err:  # whatever it is, the parent reports it
            with contextlib.suppress(OSError):
                os.write(2, f"unable to generate the self-signed serving certificate: {err}\n".encode())
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(f"unable to generate a self-signed serving certificate in {cert}, {key}")


class _Metrics:
    """metrics-server's own series."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.tick = Histogram(
            "metrics_server_manager_tick_duration_seconds",
            "The total time spent collecting and storing metrics in seconds.",
            registry=self.registry,
        )
        self.requests = Counter(
            "metrics_server_kubelet_request_total",
            "Number of requests sent to Kubelet API",
            ["success"],
            registry=self.registry,
        )
        self.points = Gauge(
            "metrics_server_storage_points", "Number of metrics points stored.", ["type"], registry=self.registry
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


#: Pods are listed as metadata only (metrics-server's metadata informer): names, namespaces and labels are all it needs.
_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#: Pods are listed in pages of this many (as client-go's pager does): what one list holds at once is one page,
#: however many Pods the cluster runs.
POD_PAGE = 50


class MetricsServer:
    """Watches Nodes and Pods through `client`, scrapes with `token()`, serves on the secure port."""

    def __init__(self, client: KubeClient, auth: ExtensionAuth, token: Any, opts: ServerOptions) -> None:
        self.client = client
        self.auth = auth
        self.opts = opts
        self.storage = MetricsStorage()
        self.metrics = _Metrics()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.scraper = Scraper(
            lambda: [n["object"] for n in self.nodes.values()],
            token,
            opts.kubelet_ssl,
            address_types=opts.address_types or ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"),
            kubelet_port=opts.kubelet_port,
            use_node_status_port=opts.use_node_status_port,
            timeout=max(opts.resolution * 0.9, 1.0),
        )
        self.api = MetricsAPI(
            self.storage,
            lambda: list(self.nodes.values()),
            lambda: list(self.pods.values()),
            self.metrics.render,
        )
        self.ready = asyncio.Event()

    async def refresh_objects(self) -> None:
        """List the Nodes and Pods (their names, labels and the Nodes' addresses) before each scrape.

        A list per resolution rather than a watch: the lab's Pods reach the API through kube-proxy's Service
        address, where a watch's events may be held back; a fresh list is never staler than the scrape it serves."""
        node_list, pods = await asyncio.gather(self.client.get("/api/v1/nodes"), self._list_pods())
        nodes: dict[str, dict[str, Any]] = {}
        for n in node_list.get("items") or []:
            meta = n.get("metadata") or {}
            status = n.get("status") or {}
            nodes[meta["name"]] = {
                "name": meta["name"],
                "labels": meta.get("labels") or {},
                # what the scraper reads of the status; not its images, conditions or capacity
                "object": {"metadata": {"name": meta["name"]},
                           "status": {k: status[k] for k in ("addresses", "daemonEndpoints") if k in status}},
            }  # fmt: skip
        self.nodes, self.pods = nodes, pods

    async def _list_pods(self) -> dict[str, dict[str, Any]]:
        """namespace/name → the Pod's name, namespace and labels, listed page by page."""
        pods: dict[str, dict[str, Any]] = {}
        params: dict[str, Any] = {"limit": POD_PAGE}
        while True:
            page = await self.client.get("/api/v1/pods", params, accept=_METADATA_LIST)
            for p in page.get("items") or []:
                meta = p.get("metadata") or {}
                pods[f"{meta.get('namespace')}/{meta.get('name')}"] = {
                    "name": meta.get("name", ""),
                    "namespace": meta.get("namespace", ""),
                    "labels": meta.get("labels") or {},
                }
            params["continue"] = (page.get("metadata") or {}).get("continue")
            if not params["continue"]:
                return pods

    async def scrape_once(self) -> None:
        start = time.monotonic()
        batch = await self.scraper.scrape()
        self.storage.store(batch)
        ok = len(batch.nodes)
        self.metrics.requests.labels("true").inc(ok)
        self.metrics.requests.labels("false").inc(max(len(self.nodes) - ok, 0))
        self.metrics.points.labels("node").set(len(batch.nodes))
        self.metrics.points.labels("container").set(sum(len(v) for v in batch.pods.values()))
        self.metrics.tick.observe(time.monotonic() - start)

    async def _scrape_loop(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self.refresh_objects()
                await self.scrape_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Failed to scrape nodes")
            await asyncio.sleep(max(self.opts.resolution - (time.monotonic() - started), 0.0))

    def _host(self) -> str:
        host = self.opts.bind_address
        if host in ("0.0.0.0", "::") and os.environ.get("PYKUBEADM_POD_IP"):
            host = os.environ["PYKUBEADM_POD_IP"]  # the Pod's "every address" is its own (Pods share the node's)
        return host

    async def serve(self, ctx: ssl.SSLContext) -> web.AppRunner:
        host = self._host()
        app = web.Application(middlewares=[self.auth.middleware(resource_request)])
        self.api.routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS)
        await runner.setup()
        await web.TCPSite(runner, host, self.opts.secure_port, ssl_context=ctx, reuse_port=True).start()
        log.info("Serving securely on %s:%d", host, self.opts.secure_port)
        return runner

    async def run(self) -> None:
        ctx = serving_context(self.opts, self._host())  # first: it may fork, before any thread or connection
        await self.auth.start()
        tasks: list[asyncio.Task[None]] = []
        runner: web.AppRunner | None = None
        try:
            runner = await self.serve(ctx)
            tasks.append(asyncio.create_task(self._scrape_loop(), name="scrape"))
            self.ready.set()
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
            if runner is not None:
                await runner.cleanup()
            await self.scraper.close()
            await self.auth.close()


def new_auth(client: KubeClient) -> ExtensionAuth:
    """The extension API server's authentication and authorization, both through `client`."""
    delegating = DelegatingAuth(authentication_client=client, authorization_client=client)
    return ExtensionAuth(client, delegating)
