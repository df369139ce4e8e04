"""Compact JWS / JWT parsing and signature verification for service-account tokens (RS*/PS*/ES* via `cryptography`).

Called by `serviceaccount.py`. Only parsing and claim plumbing live here; every signature check is `cryptography`'s.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

__all__ = ["JWSError", "ParsedJWS", "key_id", "parse_compact", "verify_signature"]

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

_HASHES: dict[str, type[hashes.HashAlgorithm]] = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_EC_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}


class JWSError(Exception):
    """The token is not a well-formed compact JWS or its signature does not verify."""


@dataclass(frozen=True)
class ParsedJWS:
    header: dict[str, Any]
    claims: dict[str, Any]
    signing_input: bytes
    signature: bytes


def b64url_decode(part: str) -> bytes:
    if any(c in part for c in "=+/ \n"):
        raise JWSError("invalid base64url segment")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError) as err:
        raise JWSError("invalid base64url segment") from err


def parse_compact(token: str) -> ParsedJWS:
    """Split `header.payload.signature`, decode header and claims as JSON objects (no verification)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JWSError("token is not a compact JWS")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
    except (ValueError, UnicodeDecodeError) as err:
        raise JWSError("token segment is not JSON") from err
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise JWSError("token segment is not a JSON object")
    return ParsedJWS(header, claims, f"{parts[0]}.{parts[1]}".encode(), b64url_decode(parts[2]))


def key_id(key: PublicKey) -> str:
    """kube-apiserver's `kid`: base64url (no padding) of SHA-256 over the DER SubjectPublicKeyInfo."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def verify_signature(jws: ParsedJWS, key: PublicKey) -> bool:
    """True iff the signature verifies with `key` under the header's `alg` (RS256/384/512, PS*, ES256/384/512)."""
    alg = jws.header.get("alg")
    if not isinstance(alg, str) or len(alg) != 5 or alg[2:] not in _HASHES:
        return False
    hash_alg = _HASHES[alg[2:]]()
    try:
        if alg.startswith("RS") and isinstance(key, rsa.RSAPublicKey):
            key.verify(jws.signature, jws.signing_input, padding.PKCS1v15(), hash_alg)
            return True
        if alg.startswith("PS") and isinstance(key, rsa.RSAPublicKey):
            pss = padding.PSS(mgf=padding.MGF1(hash_alg), salt_length=hash_alg.digest_size)
            key.verify(jws.signature, jws.signing_input, pss, hash_alg)
            return True
        if alg in _EC_CURVES and isinstance(key, ec.EllipticCurvePublicKey):
            if not isinstance(key.curve, _EC_CURVES[alg]):
                return False
            size = (key.curve.key_size + 7) // 8
            if len(jws.signature) != 2 * size:
                return False
            r = int.from_bytes(jws.signature[:size], "big")
            s = int.from_bytes(jws.signature[size:], "big")
            key.verify(encode_dss_signature(r, s), jws.signing_input, ec.ECDSA(hash_alg))
            return True
    except InvalidSignature:
        return False
    return False
