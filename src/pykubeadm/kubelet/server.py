"""The kubelet's HTTP endpoints: healthz (plain HTTP) and the kubelet API on :10250 (TLS, authn + Webhook authz).

Authentication: a client certificate verified against `authentication.x509.clientCAFile` (user = CN, groups = O),
else a bearer token checked by TokenReview (webhook), else `system:anonymous` if anonymous auth is enabled, else 401.
Authorisation (mode Webhook) asks the API with a SubjectAccessReview, as the real kubelet does: resource `nodes`,
name = node, subresource by path (`/pods`, `/healthz` and others → `proxy`; `/stats` → `stats`; `/metrics` →
`metrics`; `/logs` → `log`; `/spec` → `spec`), verb from the method. Served paths: /healthz, /pods, /runningpods/,
/metrics and /metrics/resource (kubelet/metrics.py, kubelet/resourcemetrics.py), /stats/summary
(kubelet/statssummary.py),
/containerLogs/{namespace}/{pod}/{container} (kubelet/logs.py), and with a container locator the streaming API:
/exec, /attach, /portForward (kubelet/streaming/; nodes/proxy, `create` for SPDY's POST, `get` for WebSocket's GET).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm.errors import CertError
from pykubeadm.kubelet.logs import LogLocator, container_logs_handler
from pykubeadm.kubelet.metrics import CONTENT_TYPE, KubeletMetrics
from pykubeadm.kubelet.resourcemetrics import ContainerTarget, render_resource_metrics
from pykubeadm.kubelet.statssummary import SummaryProvider
from pykubeadm.kubelet.streaming import ContainerLocator, ContainerRef, add_streaming_routes
from pykubeadm.pki.certs import parse_certs_pem
from pykubeadm.pki.verify import verify_client_certificate
from pykubeadm.util.tlsclientauth import peer_certificates, request_client_certificates

__all__ = ["KubeletServer", "healthz_app", "subresource_for"]

log = logging.getLogger(__name__)


def healthz_app() -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    return app


def subresource_for(path: str) -> str:
    for prefix, sub in (
        ("/stats", "stats"),
        ("/metrics", "metrics"),
        ("/logs", "log"),
        ("/spec", "spec"),
        ("/checkpoint", "checkpoint"),
        ("/configz", "configz"),
    ):
        if path == prefix or path.startswith(prefix + "/"):
            return sub
    return "proxy"


_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class KubeletServer:
    """The :10250 API. `client()` returns the node's API client; `pods()` lists this node's Pods (with status)."""

    def __init__(
        self,
        *,
        node_name: str,
        client: Callable[[], Any],
        pods: Callable[[], list[dict[str, Any]]],
        logs: LogLocator | None = None,
        containers: ContainerLocator | None = None,
        anonymous: bool,
        webhook_authn: bool,
        authorization_mode: str,
        metrics: KubeletMetrics | None = None,
        resource_targets: Callable[[], list[ContainerTarget]] | None = None,
        runtime_targets: Callable[[], Awaitable[list[ContainerTarget]]] | None = None,
        summary: SummaryProvider | None = None,
    ):
        self.node_name = node_name
        self.client = client
        self.pods = pods
        self.logs = logs
        self.containers = containers
        self.anonymous = anonymous
        self.webhook_authn = webhook_authn
        self.authorization_mode = authorization_mode
        self.metrics = metrics
        self.resource_targets = resource_targets
        self.runtime_targets = runtime_targets  # CRI containers, measured by the runtime
        self.summary = summary

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth_middleware])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/pods", self._pods)
        app.router.add_get("/pods/", self._pods)
        app.router.add_get("/runningpods/", self._pods)
        if self.metrics is not None:
            app.router.add_get("/metrics", self._metrics)
        if self.resource_targets is not None:
            app.router.add_get("/metrics/resource", self._resource_metrics)
        if self.summary is not None:
            app.router.add_get("/stats/summary", self._stats_summary)
        if self.logs is not None:
            app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs_handler(self.logs))
        if self.containers is not None:
            add_streaming_routes(app.router, self._locate_container)
        return app

    def _locate_container(self, namespace: str, pod: str, container: str) -> ContainerRef | str:
        """The locator, where container "" (port-forward) means the Pod's first container."""
        assert self.containers is not None
        if not container:
            for item in self.pods():
                meta = item.get("metadata") or {}
                if meta.get("namespace") == namespace and meta.get("name") == pod:
                    names = [c.get("name", "") for c in (item.get("spec") or {}).get("containers") or []]
                    container = names[0] if names else ""
                    break
            else:
                return f'pod "{pod}" in namespace "{namespace}" not found'
        return self.containers(namespace, pod, container)

    async def _metrics(self, _: web.Request) -> web.Response:
        assert self.metrics is not None
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def _resource_metrics(self, _: web.Request) -> web.Response:
        assert self.resource_targets is not None
        targets = self.resource_targets()  # the containers, read here; the /proc scan off the event loop
        if self.runtime_targets is not None:
            targets += await self.runtime_targets()
        body = await asyncio.to_thread(render_resource_metrics, targets)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _stats_summary(self, request: web.Request) -> web.Response:
        assert self.summary is not None
        only = request.query.getall("only_cpu_and_memory", [])
        summary = await self.summary.summary(only_cpu_and_memory=only == ["true"])
        return web.json_response(summary)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _pods(self, _: web.Request) -> web.Response:
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.pods()})

    # --- authentication and authorisation ------------------------------------------------------------------------
    async def authenticate(self, request: web.Request) -> tuple[str, list[str]] | None:
        ssl_obj = request.transport.get_extra_info("ssl_object") if request.transport else None
        ders = peer_certificates(ssl_obj)
        if ders and ssl_obj is not None:  # (a client certificate implies a TLS connection)
            roots = _CLIENT_CAS.get(ssl_obj.context)
            # serving_ssl_context's TLS layer accepts any certificate: judged here against clientCAFile; a context
            # made elsewhere (tests, embedders) verified it in the handshake
            cert = (
                verify_client_certificate(ders, roots) if roots is not None else x509.load_der_x509_certificate(ders[0])
            )
            cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            if cns and cns[0].value:
                orgs = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
                return str(cns[0].value), [*orgs, "system:authenticated"]
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and self.webhook_authn:
            review = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": auth[len("Bearer ") :].strip()},
            }
            try:
                res = await self.client().post("/apis/authentication.k8s.io/v1/tokenreviews", review)
            except Exception as e:
                log.error("token review failed: %s", e)
                return None
            st = res.get("status") or {}
            if st.get("authenticated"):
                user = st.get("user") or {}
                return str(user.get("username", "")), list(user.get("groups") or [])
            return None
        if self.anonymous:
            return "system:anonymous", ["system:unauthenticated"]
        return None

    async def authorize(self, user: str, groups: list[str], request: web.Request) -> tuple[bool, str]:
        if self.authorization_mode == "AlwaysAllow":
            return True, ""
        verb = _VERBS.get(request.method, request.method.lower())
        sub = subresource_for(request.path)
        sar = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": groups,
                "resourceAttributes": {
                    "verb": verb,
                    "group": "",
                    "version": "v1",
                    "resource": "nodes",
                    "subresource": sub,
                    "name": self.node_name,
                },
            },
        }
        try:
            res = await self.client().post("/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
        except Exception as e:
            log.error("subject access review failed: %s", e)
            return False, f"Authorization error (user={user}, verb={verb}, resource=nodes, subresource={sub})"
        allowed = bool((res.get("status") or {}).get("allowed"))
        return allowed, f"Forbidden (user={user}, verb={verb}, resource=nodes, subresource={sub})"

    @web.middleware
    async def _auth_middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            who = await self.authenticate(request)
        except CertError as err:
            log.error("Unable to authenticate the request due to an error: %s", err)
            who = None
        if who is None:
            return web.Response(status=401, text="Unauthorized")
        allowed, reason = await self.authorize(who[0], who[1], request)
        if not allowed:
            return web.Response(status=403, text=reason)
        return await handler(request)


def serving_ssl_context(cert_file: str, key_file: str, client_ca_file: str | None) -> ssl.SSLContext:
    """TLS for :10250: our serving pair; client certificates requested (not required) and accepted as sent, as the
    kubelet's Go server does: the authenticator verifies them against the CA, so a bad one gets 401, not a reset."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    if client_ca_file:
        _CLIENT_CAS[ctx] = parse_certs_pem(Path(client_ca_file).read_bytes(), client_ca_file)
        request_client_certificates(ctx, client_ca_file)
    return ctx


#: clientCAFile's certificates per serving context (the context the connection's SSLObject reports).
_CLIENT_CAS: weakref.WeakKeyDictionary[ssl.SSLContext, list[x509.Certificate]] = weakref.WeakKeyDictionary()
