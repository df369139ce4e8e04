"""The bootstrap token string format: `<id>.<secret>` (6 + 16 chars of [a-z0-9]); generation, parsing, validation.

Pure functions shared by kubeadm (token commands, config defaults), the apiserver's bootstrap-token authenticator and the
controllers. Never log the secret part: use `token_id()` or `redact()` in messages.
"""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

__all__ = [
    "BOOTSTRAP_TOKEN_ID_BYTES",
    "BOOTSTRAP_TOKEN_PATTERN",
    "BOOTSTRAP_TOKEN_SECRET_BYTES",
    "TOKEN_ID_PATTERN",
    "TOKEN_ID_RE",
    "TOKEN_RE",
    "BootstrapTokenString",
    "generate_token",
    "is_valid_token",
    "is_valid_token_id",
    "parse_token",
    "random_string",
    "redact",
    "secret_name",
    "token_id",
]

#: Pattern strings as kubeadm prints them in messages.
BOOTSTRAP_TOKEN_PATTERN = r"\A([a-z0-9]{6})\.([a-z0-9]{16})\z"
TOKEN_ID_PATTERN = r"\A([a-z0-9]{6})\z"
TOKEN_RE = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{16})\Z")
TOKEN_ID_RE = re.compile(r"\A([a-z0-9]{6})\Z")
BOOTSTRAP_TOKEN_ID_BYTES = 6
BOOTSTRAP_TOKEN_SECRET_BYTES = 16
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
#: Largest multiple of 36 below 256: bytes >= this are rejected so that `b % 36` is uniform.
_MAX_BYTE = 252
#: Prefix of the Secret name holding a token (`bootstrap-token-<id>`).
SECRET_NAME_PREFIX = "bootstrap-token-"


class BootstrapTokenString(NamedTuple):
    id: str
    secret: str

    def __str__(self) -> str:
        return f"{self.id}.{self.secret}"


def random_string(length: int) -> str:
    """`length` chars from [0-9a-z], uniformly, by rejection sampling of random bytes (>= 252 discarded)."""
    out: list[str] = []
    while len(out) < length:
        for b in secrets.token_bytes(length - len(out) + 8):
            if b < _MAX_BYTE:
                out.append(_ALPHABET[b % 36])
                if len(out) == length:
                    break
    return "".join(out)


def generate_token() -> str:
    """A new random bootstrap token `xxxxxx.xxxxxxxxxxxxxxxx`."""
    return f"{random_string(BOOTSTRAP_TOKEN_ID_BYTES)}.{random_string(BOOTSTRAP_TOKEN_SECRET_BYTES)}"


def is_valid_token(token: str) -> bool:
    return TOKEN_RE.match(token) is not None


def is_valid_token_id(value: str) -> bool:
    return TOKEN_ID_RE.match(value) is not None


def parse_token(token: str) -> BootstrapTokenString:
    """Split a token into (id, secret); ValueError with kubeadm's message if it is not of the right form."""
    m = TOKEN_RE.match(token)
    if m is None:
        raise ValueError(f'the bootstrap token "{token}" was not of the form "{BOOTSTRAP_TOKEN_PATTERN}"')
    return BootstrapTokenString(m.group(1), m.group(2))


def token_id(token: str) -> str:
    """The public id part of a token (or the input, if it is already just an id)."""
    return token.split(".", 1)[0]


def redact(token: str) -> str:
    """A token safe to show in logs: `abcdef.****************`."""
    return token_id(token) + ".****************" if "." in token else token


def secret_name(token_or_id: str) -> str:
    """Name of the kube-system Secret holding the token (`bootstrap-token-<id>`)."""
    return SECRET_NAME_PREFIX + token_id(token_or_id)
