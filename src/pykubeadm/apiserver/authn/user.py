"""The authenticated identity of a request (k8s.io/apiserver user.Info) and the Authenticator protocol.

Authenticators are small async callables; `union()` in this package tries them in order. The HTTP layer builds an
`AuthRequest` from the aiohttp request (headers, verified TLS peer certificate chain) so authenticators never see aiohttp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cryptography import x509

__all__ = ["AuthRequest", "AuthenticationError", "Authenticator", "TokenAuthenticator", "UserInfo"]


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class AuthRequest:
    """What authenticators may look at: headers and the client's certificate chain (leaf first), if any."""

    headers: Mapping[str, str]
    peer_chain: tuple[x509.Certificate, ...] = ()


class Authenticator(Protocol):
    async def __call__(self, req: AuthRequest, /) -> UserInfo | None:
        """The user, or None when this authenticator has no opinion; raises AuthenticationError for bad credentials."""
        ...


class TokenAuthenticator(Protocol):
    async def __call__(self, token: str, /) -> UserInfo | None:
        """The user a bearer token stands for, or None when this authenticator does not know the token."""
        ...


class AuthenticationError(Exception):
    """Credentials were presented but are invalid (→ 401 Unauthorized)."""
