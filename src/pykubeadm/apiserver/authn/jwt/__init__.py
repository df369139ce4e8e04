"""JWT (OpenID Connect) authentication: the --oidc-* flags and --authentication-config's `jwt` issuers
(config.py), each served by one JWTAuthenticator (authenticator.py) that discovers its issuer's keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pykubeadm.apiserver.authn.jwt.authenticator import JWTAuthenticator
from pykubeadm.apiserver.authn.jwt.config import (
    JWTConfigError,
    issuers_from_authentication_config,
    issuers_from_flags,
)

__all__ = ["JWTAuthenticator", "JWTConfigError", "jwt_authenticators"]


def jwt_authenticators(flags: Mapping[str, Any], path_of: Callable[[str, str], Path]) -> list[JWTAuthenticator]:
    """One authenticator per trusted issuer, from --authentication-config or the --oidc-* flags (flag names without
    `--`; `path_of(flag, value)` maps a file flag's value to a readable path). Raises JWTConfigError."""
    oidc = [k for k in flags if k.startswith("oidc-") and flags.get(k)]
    if flags.get("authentication-config"):
        path = path_of("authentication-config", str(flags["authentication-config"]))
        issuers = issuers_from_authentication_config(path, [f"--{k}" for k in oidc])
    else:
        issuers = issuers_from_flags(flags, lambda p: path_of("oidc-ca-file", p).read_text())
    return [JWTAuthenticator(i) for i in issuers]
