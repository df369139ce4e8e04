"""The secure health endpoints of kube-controller-manager (10257) and kube-scheduler (10259),.

HTTPS with --tls-cert-file/--tls-private-key-file, or — as the real components do when none is given — a self-signed
serving certificate for `localhost`, 127.0.0.1 and the bind address, generated in memory at start. `/healthz`, `/livez`
and `/readyz` (and their `/…/<check>` forms) are always allowed (--authorization-always-allow-paths); other paths are
403 for an unauthenticated caller. With a `DelegatingAuth` (controllers/app/delegatedauth.py) every other path is
authenticated and authorized through the API, and `/metrics` serves the component's registry (controllers/metrics.py), `/debug/pprof/` the --profiling answers.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm import constants as c
from pykubeadm.controllers.app.delegatedauth import DelegatingAuth
from pykubeadm.controllers.metrics import CONTENT_TYPE, ComponentMetrics
from pykubeadm.util.pprof import pprof_response
from pykubeadm.util.tlsclientauth import request_client_certificates

__all__ = ["HealthServer", "self_signed_pair"]

#: name → check returning None when healthy, else the failure text.
HealthCheck = Callable[[], str | None]


def self_signed_pair(host: str, alternate_ips: list[str], alternate_dns: list[str]) -> tuple[bytes, bytes]:
    """(cert PEM, key PEM): a throw-away CA `<host>-ca@<ts>` and a serving leaf `<host>@<ts>`, chained, for 1 year."""
    now = datetime.now(UTC)
    ts = int(time.time())
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{ts}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sans: list[x509.GeneralName] = [x509.DNSName(host)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in alternate_ips]
    sans += [x509.DNSName(d) for d in alternate_dns if d != host]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{ts}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_pem = leaf.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return cert_pem, key_pem


def _ssl_context(
    cert_file: Path | None, key_file: Path | None, bind_address: str, auth: DelegatingAuth | None = None
) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if auth is not None:  # requested, judged by DelegatingAuth (a bad certificate is a 401, as in Go)
        request_client_certificates(ctx, str(auth.client_ca_file) if auth.client_ca_file else None)
    if cert_file and key_file:
        ctx.load_cert_chain(cert_file, key_file)
        return ctx
    ips = ["127.0.0.1"]
    if bind_address not in ("0.0.0.0", "::", "127.0.0.1", ""):
        ips.append(bind_address)
    cert_pem, key_pem = self_signed_pair("localhost", ips, [])
    with tempfile.TemporaryDirectory(prefix="pykubeadm-serving-") as tmp:
        cert_path, key_path = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert_path.write_bytes(cert_pem)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


class HealthServer:
    """Serves /healthz, /livez and /readyz over HTTPS; each runs the named checks (`/healthz/<name>` runs one)."""

    def __init__(
        self,
        bind_address: str,
        port: int,
        *,
        cert_file: Path | None = None,
        key_file: Path | None = None,
        checks: dict[str, dict[str, HealthCheck]] | None = None,
        auth: DelegatingAuth | None = None,
        metrics: ComponentMetrics | None = None,
        profiling: bool = False,
    ):
        self.bind_address = bind_address
        self.port = port
        self.cert_file = cert_file
        self.key_file = key_file
        #: endpoint ("healthz") → {check name → check}
        self.checks = checks or {"healthz": {}}
        #: authenticates and authorizes every path but the health checks (closed by stop())
        self.auth = auth
        self.metrics = metrics
        #: --profiling: /debug/pprof/ for callers the delegated authorization allows (needs `auth`)
        self.profiling = profiling
        self._runner: web.AppRunner | None = None

    def _handler(self, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            checks = self.checks.get(endpoint, {})
            only = request.match_info.get("check")
            if only is not None and only not in checks and only != "ping":
                return web.Response(status=404, text="404 page not found\n")
            failures = {}
            lines = ["[+]ping ok"]
            for name, check in checks.items():
                if only is not None and name != only:
                    continue
                problem = check()
                if problem is None:
                    lines.append(f"[+]{name} ok")
                else:
                    failures[name] = problem
                    lines.append(f"[-]{name} failed: reason withheld")
            if failures:
                return web.Response(status=500, text="\n".join(lines) + f"\n{endpoint} check failed\n")
            if "verbose" in request.query:
                return web.Response(text="\n".join(lines) + f"\n{endpoint} check passed\n")
            return web.Response(text="ok")

        return handle

    async def _forbidden(self, request: web.Request) -> web.Response:
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "reason": "Forbidden",
            "code": 403,
            "message": f'forbidden: User "system:anonymous" cannot get path "{request.path}"',
        }
        return web.Response(status=403, text=json.dumps(status), content_type="application/json")

    async def _not_found(self, _: web.Request) -> web.Response:
        return web.Response(status=404, text="404 page not found\n")

    async def _pprof(self, request: web.Request) -> web.Response:
        return pprof_response(request.match_info.get("name", ""))

    async def _metrics(self, _: web.Request) -> web.Response:
        assert self.metrics is not None
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def start(self) -> None:
        # Without a certificate the serving pair is made here: two RSA-2048 keys (tens of ms each, the GIL released),
        # in a thread while the client CA is looked up from the API, which may still be starting.
        tls = asyncio.ensure_future(
            asyncio.to_thread(_ssl_context, self.cert_file, self.key_file, self.bind_address, self.auth)
        )
        try:
            if self.auth is not None:
                await self.auth.start()
            ssl_context = await tls
        except BaseException:
            tls.cancel()
            raise
        app = web.Application(middlewares=[self.auth.middleware()] if self.auth is not None else [])
        if self.metrics is not None and self.auth is not None:
            app.router.add_get("/metrics", self._metrics)
        if self.profiling and self.auth is not None:
            app.router.add_get("/debug/pprof/", self._pprof)
            app.router.add_get("/debug/pprof/{name}", self._pprof)
        for endpoint in ("healthz", "livez", "readyz"):
            if endpoint in self.checks:
                app.router.add_get(f"/{endpoint}", self._handler(endpoint))
                app.router.add_get(f"/{endpoint}/{{check}}", self._handler(endpoint))
        app.router.add_route("*", "/{tail:.*}", self._not_found if self.auth is not None else self._forbidden)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.bind_address,
            self.port,
            ssl_context=ssl_context,
        )
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.auth is not None:
            await self.auth.close()
