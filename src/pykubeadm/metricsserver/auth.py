"""Authentication and authorization of the metrics server's requests, as an aggregated API server's must be.

Authentication (k8s.io/apiserver's delegated authentication): the aggregator's requests carry the user in
front-proxy headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`), believed only when the connection's
client certificate verifies against `requestheader-client-ca-file` and its CN is among `requestheader-allowed-names`,
all read from the ConfigMap kube-system/extension-apiserver-authentication (the apiserver's RequestHeaderAuthenticator
judges them); other callers authenticate with a client certificate of the cluster's client CA or a bearer token
(TokenReview), through controllers.app.delegatedauth, or are anonymous.
Authorization: /livez, /readyz and /healthz always; the `system:masters` group always; a metrics.k8s.io request is a
SubjectAccessReview of its resource attributes (verb get/list/watch, group, version, resource, namespace, name), any
other path one of the path and method. Decisions are cached for 10 s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from cryptography import x509

from pykubeadm import constants as c
from pykubeadm.apiserver.authn.requestheader import RequestHeaderAuthenticator, RequestHeaderConfig
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from pykubeadm.controllers.app.delegatedauth import AUTH_CONFIGMAP_PATH, ApiClient, DelegatingAuth, User
from pykubeadm.errors import CertError
from pykubeadm.pki.certs import parse_certs_pem
from pykubeadm.util.tlsclientauth import peer_certificates

__all__ = ["ExtensionAuth", "ResourceRequest", "status_response"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResourceRequest:
    """A metrics.k8s.io request's attributes."""

    verb: str
    group: str
    version: str
    resource: str
    namespace: str = ""
    name: str = ""


def status_response(code: int, reason: str, message: str, details: dict[str, str] | None = None) -> web.Response:
    body: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": reason, "code": code}  # fmt: skip
    if details:
        body["details"] = details
    return web.Response(status=code, text=json.dumps(body), content_type="application/json")


def _json_list(text: str | None) -> tuple[str, ...]:
    try:
        values = json.loads(text or "[]")
    except ValueError:
        return ()
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


class ExtensionAuth:
    """Front-proxy headers, else DelegatingAuth; SubjectAccessReviews of resource attributes."""

    def __init__(self, client: ApiClient, delegating: DelegatingAuth) -> None:
        self.client = client
        self.delegating = delegating
        self._requestheader: RequestHeaderAuthenticator | None = None

    async def start(self) -> None:
        await self.delegating.start()
        await self.load_requestheader()

    async def load_requestheader(self) -> bool:
        """Read the front-proxy trust from extension-apiserver-authentication; False when it is not there (yet)."""
        try:
            cm = await self.client.get(AUTH_CONFIGMAP_PATH)
        except Exception as err:
            log.warning("Unable to get configmap/%s in kube-system: %s", c.EXTENSION_APISERVER_AUTHENTICATION_CONFIGMAP,
                        err)  # fmt: skip
            return False
        data = cm.get("data") or {}
        pem = data.get("requestheader-client-ca-file")
        if not pem:
            log.warning("cluster doesn't provide requestheader-client-ca-file in configmap/%s in kube-system, so "
                        "request-header client certificate authentication won't work.",
                        c.EXTENSION_APISERVER_AUTHENTICATION_CONFIGMAP)  # fmt: skip
            return False
        try:
            roots = tuple(parse_certs_pem(pem.encode(), "requestheader-client-ca-file"))
        except CertError as err:
            log.warning("requestheader-client-ca-file: %s", err)
            return False
        self._requestheader = RequestHeaderAuthenticator(
            RequestHeaderConfig(
                client_ca=roots,
                allowed_names=_json_list(data.get("requestheader-allowed-names")),
                username_headers=_json_list(data.get("requestheader-username-headers")) or ("X-Remote-User",),
                uid_headers=_json_list(data.get("requestheader-uid-headers")),
                group_headers=_json_list(data.get("requestheader-group-headers")) or ("X-Remote-Group",),
                extra_header_prefixes=_json_list(data.get("requestheader-extra-headers-prefix"))
                or ("X-Remote-Extra-",),
            )
        )
        return True

    async def authenticate(self, request: web.Request) -> User | None:
        if self._requestheader is not None:
            ssl_obj = request.transport.get_extra_info("ssl_object") if request.transport else None
            ders = peer_certificates(ssl_obj)
            if ders:
                chain = tuple(x509.load_der_x509_certificate(d) for d in ders)
                try:
                    info = await self._requestheader(AuthRequest(request.headers, chain))
                except (AuthenticationError, CertError) as err:
                    info = None
                    log.debug("request-header authentication did not apply: %s", err)
                if info is not None:
                    return User(info.name, tuple(info.groups), info.uid)
        return await self.delegating.authenticate(request)

    async def authorize(self, user: User, verb: str, path: str, res: ResourceRequest | None) -> bool:
        if res is None or any(g in self.delegating.always_allow_groups for g in user.groups):
            return await self.delegating.authorize(user, verb, path)
        if self.delegating.authorization_client is None:
            return False
        attributes = {"verb": res.verb, "group": res.group, "version": res.version, "resource": res.resource}
        if res.namespace:
            attributes["namespace"] = res.namespace
        if res.name:
            attributes["name"] = res.name
        return await self.delegating.review((user, res), user, {"resourceAttributes": attributes})

    def middleware(
        self, resource_of: Callable[[web.Request], ResourceRequest | None]
    ) -> Callable[..., Awaitable[web.StreamResponse]]:
        @web.middleware
        async def filter_(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            if self.delegating.always_allowed(request.path):
                return await handler(request)
            user = await self.authenticate(request)
            if user is None:
                return status_response(401, "Unauthorized", "Unauthorized")
            res = resource_of(request)
            verb = res.verb if res is not None else request.method.lower()
            if not await self.authorize(user, verb, request.path, res):
                if res is not None:
                    where = f' in the namespace "{res.namespace}"' if res.namespace else " at the cluster scope"
                    quoted = f'"{res.name}" ' if res.name else ""
                    msg = (
                        f'{res.resource}.{res.group} {quoted}is forbidden: User "{user.name}" cannot {verb} '
                        f'resource "{res.resource}" in API group "{res.group}"{where}'
                    )
                    return status_response(403, "Forbidden", msg, {"group": res.group, "kind": res.resource})
                return status_response(403, "Forbidden", f'forbidden: User "{user.name}" cannot {verb} path '
                                       f'"{request.path}"')  # fmt: skip
            request["user"] = user
            return await handler(request)

        return filter_

    async def close(self) -> None:
        await self.delegating.close()
