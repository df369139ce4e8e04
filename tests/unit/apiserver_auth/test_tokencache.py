"""The token success cache (kube-apiserver's 10 s token cache): successes are reused until the TTL, failures never,
and a token is judged separately per requested audience set."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.authn.serviceaccount import REQUESTED_AUDIENCES
from pykubeadm.apiserver.authn.tokencache import CachedTokenAuthenticator
from pykubeadm.apiserver.authn.user import AuthenticationError, UserInfo


class Inner:
    def __init__(self) -> None:
        self.calls = 0
        self.valid = {"good"}

    async def __call__(self, token: str) -> UserInfo | None:
        self.calls += 1
        if token == "bad":
            raise AuthenticationError("invalid bearer token")
        return UserInfo(f"user-{token}") if token in self.valid else None


async def test_success_is_cached_until_the_ttl():
    now = [100.0]
    inner = Inner()
    cached = CachedTokenAuthenticator(inner, ttl=10.0, clock=lambda: now[0])
    assert (await cached("good")).name == "user-good"
    inner.valid.clear()  # the token was deleted: still accepted within the TTL, as kube-apiserver does
    assert (await cached("good")).name == "user-good" and inner.calls == 1
    now[0] += 10.5
    assert await cached("good") is None and inner.calls == 2


async def test_failures_and_unknown_tokens_are_not_cached():
    inner = Inner()
    cached = CachedTokenAuthenticator(inner)
    for _ in range(2):
        with pytest.raises(AuthenticationError):
            await cached("bad")
        assert await cached("unknown") is None
    assert inner.calls == 4


async def test_audiences_are_part_of_the_key():
    inner = Inner()
    cached = CachedTokenAuthenticator(inner)
    await cached("good")
    token = REQUESTED_AUDIENCES.set(("vault",))
    try:
        await cached("good")
    finally:
        REQUESTED_AUDIENCES.reset(token)
    assert inner.calls == 2
    assert all(len(k) == 32 and b"good" not in k for k in cached._cache)  # HMAC keys: the cache holds no token
