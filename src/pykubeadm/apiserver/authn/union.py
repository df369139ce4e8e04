"""Combinators for authenticators: bearer-token extraction, union, anonymous fallback, the system:authenticated adder.

`request_authenticator()` assembles kube-apiserver's chain: front proxy → x509 → bearer tokens, wrapped by the
authenticated-group adder, then anonymous (only when everything declined *without* an error). Any presented but
invalid credential therefore gives AuthenticationError (401), never anonymous access.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from pykubeadm import constants
from pykubeadm.apiserver.authn.user import (
    AuthenticationError,
    Authenticator,
    AuthRequest,
    TokenAuthenticator,
    UserInfo,
)

__all__ = [
    "ANONYMOUS",
    "anonymous",
    "bearer_token",
    "bearer_token_authenticator",
    "request_authenticator",
    "token_union",
    "union",
    "with_authenticated_group",
]

A = TypeVar("A")

#: The identity of requests without credentials (--anonymous-auth=true).
ANONYMOUS = UserInfo(name=constants.ANONYMOUS_USER, groups=(constants.UNAUTHENTICATED_GROUP,))


def bearer_token(req: AuthRequest) -> str | None:
    """The token of `Authorization: Bearer <token>` (scheme case-insensitive, split on single spaces), else None."""
    header = req.headers.get("Authorization") or req.headers.get("authorization") or ""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def _first_user(
    authenticators: Sequence[Callable[[A], Awaitable[UserInfo | None]]],
) -> Callable[[A], Coroutine[Any, Any, UserInfo | None]]:
    """Try `authenticators` in order on the same input; the first user wins. Errors are kept and raised (aggregated)
    only when nobody accepted; None when nobody recognised the credentials at all."""

    async def authenticate(credentials: A) -> UserInfo | None:
        errors: list[str] = []
        for auth in authenticators:
            try:
                user = await auth(credentials)
            except AuthenticationError as err:
                errors.append(str(err))
                continue
            if user is not None:
                return user
        if errors:
            raise AuthenticationError(_aggregate(errors))
        return None

    return authenticate


def token_union(*authenticators: TokenAuthenticator) -> TokenAuthenticator:
    """Try token authenticators in order; first user wins. Errors are kept and raised only if nobody accepted."""
    return _first_user(authenticators)


def bearer_token_authenticator(tokens: TokenAuthenticator) -> Authenticator:
    """A request Authenticator for bearer tokens: no header → None; a token nobody accepts → 'invalid bearer token'."""

    async def authenticate(req: AuthRequest) -> UserInfo | None:
        token = bearer_token(req)
        if token is None:
            return None
        user = await tokens(token)
        if user is None:
            raise AuthenticationError("invalid bearer token")
        return user

    return authenticate


def union(*authenticators: Authenticator) -> Authenticator:
    """First authenticator returning a user wins; if none does, raise the collected errors (if any), else None."""
    return _first_user(authenticators)


def with_authenticated_group(auth: Authenticator) -> Authenticator:
    """Append system:authenticated unless the user is anonymous or already carries (un)authenticated."""

    async def authenticate(req: AuthRequest) -> UserInfo | None:
        user = await auth(req)
        if user is None:
            return None
        return add_authenticated_group(user)

    return authenticate


def add_authenticated_group(user: UserInfo) -> UserInfo:
    if user.name == constants.ANONYMOUS_USER:
        return user
    if constants.AUTHENTICATED_GROUP in user.groups or constants.UNAUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, constants.AUTHENTICATED_GROUP), user.extra)


def anonymous() -> Authenticator:
    async def authenticate(req: AuthRequest) -> UserInfo | None:
        return ANONYMOUS

    return authenticate


def request_authenticator(
    front_proxy: Authenticator | None = None,
    x509: Authenticator | None = None,
    tokens: Sequence[TokenAuthenticator] = (),
    *,
    anonymous_auth: bool = True,
) -> Authenticator:
    """kube-apiserver's request authenticator. Returns the user (never None when anonymous_auth) or raises 401."""
    chain: list[Authenticator] = [a for a in (front_proxy, x509) if a is not None]
    if tokens:
        chain.append(bearer_token_authenticator(token_union(*tokens)))
    authenticated = with_authenticated_group(union(*chain))
    if not anonymous_auth:
        return authenticated
    fallback = anonymous()

    async def authenticate(req: AuthRequest) -> UserInfo | None:
        user = await authenticated(req)  # errors propagate: fail-on-error before anonymous
        return user if user is not None else await fallback(req)

    return authenticate


def _aggregate(errors: list[str]) -> str:
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
