"""Calling one admission webhook as kube-apiserver does: the AdmissionReview (v1, or v1beta1 when that is all the
webhook accepts), `clientConfig.url` or `clientConfig.service` (resolved to one of the Service's endpoint addresses,
the way the aggregator routes, verified with `caBundle` for `<service>.<namespace>.svc`), `?timeout=Ns` and the
deadline, and the checks on the response. Failures are `CallError`s worded as kube words them
(`failed to call webhook: Post "<url>": context deadline exceeded`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import random
import ssl
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pykubeadm.apiserver.admission.celrequest import request_map
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.apiserver.admission.webhook.transport import ConnectError, Pool, ProtocolError
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.util import jsoncodec

__all__ = ["CallError", "Target", "WebhookClient", "review_request"]

Obj = dict[str, Any]
_OPTIONS_KIND = {
    Operation.CREATE: "CreateOptions",
    Operation.UPDATE: "UpdateOptions",
    Operation.DELETE: "DeleteOptions",
}


class CallError(Exception):
    """The webhook could not be called or answered wrongly; str() is kube's ErrCallingWebhook reason."""


@dataclass(frozen=True)
class Target:
    url: str  # what kube shows in messages (https://svc.ns.svc:443/path?timeout=10s)
    connect_url: str  # where we connect (an endpoint address for a Service)
    server_name: str
    ca_bundle: str

    @functools.cached_property
    def endpoint(self) -> tuple[bool, str, int, str]:
        """(TLS?, host, port, path and query) of `connect_url`."""
        parts = urlsplit(self.connect_url)
        tls = parts.scheme == "https"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return tls, parts.hostname or "", parts.port or (443 if tls else 80), path


def _ca(config: Obj) -> str:
    raw = config.get("caBundle") or ""
    return base64.b64decode(raw).decode("ascii", "replace") if raw else ""


@functools.lru_cache(maxsize=256)
def _url_target(url: str, ca_bundle: str, timeout_s: int) -> Target:
    """The Target of a `clientConfig.url` webhook (parsed once per URL, caBundle and timeout, not on every call)."""
    query = f"timeout={timeout_s}s"
    parts = urlsplit(url)
    full = urlunsplit((parts.scheme, parts.netloc, parts.path, f"{parts.query}&{query}" if parts.query else query, ""))
    return Target(full, full, parts.hostname or "", _ca({"caBundle": ca_bundle}))


async def resolve(source: ObjectSource, config: Obj, timeout_s: int) -> Target:
    """The URL to call: the configured one, or the Service's name as URL and one of its endpoint addresses to reach."""
    if config.get("url"):
        return _url_target(config["url"], config.get("caBundle") or "", timeout_s)
    query = f"timeout={timeout_s}s"
    ref = config.get("service") or {}
    ns, name, port = ref.get("namespace", ""), ref.get("name", ""), int(ref.get("port") or 443)
    path = ref.get("path") or "/"
    url = f"https://{name}.{ns}.svc:{port}{path}?{query}"
    svc = await source.get("services", ns, name)
    if svc is None:
        raise CallError(f'Post "{url}": service "{name}" not found')
    sport = next((p for p in (svc.get("spec") or {}).get("ports") or [] if p.get("port") == port), None)
    if sport is None:
        raise CallError(f'Post "{url}": no service port {port} found for service "{name}"')
    addresses: list[tuple[str, int]] = []
    eps = await source.get("endpoints", ns, name)
    for subset in (eps or {}).get("subsets") or []:
        for p in subset.get("ports") or []:
            if (p.get("name") or "") == (sport.get("name") or ""):
                addresses += [(a["ip"], int(p["port"])) for a in subset.get("addresses") or [] if a.get("ip")]
    if not addresses:
        raise CallError(f'Post "{url}": no endpoints available for service "{name}"')
    host, tport = random.choice(addresses)
    hostport = f"[{host}]:{tport}" if ":" in host else f"{host}:{tport}"
    return Target(url, f"https://{hostport}{path}?{query}", f"{name}.{ns}.svc", _ca(config))


def review_request(attrs: AdmissionAttributes, version: str, uid: str) -> Obj:
    """The AdmissionReview sent for `attrs` (admission.k8s.io/`version`): the request CEL sees, plus the objects."""
    request: Obj = {"uid": uid, **request_map(attrs)}
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    else:
        del request["subResource"]
    if not attrs.namespace:
        del request["namespace"]
    request["object"] = attrs.obj if attrs.operation is not Operation.DELETE else None
    request["oldObject"] = attrs.old_obj
    if attrs.operation in _OPTIONS_KIND:
        request["options"] = {"kind": _OPTIONS_KIND[attrs.operation], "apiVersion": "meta.k8s.io/v1", **attrs.options}
    return {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{version}", "request": request}


def _go_error(err: BaseException, target: Target) -> str:
    """The Go net/http error text kube shows for a failed webhook call."""
    if isinstance(err, asyncio.TimeoutError | TimeoutError):
        return "context deadline exceeded"
    if isinstance(err, ConnectError):
        cause = err.cause
        if isinstance(cause, ssl.SSLCertVerificationError):
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        if isinstance(cause, ssl.SSLError):
            return f"tls: {cause}"
        _, host, port, _ = target.endpoint
        reason = (
            "connection refused"
            if isinstance(cause, ConnectionRefusedError)
            else str(getattr(cause, "strerror", None) or cause)
        )
        return f"dial tcp {host}:{port}: connect: {reason}"
    if isinstance(err, ProtocolError | ConnectionResetError):
        return "EOF" if str(err) == "EOF" else f"net/http: HTTP/1.x transport connection broken: {err}"
    return str(err) or type(err).__name__


_HEADERS = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, */*"),
    ("User-Agent", "kube-apiserver-admission"),  # as kube-apiserver sends them
]


class WebhookClient:
    """One HTTP client for every webhook: kept-alive connections pooled per endpoint (`transport.Pool`), one TLS
    context per caBundle, built on first use. Nothing is set up per call."""

    def __init__(self, source: ObjectSource):
        self._source = source
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._pool = Pool()

    async def close(self) -> None:
        """Close the kept-alive connections (the apiserver is stopping)."""
        await self._pool.close()

    def _ssl(self, ca: str) -> ssl.SSLContext:
        ctx = self._contexts.get(ca)
        if ctx is None:
            ctx = ssl.create_default_context()
            if ca:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.load_verify_locations(cadata=ca)
            self._contexts[ca] = ctx
        return ctx

    async def post(self, client_config: Obj, body: bytes, timeout_s: int) -> bytes:
        """POST a review to the webhook of `client_config` and return the answer's body; CallError says
        `Post "<url>": <Go's error text>`."""
        target = await resolve(self._source, client_config, timeout_s)
        tls, host, port, path = target.endpoint
        try:
            async with asyncio.timeout(timeout_s):
                resp = await self._pool.post(
                    host,
                    port,
                    path,
                    body,
                    _HEADERS,
                    tls=self._ssl(target.ca_bundle) if tls else None,
                    server_name=target.server_name,
                )
        except (ConnectError, ProtocolError, OSError, TimeoutError) as e:
            raise CallError(f'Post "{target.url}": {_go_error(e, target)}') from None
        if resp.status >= 300:
            text = resp.body[:200].decode("utf-8", "replace")
            raise CallError(
                f'Post "{target.url}": an error on the server ("{text}") has prevented the request from succeeding'
            )
        return resp.body

    async def call(self, hook: Obj, attrs: AdmissionAttributes, *, mutating: bool) -> Obj:
        """The webhook's AdmissionResponse (checked), or CallError."""
        versions = [v for v in hook.get("admissionReviewVersions") or ["v1"] if v in ("v1", "v1beta1")]
        if not versions:
            raise CallError(
                "could not create admission objects: webhook does not accept known AdmissionReview versions"
            )
        version = versions[0]
        timeout_s = int(hook.get("timeoutSeconds") or 10)
        uid = str(uuid.uuid4())
        try:
            data = await self.post(
                hook.get("clientConfig") or {}, jsoncodec.dumps(review_request(attrs, version, uid)), timeout_s
            )
        except CallError as e:
            raise CallError(f"failed to call webhook: {e}") from None
        try:
            review = jsoncodec.loads(data)
        except ValueError as e:
            raise CallError(f"received invalid webhook response: {e}") from None
        return _verify(review, uid, version, mutating)


def _verify(review: Any, uid: str, version: str, mutating: bool) -> Obj:
    def bad(msg: str) -> CallError:
        return CallError(f"received invalid webhook response: {msg}")

    if not isinstance(review, dict) or not isinstance(review.get("response"), dict):
        raise bad("webhook response was absent")
    expected = f"admission.k8s.io/{version}"
    if version == "v1" and (review.get("apiVersion"), review.get("kind")) != (expected, "AdmissionReview"):
        raise bad(f"expected webhook response of {expected}, Kind=AdmissionReview, got "
                  f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}")  # fmt: skip
    response = review["response"]
    if version == "v1" and response.get("uid") != uid:
        raise bad(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and not patch_type:
            raise bad("webhook returned response.patch but not response.patchType")
        if patch_type and not patch:
            raise bad("webhook returned response.patchType but not response.patch")
        if patch_type and patch_type != "JSONPatch":
            raise bad(f'webhook returned invalid response.patchType of "{patch_type}"')
    else:
        if patch:
            raise bad("validating webhook may not return response.patch")
        if patch_type:
            raise bad("validating webhook may not return response.patchType")
    return response
