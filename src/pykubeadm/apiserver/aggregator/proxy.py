"""kube-aggregator's proxy: a request for a non-local APIService's group version goes to one of the Service's endpoint
addresses (always endpoint routing, as kube-apiserver does with `--enable-aggregator-routing=true`: a ClusterIP is
not routable in the lab), over TLS verified with the APIService's caBundle for `<service>.<namespace>.svc` (or not at
all with insecureSkipTLSVerify), presenting `--proxy-client-cert-file`/`--proxy-client-key-file`, with the
authenticated user in `X-Remote-User`/`X-Remote-Uid`/`X-Remote-Group`/`X-Remote-Extra-*` and the client's own
credentials and identity headers removed. Responses and watches stream back unchanged.
"""

from __future__ import annotations

import random
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.util import jsoncodec
from pykubeadm.util.tlscontext import insecure_client_context

__all__ = ["Backend", "ProxyTransport", "proxy_request", "resolve_backend", "resolve_backends"]

_HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Te",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Host",
        "Content-Length",
        "Authorization",
    )
)
_IDENTITY_PREFIXES = ("x-remote-", "impersonate-")
#: The user kube-aggregator's availability checks are made as.
_AGGREGATOR_USER = "system:kube-aggregator"


@dataclass(frozen=True)
class Backend:
    host: str
    port: int
    server_name: str
    ca_bundle: str
    insecure: bool

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}{path}"


async def resolve_backend(state: Any, spec: dict[str, Any]) -> Backend:
    """One endpoint address of the APIService's Service port, chosen at random as kube's endpoint routing does."""
    return random.choice(await resolve_backends(state, spec))


async def resolve_backends(state: Any, spec: dict[str, Any]) -> list[Backend]:
    """Every endpoint address of the APIService's Service port; LookupError(reason, message) as kube's availability
    controller words it when there is none."""
    ref = spec.get("service") or {}
    ns, name, port = ref.get("namespace", ""), ref.get("name", ""), int(ref.get("port") or 443)
    svc = await state.store("services").try_get(ns, name)
    if svc is None:
        raise LookupError("ServiceNotFound", f'service/{name} in "{ns}" is not present')
    sspec = svc.get("spec") or {}
    if sspec.get("type") == "ExternalName":
        host = sspec.get("externalName", "")
        return [_backend(spec, ns, name, host, port)]
    sport = next((p for p in sspec.get("ports") or [] if p.get("port") == port), None)
    if sport is None:
        raise LookupError("ServicePortError", f'service/{name} in "{ns}" is not listening on port {port}')
    port_name = sport.get("name", "")
    addresses: list[tuple[str, int]] = []
    eps = await state.store("endpoints").try_get(ns, name)
    if eps is None:
        addresses = await _from_slices(state, ns, name, port_name)
        if not addresses and "endpointslices.discovery.k8s.io" not in state.by_resource:
            raise LookupError("EndpointsNotFound", f'cannot find endpoints for service/{name} in "{ns}"')
    else:
        for subset in eps.get("subsets") or []:
            for p in subset.get("ports") or []:
                if p.get("name", "") == port_name:
                    addresses += [(a["ip"], int(p["port"])) for a in subset.get("addresses") or [] if a.get("ip")]
    if not addresses:
        raise LookupError(
            "MissingEndpoints", f'endpoints for service/{name} in "{ns}" have no addresses with port name "{port_name}"'
        )
    return [_backend(spec, ns, name, host, tport) for host, tport in addresses]


async def _from_slices(state: Any, ns: str, name: str, port_name: str) -> list[tuple[str, int]]:
    store = state.by_resource.get("endpointslices.discovery.k8s.io")
    if store is None:
        return []
    from pykubeadm.apiserver.selectors import parse_label_selector

    page = await store.list(ns, parse_label_selector(f"kubernetes.io/service-name={name}"))
    out: list[tuple[str, int]] = []
    for sl in page.items:
        ports = [p for p in sl.get("ports") or [] if (p.get("name") or "") == port_name and p.get("port")]
        for ep in sl.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            out += [(a, int(p["port"])) for a in ep.get("addresses") or [] for p in ports]
    return out


def _backend(spec: dict[str, Any], ns: str, name: str, host: str, port: int) -> Backend:
    ca = spec.get("caBundle") or ""
    if ca:
        import base64

        ca = base64.b64decode(ca).decode("ascii", "replace")
    return Backend(host, port, f"{name}.{ns}.svc", ca, bool(spec.get("insecureSkipTLSVerify")))


class ProxyTransport:
    """One pooled HTTP client for every backend; TLS contexts per (caBundle, insecure) with the proxy client cert."""

    def __init__(self, cert: Path | None, key: Path | None):
        self._cert, self._key = cert, key
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    def ssl_for(self, b: Backend) -> ssl.SSLContext:
        ctx = self._contexts.get((b.ca_bundle, b.insecure))
        if ctx is None:
            if b.insecure:
                ctx = insecure_client_context()
            else:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                if b.ca_bundle:
                    ctx.load_verify_locations(cadata=b.ca_bundle)
                else:
                    ctx.load_default_certs()
            if self._cert is not None and self._key is not None:
                ctx.load_cert_chain(str(self._cert), str(self._key))
            self._contexts[(b.ca_bundle, b.insecure)] = ctx
        return ctx

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=60),
                auto_decompress=False,
            )
        return self._session

    def tls_kwargs(self, b: Backend) -> dict[str, Any]:
        kw: dict[str, Any] = {"ssl": self.ssl_for(b)}
        if not b.insecure:
            kw["server_hostname"] = b.server_name
        return kw

    async def get(self, b: Backend, path: str, timeout: float) -> tuple[int, Any]:
        """A discovery check: (status, parsed JSON body or None), as kube's availability controller sends it: as
        `system:kube-aggregator` in `system:masters` through the front-proxy headers."""
        headers = CIMultiDict({"Accept": "application/json"})
        headers.extend(identity_headers(UserInfo(name=_AGGREGATOR_USER, groups=("system:masters",))))
        async with self.session.get(
            b.url(path),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            **self.tls_kwargs(b),
        ) as r:
            data = await r.read()
            try:
                return r.status, jsoncodec.loads(data)
            except ValueError:
                return r.status, None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def identity_headers(user: UserInfo) -> CIMultiDict[str]:
    """kube's SetAuthProxyHeaders: X-Remote-User, X-Remote-Uid, one X-Remote-Group each, X-Remote-Extra-<escaped>."""
    h: CIMultiDict[str] = CIMultiDict()
    h["X-Remote-User"] = user.name
    if user.uid:
        h["X-Remote-Uid"] = user.uid
    for g in user.groups:
        h.add("X-Remote-Group", g)
    for k, vs in user.extra.items():
        for v in vs:
            h.add("X-Remote-Extra-" + quote(k, safe=""), v)
    return h


def text_error(message: str, code: int) -> web.Response:
    """Go's http.Error, which kube-aggregator's proxy answers with."""
    return web.Response(
        status=code,
        body=(message + "\n").encode(),
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
    )


async def proxy_request(
    request: web.Request, transport: ProxyTransport, backend: Backend, user: UserInfo
) -> web.StreamResponse:
    headers: CIMultiDict[str] = CIMultiDict()
    for k, v in request.headers.items():
        lk = k.lower()
        if lk in _HOP_BY_HOP or lk.startswith(_IDENTITY_PREFIXES):
            continue
        headers.add(k, v)
    headers.extend(identity_headers(user))
    if request.remote:
        prior = request.headers.get("X-Forwarded-For")
        headers["X-Forwarded-For"] = f"{prior}, {request.remote}" if prior else request.remote
    body = await request.read() if request.can_read_body else None
    resp: web.StreamResponse | None = None
    try:
        async with transport.session.request(
            request.method,
            backend.url(request.raw_path),
            headers=headers,
            data=body,
            allow_redirects=False,
            **transport.tls_kwargs(backend),
        ) as upstream:
            out_headers = CIMultiDict((k, v) for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP)
            length = upstream.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) < 1 << 20:
                return web.Response(status=upstream.status, body=await upstream.read(), headers=out_headers)
            resp = web.StreamResponse(status=upstream.status, headers=out_headers)
            await resp.prepare(request)
            async for chunk in upstream.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp
    except (aiohttp.ClientError, OSError, ssl.SSLError) as e:
        if resp is not None:  # the answer had started: end it
            return resp
        return text_error(f"Error trying to reach service: '{e}'", 503)
