"""The bootstrap-token Secret format (kube-system/bootstrap-token-<id>): names, keys, decoding, expiry, extra groups.

Shared by kubeadm (writes the Secret), the apiserver's bootstrap-token authenticator and the bootstrapsigner /
tokencleaner controllers (read it). Pure functions over the Secret's JSON dict; no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pykubeadm.bootstrap import token as _token

__all__ = [
    "AUTH_EXTRA_GROUPS_KEY",
    "BOOTSTRAP_TOKEN_SECRET_PREFIX",
    "BOOTSTRAP_TOKEN_SECRET_TYPE",
    "DESCRIPTION_KEY",
    "EXPIRATION_KEY",
    "TOKEN_ID_KEY",
    "TOKEN_SECRET_KEY",
    "USAGE_PREFIX",
    "BootstrapTokenSecret",
    "decode_secret_data",
    "is_expired",
    "parse_expiration",
    "secret_name",
    "split_token",
    "token_id_from_secret_name",
    "valid_extra_group",
]

#: Secret name prefix; the full name is bootstrap-token-<token-id> (owned by bootstrap/token.py).
BOOTSTRAP_TOKEN_SECRET_PREFIX: Final = _token.SECRET_NAME_PREFIX
#: Secret type of bootstrap tokens.
BOOTSTRAP_TOKEN_SECRET_TYPE: Final = "bootstrap.kubernetes.io/token"
TOKEN_ID_KEY: Final = "token-id"
TOKEN_SECRET_KEY: Final = "token-secret"
EXPIRATION_KEY: Final = "expiration"
DESCRIPTION_KEY: Final = "description"
AUTH_EXTRA_GROUPS_KEY: Final = "auth-extra-groups"
#: usage-bootstrap-<usage>: "true" enables a usage (authentication, signing).
USAGE_PREFIX: Final = "usage-bootstrap-"

# The token format itself lives in bootstrap/token.py; the Secret-name rule is the signer's `^bootstrap-token-<id>$`.
_SECRET_NAME_RE = re.compile(re.escape(_token.SECRET_NAME_PREFIX) + r"([a-z0-9]{6})")
_EXTRA_GROUP_RE = re.compile(r"system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]")


def split_token(token: str) -> tuple[str, str] | None:
    """(token-id, token-secret) of a well-formed bootstrap token, else None (no trimming, lower case only)."""
    m = _token.TOKEN_RE.match(token)
    return (m.group(1), m.group(2)) if m else None


def secret_name(token_id: str) -> str:
    """`bootstrap-token-<id>` (same as bootstrap.token.secret_name)."""
    return _token.secret_name(token_id)


def token_id_from_secret_name(name: str) -> str | None:
    m = _SECRET_NAME_RE.fullmatch(name)
    return m.group(1) if m else None


def valid_extra_group(group: str) -> bool:
    """auth-extra-groups entries must look like system:bootstrappers:<lowercase, digits, ':' '-'>."""
    return _EXTRA_GROUP_RE.fullmatch(group) is not None


def parse_expiration(value: str) -> datetime | None:
    """RFC 3339 time (Z or ±hh:mm, optional fraction) as an aware datetime; None if unparseable."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", value):
        return None
    try:
        return datetime.fromisoformat(value.upper())
    except ValueError:
        return None


def is_expired(expiration: str | None, now: datetime | None = None) -> bool:
    """True when the expiration time has passed (or cannot be parsed); no expiration key means never."""
    if expiration is None:
        return False
    when = parse_expiration(expiration)
    if when is None:
        return True
    return when - (now or datetime.now(UTC)) <= timedelta(0)


def decode_secret_data(secret: Mapping[str, Any]) -> dict[str, bytes] | None:
    """A Secret's `data` decoded from base64; None when `data` is missing or a value is not valid base64."""
    data = secret.get("data")
    if not isinstance(data, Mapping):
        return None
    out: dict[str, bytes] = {}
    for key, value in data.items():
        if not isinstance(value, str):
            return None
        try:
            out[key] = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
    return out


@dataclass(frozen=True)
class BootstrapTokenSecret:
    """The decoded fields of a bootstrap-token Secret (text values; missing keys are None / empty)."""

    name: str
    token_id: str | None
    token_secret: bytes | None
    expiration: str | None
    description: str | None
    usages: frozenset[str]
    extra_groups: tuple[str, ...]
    deleting: bool

    @classmethod
    def from_secret(cls, secret: Mapping[str, Any]) -> BootstrapTokenSecret | None:
        """Decode a Secret dict; None if it is not of type bootstrap.kubernetes.io/token or has no valid data."""
        if secret.get("type") != BOOTSTRAP_TOKEN_SECRET_TYPE:
            return None
        data = decode_secret_data(secret)
        if data is None:
            return None
        meta = secret.get("metadata") or {}

        def text(key: str) -> str | None:
            raw = data.get(key)
            return raw.decode("utf-8", "replace") if raw is not None else None

        usages = frozenset(
            k[len(USAGE_PREFIX) :] for k, v in data.items() if k.startswith(USAGE_PREFIX) and v == b"true"
        )
        groups_text = text(AUTH_EXTRA_GROUPS_KEY)
        return cls(
            name=str(meta.get("name", "")),
            token_id=text(TOKEN_ID_KEY),
            token_secret=data.get(TOKEN_SECRET_KEY),
            expiration=text(EXPIRATION_KEY),
            description=text(DESCRIPTION_KEY),
            usages=usages,
            extra_groups=tuple(groups_text.split(",")) if groups_text else (),
            deleting=bool(meta.get("deletionTimestamp")),
        )
