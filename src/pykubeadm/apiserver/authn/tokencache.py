"""kube-apiserver's token authentication cache (`pkg/authentication/token/cache`), used by authn/config.py.

A bearer token that authenticated is remembered for `SUCCESS_TTL` seconds (kube-apiserver's default 10 s), so a
client's requests on one token pay the JWT signature check or the bootstrap-token Secret lookup once per period
instead of once per request. Failures are never cached (kube's failure TTL is 0). Keys are an HMAC of the token (and
the requested audiences) under a per-process random key: the cache never holds a token itself.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from pykubeadm.apiserver.authn.serviceaccount import REQUESTED_AUDIENCES
from pykubeadm.apiserver.authn.user import UserInfo

__all__ = ["SUCCESS_TTL", "CachedTokenAuthenticator"]

#: Seconds an authenticated token's user is reused (kube-apiserver: --authentication-token-webhook-cache-ttl aside,
#: the token cache's success TTL is 10 s).
SUCCESS_TTL = 10.0
_MAX_ENTRIES = 16_384

TokenAuthenticator = Callable[[str], Awaitable[UserInfo | None]]


class CachedTokenAuthenticator:
    """Wraps a token authenticator with a success cache."""

    def __init__(
        self, inner: TokenAuthenticator, ttl: float = SUCCESS_TTL, clock: Callable[[], float] = time.monotonic
    ):
        self._inner = inner
        self._ttl = ttl
        self._clock = clock
        self._secret = os.urandom(32)
        self._cache: OrderedDict[bytes, tuple[float, UserInfo]] = OrderedDict()

    def _key(self, token: str) -> bytes:
        audiences = REQUESTED_AUDIENCES.get() or ()
        data = token.encode() + b"\x00" + "\x00".join(sorted(audiences)).encode()
        return hmac.new(self._secret, data, hashlib.sha256).digest()

    async def __call__(self, token: str) -> UserInfo | None:
        key = self._key(token)
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > now:
                return hit[1]
            del self._cache[key]
        user = await self._inner(token)
        if user is not None:
            self._cache[key] = (now + self._ttl, user)
            if len(self._cache) > _MAX_ENTRIES:
                self._cache.popitem(last=False)
        return user
