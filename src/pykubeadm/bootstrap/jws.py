"""Detached JWS (RFC 7515 appendix F) of the cluster-info kubeconfig, keyed by a bootstrap token.

Written by the bootstrapsigner controller into `kube-public/cluster-info` as `jws-kubeconfig-<token-id>` and checked by
join discovery. Format (cluster-bootstrap's token/jws): protected header `{"alg":"HS256","kid":"<token-id>"}`, payload
the kubeconfig text, HMAC-SHA256 keyed with the *token-secret* only, output `b64(header) + ".." + b64(mac)`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

__all__ = ["compute_detached_signature", "detached_token_is_valid"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def compute_detached_signature(content: str | bytes, token_id: str, token_secret: str | bytes) -> str:
    """The detached JWS of `content` with key id `token_id` and HMAC key `token_secret` (the 16-char secret)."""
    if isinstance(content, str):
        content = content.encode("utf-8")
    if isinstance(token_secret, str):
        token_secret = token_secret.encode("utf-8")
    # Compact JSON, keys in the order Go's go-jose writes them.
    header = json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode()
    protected = _b64url(header)
    signing_input = f"{protected}.{_b64url(content)}".encode("ascii")
    mac = hmac.new(token_secret, signing_input, hashlib.sha256).digest()
    return f"{protected}..{_b64url(mac)}"


def detached_token_is_valid(
    detached_token: str, content: str | bytes, token_id: str, token_secret: str | bytes
) -> bool:
    """True iff `detached_token` is the signature of `content` for this token (constant-time compare)."""
    expected = compute_detached_signature(content, token_id, token_secret)
    return hmac.compare_digest(expected.encode("ascii"), detached_token.encode("utf-8", "replace"))
