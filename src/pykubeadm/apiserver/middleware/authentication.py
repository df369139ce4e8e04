"""Authentication middleware: AuthRequest (headers + verified TLS client certificate) → UserInfo, or 401.

No credentials → `system:anonymous` in `system:unauthenticated` (when anonymous auth is on); present but invalid
credentials → 401 Unauthorized. The verified client certificate is parsed once per distinct DER.
"""

from __future__ import annotations

import _ssl
import ssl
import time
from functools import lru_cache
from typing import Any

from aiohttp import web
from cryptography import x509

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest, UserInfo
from pykubeadm.apiserver.handlers.context import USER_KEY
from pykubeadm.apiserver.state import STATE

__all__ = ["ANONYMOUS", "CERT_CACHE_TTL", "UNAUTHORIZED", "authentication_middleware", "peer_chain"]

ANONYMOUS = UserInfo(name="system:anonymous", groups=("system:unauthenticated",))
UNAUTHORIZED = st.ApiError(401, "Unauthorized", "Unauthorized")


@lru_cache(maxsize=1024)
def _load_cert(der: bytes) -> x509.Certificate:
    return x509.load_der_x509_certificate(der)


def _der(request: web.Request) -> bytes | None:
    transport = request.transport
    ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
    return ssl_obj.getpeercert(binary_form=True) if ssl_obj is not None else None


def peer_chain(request: web.Request) -> tuple[x509.Certificate, ...]:
    """The client's verified certificate chain (leaf first) when the TLS handshake verified it against the CA files.

    Python 3.13 exposes `SSLObject.get_verified_chain()`; on 3.11/3.12 the same call exists on the private `_sslobj`.
    Without either, only the leaf is returned (the authenticator then verifies it against its CA bundle)."""
    transport = request.transport
    ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
    if ssl_obj is None:
        return ()
    der = ssl_obj.getpeercert(binary_form=True)
    if not der:
        return ()
    return _chain_of(ssl_obj, der)


def _chain_of(ssl_obj: Any, leaf_der: bytes) -> tuple[x509.Certificate, ...]:
    get_chain = getattr(ssl_obj, "get_verified_chain", None) or getattr(
        getattr(ssl_obj, "_sslobj", None), "get_verified_chain", None
    )
    if get_chain is not None:
        try:
            ders = [c.public_bytes(_ssl.ENCODING_DER) for c in get_chain()]
        except (ValueError, AttributeError, ssl.SSLError):
            ders = []
        if ders and ders[0] == leaf_der:
            return tuple(_load_cert(d) for d in ders)
    return (_load_cert(leaf_der),)


#: Requests carrying any of these headers are never served from the certificate cache.
_CREDENTIAL_HEADER_PREFIXES = ("authorization", "impersonate-", "x-remote-")
CERT_CACHE_TTL = 10.0


def _cert_only(request: web.Request) -> bool:
    return not any(k.lower().startswith(_CREDENTIAL_HEADER_PREFIXES) for k in request.headers)


def authentication_middleware():
    # Verifying a client chain costs ~70 µs per authenticator; a client reuses its certificate on every request of a
    # keep-alive connection, so the outcome for "certificate only" requests is cached briefly per certificate.
    cache: dict[bytes, tuple[float, UserInfo | None]] = {}

    @web.middleware
    async def authentication(request: web.Request, handler):
        state = request.app[STATE]
        leaf = _der(request)
        key = leaf if leaf and _cert_only(request) else None
        now = time.monotonic()
        hit = cache.get(key) if key is not None else None
        if hit is not None and hit[0] > now:
            user = hit[1]  # the same certificate, verified again by this connection's handshake
        else:
            chain = peer_chain(request)
            req = AuthRequest(headers=request.headers, peer_chain=chain)
            try:
                user = await state.authenticator(req)
            except AuthenticationError:
                raise UNAUTHORIZED from None
            if key is not None:
                if len(cache) > 4096:
                    cache.clear()
                cache[key] = (now + CERT_CACHE_TTL, user)
        if user is None:
            if not state.anonymous:
                raise UNAUTHORIZED
            user = ANONYMOUS
        request[USER_KEY] = user
        return await handler(request)

    return authentication
