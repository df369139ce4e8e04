"""Delegated authentication and authorization for the secure ports of kube-controller-manager and kube-scheduler.

What k8s.io/apiserver's DelegatingAuthenticationOptions and DelegatingAuthorizationOptions give those components:
- authentication: a client certificate verified against --client-ca-file (without it: the `client-ca-file` of the
  ConfigMap kube-system/extension-apiserver-authentication, read at start) (user = CN, groups = O), else a bearer token
  reviewed by the API (TokenReview through --authentication-kubeconfig), else `system:anonymous` in
  `system:unauthenticated`; a certificate or token that does not authenticate is 401 Unauthorized;
- authorization: the always-allowed paths (/healthz, /readyz, /livez and their checks) and the `system:masters` group
  are allowed, everything else is a SubjectAccessReview of the non-resource path and the lower-cased method through
  --authorization-kubeconfig (the system:monitoring ClusterRole grants `get` on /metrics); deny → 403 with kube's
  `forbidden: User "<u>" cannot get path "<p>"` Status.
Token and access reviews are cached for 10 s (kube's --authentication-token-webhook-cache-ttl and
--authorization-webhook-cache-{authorized,unauthorized}-ttl); the token cache is keyed by an HMAC, never the token.
Used by controllers/app/serving.py's HealthServer and by the metrics server (metricsserver/auth.py).

The API is asked through `ApiClient`, plain JSON by path: the controller-manager and the scheduler give it their
lightkube client's connection (client.JSONRequests), the metrics server its small aiohttp client (kubelet.api), so
this module imports neither lightkube nor httpx.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web
from cryptography.x509.oid import NameOID

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.pki.certs import parse_certs_pem
from pykubeadm.pki.verify import verify_client_certificate
from pykubeadm.util.tlsclientauth import peer_certificates

__all__ = [
    "ALWAYS_ALLOW_GROUPS",
    "ALWAYS_ALLOW_PATHS",
    "ApiClient",
    "DelegatingAuth",
    "User",
    "new_delegating_auth",
]

log = logging.getLogger(__name__)

#: --authorization-always-allow-paths' default for kube-controller-manager and kube-scheduler.
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
#: Groups allowed everything without asking the API (DelegatingAuthorizationOptions.AlwaysAllowGroups).
ALWAYS_ALLOW_GROUPS = ("system:masters",)
#: Seconds a token review and an access review are reused.
CACHE_TTL = 10.0
_CACHE_SIZE = 4096
_ANONYMOUS = "system:anonymous"
#: Where kube-apiserver publishes its client CA for delegated authentication.
_AUTH_CONFIGMAP = c.EXTENSION_APISERVER_AUTHENTICATION_CONFIGMAP
AUTH_CONFIGMAP_PATH = f"/api/v1/namespaces/{c.NAMESPACE_SYSTEM}/configmaps/{_AUTH_CONFIGMAP}"
_TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#: Seconds the first client CA lookup may take; then the retries' first and longest pause.
_CA_LOOKUP_TIMEOUT = 5.0
_CA_RETRY_INITIAL = 2.0
_CA_RETRY_MAX = 60.0


class ApiClient(Protocol):
    """What delegated auth needs of an API client: JSON objects got and posted by path; a failure raises."""

    async def get(self, path: str) -> dict[str, Any]: ...

    async def post(self, path: str, body: Any) -> dict[str, Any]: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]
    uid: str = ""


class _TTLCache:
    """A small LRU whose entries expire `ttl` seconds after they were put."""

    def __init__(self, ttl: float = CACHE_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._items: OrderedDict[Any, tuple[float, Any]] = OrderedDict()

    def get(self, key: Any) -> Any:
        hit = self._items.get(key)
        if hit is None:
            return None
        if hit[0] <= self._clock():
            del self._items[key]
            return None
        return hit[1]

    def put(self, key: Any, value: Any) -> None:
        self._items[key] = (self._clock() + self._ttl, value)
        self._items.move_to_end(key)
        if len(self._items) > _CACHE_SIZE:
            self._items.popitem(last=False)


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip
    return web.Response(status=code, text=json.dumps(body), content_type="application/json")


class DelegatingAuth:
    """Authenticates and authorizes requests to a component's secure port, asking the API where kube does."""

    def __init__(
        self,
        *,
        client_ca_file: Path | None = None,
        authentication_client: ApiClient | None = None,
        authorization_client: ApiClient | None = None,
        always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS,
        always_allow_groups: tuple[str, ...] = ALWAYS_ALLOW_GROUPS,
        anonymous: bool = True,
    ) -> None:
        self.client_ca_file = client_ca_file
        self._roots = parse_certs_pem(client_ca_file.read_bytes(), str(client_ca_file)) if client_ca_file else None
        self.authentication_client = authentication_client
        self.authorization_client = authorization_client
        self.always_allow_paths = always_allow_paths
        self.always_allow_groups = always_allow_groups
        self.anonymous = anonymous
        self._tokens = _TTLCache()
        self._decisions = _TTLCache()
        self._hmac_key = os.urandom(32)
        self._ca_lookup: asyncio.Future[None] | None = None
        self._ca_warned = False
        if authentication_client is None:
            log.warning("No authentication-kubeconfig provided, so token authentication won't work.")
        if authorization_client is None:
            log.warning(
                "No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't work."
            )

    async def start(self) -> None:
        """Without --client-ca-file, take the cluster's client CA from extension-apiserver-authentication, as kube's
        delegated authentication looks it up: once now (briefly: the API may still be starting, as in `kubeadm
        init`), then in the background until it is there; until then client certificates do not authenticate."""
        if self._roots is not None or self.authentication_client is None:
            return
        try:
            found = await asyncio.wait_for(self._load_cluster_client_ca(), _CA_LOOKUP_TIMEOUT)
        except TimeoutError:
            found = False
        if not found:
            self._ca_lookup = asyncio.ensure_future(self._retry_cluster_client_ca())

    async def _retry_cluster_client_ca(self) -> None:
        delay = _CA_RETRY_INITIAL
        while not await self._load_cluster_client_ca():
            await asyncio.sleep(delay)
            delay = min(delay * 2, _CA_RETRY_MAX)

    async def _load_cluster_client_ca(self) -> bool:
        assert self.authentication_client is not None
        try:
            cm = await self.authentication_client.get(AUTH_CONFIGMAP_PATH)
        except Exception as err:
            self._ca_log("Unable to get configmap/%s in kube-system: %s", _AUTH_CONFIGMAP, err)
            return False
        pem = (cm.get("data") or {}).get("client-ca-file")
        if not pem:
            self._ca_log(
                "cluster doesn't provide client-ca-file in configmap/%s in kube-system, so client certificate "
                "authentication won't work.",
                _AUTH_CONFIGMAP,
            )
            return False
        try:
            self._roots = parse_certs_pem(pem.encode(), f"configmap/{_AUTH_CONFIGMAP}")
        except CertError as err:
            self._ca_log("client-ca-file of configmap/%s: %s", _AUTH_CONFIGMAP, err)
            return False
        return True

    def _ca_log(self, message: str, *args: Any) -> None:
        """The first failed lookup is a warning, the retries' failures are debug lines."""
        log.log(logging.DEBUG if self._ca_warned else logging.WARNING, message, *args)
        self._ca_warned = True

    # --- authentication ------------------------------------------------------------------------------------------
    async def authenticate(self, request: web.Request) -> User | None:
        """The requester, anonymous when it sent no credentials; None when what it sent does not authenticate."""
        ssl_obj = request.transport.get_extra_info("ssl_object") if request.transport else None
        ders = peer_certificates(ssl_obj)
        if ders and self._roots is not None:
            try:
                cert = verify_client_certificate(ders, self._roots)
            except CertError as err:
                log.info("Unable to authenticate the request due to an error: %s", err)
                return None
            cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            if cns and cns[0].value:
                orgs = tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
                return User(str(cns[0].value), (*orgs, "system:authenticated"))
        auth = request.headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            token = auth[7:].strip()
            if token and self.authentication_client is not None:
                return await self._review_token(token)
            return None
        if self.anonymous:
            return User(_ANONYMOUS, ("system:unauthenticated",))
        return None

    async def _review_token(self, token: str) -> User | None:
        key = hmac.new(self._hmac_key, token.encode(), hashlib.sha256).digest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached if isinstance(cached, User) else None
        assert self.authentication_client is not None
        try:
            review = await self.authentication_client.post(
                _TOKEN_REVIEWS,
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
            )
        except Exception as err:  # the API is unreachable: not authenticated, nothing cached
            log.error("Unable to authenticate the request due to an error: token review failed: %s", err)
            return None
        status = review.get("status") or {}
        user: User | None = None
        if status.get("authenticated") and status.get("user"):
            u = status["user"]
            user = User(u.get("username") or "", tuple(u.get("groups") or ()), u.get("uid") or "")
        self._tokens.put(key, user if user is not None else False)
        return user

    # --- authorization -------------------------------------------------------------------------------------------
    def always_allowed(self, path: str) -> bool:
        return any(path == allowed or path.startswith(allowed + "/") for allowed in self.always_allow_paths)

    async def authorize(self, user: User, verb: str, path: str) -> bool:
        if self.always_allowed(path) or any(g in self.always_allow_groups for g in user.groups):
            return True
        if self.authorization_client is None:
            return False
        return await self.review((user, verb, path), user, {"nonResourceAttributes": {"path": path, "verb": verb}})

    async def review(self, key: Any, user: User, attributes: dict[str, Any]) -> bool:
        """The API's decision on a SubjectAccessReview of `user` and `attributes` (its spec's resourceAttributes or
        nonResourceAttributes), reused for CACHE_TTL seconds under `key`; a review that fails denies and is not
        cached."""
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached)
        assert self.authorization_client is not None
        try:
            review = await self.authorization_client.post(_ACCESS_REVIEWS, _access_review(user, attributes))
        except Exception as err:
            log.error("Unable to authorize the request due to an error: subject access review failed: %s", err)
            return False
        allowed = bool((review.get("status") or {}).get("allowed"))
        self._decisions.put(key, allowed)
        return allowed

    # --- the filter ----------------------------------------------------------------------------------------------
    def middleware(self) -> Callable[..., Awaitable[web.StreamResponse]]:
        """aiohttp middleware: 401 for credentials that do not authenticate, 403 for a denied request."""

        @web.middleware
        async def delegated(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            if self.always_allowed(request.path):
                return await handler(request)
            user = await self.authenticate(request)
            if user is None:
                return _status(401, "Unauthorized", "Unauthorized")
            verb = request.method.lower()
            if not await self.authorize(user, verb, request.path):
                return _status(403, "Forbidden", f'forbidden: User "{user.name}" cannot {verb} path "{request.path}"')
            return await handler(request)

        return delegated

    async def close(self) -> None:
        if self._ca_lookup is not None:
            self._ca_lookup.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ca_lookup
        for client in {id(k): k for k in (self.authentication_client, self.authorization_client) if k}.values():
            await client.close()


def _access_review(user: User, attributes: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), **attributes}
    if user.uid:
        spec["uid"] = user.uid
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def new_delegating_auth(
    client_ca_file: Path | None, authentication_kubeconfig: Path | None, authorization_kubeconfig: Path | None
) -> DelegatingAuth:
    """The component's delegated auth from its --client-ca-file, --authentication-kubeconfig and
    --authorization-kubeconfig flags (one client when both kubeconfigs are the same file, as kubeadm writes them)."""
    from pykubeadm.client import JSONRequests, async_client

    authn = JSONRequests(async_client(authentication_kubeconfig)) if authentication_kubeconfig else None
    authz: ApiClient | None
    if authorization_kubeconfig and authorization_kubeconfig == authentication_kubeconfig:
        authz = authn
    else:
        authz = JSONRequests(async_client(authorization_kubeconfig)) if authorization_kubeconfig else None
    return DelegatingAuth(client_ca_file=client_ca_file, authentication_client=authn, authorization_client=authz)
