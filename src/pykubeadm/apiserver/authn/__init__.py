"""Authentication for the built-in kube-apiserver: identities, authenticators and their combinators.

Entry point for the core: `pykubeadm.apiserver.authn.config.build_auth` (imported from there, not re-exported here,
to keep this package free of authz/admission imports).
"""

from pykubeadm.apiserver.authn.union import (
    ANONYMOUS,
    add_authenticated_group,
    anonymous,
    bearer_token,
    request_authenticator,
    token_union,
    union,
    with_authenticated_group,
)
from pykubeadm.apiserver.authn.user import (
    AuthenticationError,
    Authenticator,
    AuthRequest,
    TokenAuthenticator,
    UserInfo,
)

__all__ = [
    "ANONYMOUS",
    "AuthRequest",
    "AuthenticationError",
    "Authenticator",
    "TokenAuthenticator",
    "UserInfo",
    "add_authenticated_group",
    "anonymous",
    "bearer_token",
    "request_authenticator",
    "token_union",
    "union",
    "with_authenticated_group",
]
