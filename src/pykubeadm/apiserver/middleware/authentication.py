"""Authentication middleware: AuthRequest (headers + the TLS client certificates) → UserInfo, or 401.

No credentials → `system:anonymous` in `system:unauthenticated` (when anonymous auth is on); present but invalid
credentials (a bad token; a client certificate that does not verify, has expired or is not for client auth)
→ 401 Unauthorized with kube's Status. Each distinct certificate DER is parsed once.
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from cryptography import x509

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest, UserInfo
from pykubeadm.apiserver.authn.x509 import CACHE_SIZE
from pykubeadm.apiserver.handlers.context import USER_KEY
from pykubeadm.apiserver.middleware.audit import Auditor, audit_failed_authentication
from pykubeadm.apiserver.state import STATE
from pykubeadm.util.tlsclientauth import peer_certificates

__all__ = ["ANONYMOUS", "CERT_CACHE_TTL", "UNAUTHORIZED", "authentication_middleware", "peer_chain"]

ANONYMOUS = UserInfo(name="system:anonymous", groups=("system:unauthenticated",))
UNAUTHORIZED = st.ApiError(401, "Unauthorized", "Unauthorized")

log = logging.getLogger("pykubeadm.apiserver")


@lru_cache(maxsize=CACHE_SIZE)
def _load_cert(der: bytes) -> x509.Certificate:
    return x509.load_der_x509_certificate(der)


def _der(request: web.Request) -> bytes | None:
    transport = request.transport
    ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
    return ssl_obj.getpeercert(binary_form=True) if ssl_obj is not None else None


def peer_chain(request: web.Request) -> tuple[x509.Certificate, ...]:
    """The certificates the client sent (leaf first, then its intermediates), not verified: the TLS layer accepts
    any certificate (util.tlsclientauth) and the x509 authenticator verifies the chain against --client-ca-file."""
    transport = request.transport
    ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
    return tuple(_load_cert(d) for d in peer_certificates(ssl_obj))


#: Requests carrying any of these headers are never served from the certificate cache.
_CREDENTIAL_HEADER_PREFIXES = ("authorization", "impersonate-", "x-remote-")
CERT_CACHE_TTL = 10.0


def _cert_only(request: web.Request) -> bool:
    return not any(k.lower().startswith(_CREDENTIAL_HEADER_PREFIXES) for k in request.headers)


def authentication_middleware(audit_sink: Auditor | None = None) -> Middleware:
    # Verifying a client chain costs ~70 µs per authenticator; a client reuses its certificate on every request of a
    # keep-alive connection, so the outcome for "certificate only" requests is cached briefly per certificate.
    cache: dict[bytes, tuple[float, UserInfo | None]] = {}

    @web.middleware
    async def authentication(request: web.Request, handler: Handler) -> web.StreamResponse:
        state = request.app[STATE]
        leaf = _der(request)
        key = leaf if leaf and _cert_only(request) else None
        now = time.monotonic()
        hit = cache.get(key) if key is not None else None
        if hit is not None and hit[0] > now:
            user = hit[1]  # the same leaf (its key proven by this connection's handshake), judged moments ago
        else:
            chain = peer_chain(request)
            req = AuthRequest(headers=request.headers, peer_chain=chain)
            try:
                user = await state.authenticator(req)
            except AuthenticationError as err:
                log.warning("Unable to authenticate the request due to an error: %s", err)
                audit_failed_authentication(audit_sink, request, bool(chain))
                raise UNAUTHORIZED from None
            if key is not None:
                if len(cache) >= CACHE_SIZE:
                    for k in [k for k, v in cache.items() if v[0] <= now]:
                        del cache[k]
                    if len(cache) >= CACHE_SIZE:
                        cache.clear()
                cache[key] = (now + CERT_CACHE_TTL, user)
        if user is None:
            if not state.anonymous:
                audit_failed_authentication(audit_sink, request, bool(leaf))
                raise UNAUTHORIZED
            user = ANONYMOUS
        request[USER_KEY] = user
        return await handler(request)

    return authentication
