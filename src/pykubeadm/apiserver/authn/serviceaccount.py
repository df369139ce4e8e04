"""Service-account token authenticator: legacy and bound JWTs signed with the --service-account-key-file keys.

Used by `config.build_auth` as one of the bearer-token authenticators. Checks, in kube-apiserver's order: issuer
(from the unverified payload; unknown → not ours), signature (keys matching `kid`, else all), time claims, audiences,
then that the ServiceAccount (and bound Pod / Secret / Node) still exists with the same UID.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pykubeadm.apiserver.authn import jws
from pykubeadm.apiserver.authn.user import AuthenticationError, UserInfo
from pykubeadm.apiserver.objects import ObjectSource

__all__ = [
    "LEGACY_ISSUER",
    "MATCHED_AUDIENCES",
    "REQUESTED_AUDIENCES",
    "ServiceAccountTokenAuthenticator",
    "load_public_keys",
    "service_account_groups",
    "service_account_username",
]

#: `iss` of legacy (Secret-based) service-account tokens.
LEGACY_ISSUER = "kubernetes/serviceaccount"
_SA_PREFIX = "system:serviceaccount:"
#: Audiences a TokenReview asks for (None: the API server's own audiences). Set by `authn.reviews.token_review`.
REQUESTED_AUDIENCES: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "requested_audiences", default=None
)
#: Set by the authenticator on success: the audiences the token was accepted for.
MATCHED_AUDIENCES: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "matched_audiences", default=None
)
_DELETION_LEEWAY_SECONDS = 60
#: Clock skew tolerated on a bound token's exp, nbf and iat (go-jose's jwt.DefaultLeeway, one minute).
_CLOCK_SKEW_LEEWAY_SECONDS = 60
_POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
_POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
_NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
_NODE_UID_EXTRA = "authentication.kubernetes.io/node-uid"
_CREDENTIAL_ID_EXTRA = "authentication.kubernetes.io/credential-id"


def service_account_username(namespace: str, name: str) -> str:
    return f"{_SA_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")


def load_public_keys(paths: Iterable[str | Path]) -> list[jws.PublicKey]:
    """Every RSA/ECDSA public key in the PEM files (public keys, private keys, certificates), as kube-apiserver reads them."""
    keys: list[jws.PublicKey] = []
    for path in paths:
        data = Path(path).read_bytes()
        found = 0
        for block in _pem_blocks(data):
            key = _public_key_of(block)
            if key is not None:
                keys.append(key)
                found += 1
        if not found:
            raise ValueError(
                f"error reading public key file {path}: data does not contain any valid RSA or ECDSA public keys"
            )
    return keys


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, start = [], data.find(b"-----BEGIN ")
    while start != -1:
        end_marker = data.find(b"-----END ", start)
        if end_marker == -1:
            break
        end = data.find(b"-----", end_marker + 9)
        if end == -1:
            break
        blocks.append(data[start : end + 5])
        start = data.find(b"-----BEGIN ", end + 5)
    return blocks


def _public_key_of(block: bytes) -> jws.PublicKey | None:
    key: Any = None
    try:
        if b"CERTIFICATE" in block.split(b"\n", 1)[0]:
            key = x509.load_pem_x509_certificate(block).public_key()
        elif b"PRIVATE KEY" in block.split(b"\n", 1)[0]:
            key = serialization.load_pem_private_key(block, password=None).public_key()
        else:
            key = serialization.load_pem_public_key(block)
    except (ValueError, TypeError):
        return None
    return key if isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey) else None


class ServiceAccountTokenAuthenticator:
    """A TokenAuthenticator for JWTs issued by this cluster (`issuers`) or legacy tokens (when `allow_legacy`)."""

    def __init__(
        self,
        keys: Sequence[jws.PublicKey],
        issuers: Sequence[str],
        audiences: Sequence[str] = (),
        source: ObjectSource | None = None,
        *,
        allow_legacy: bool = True,
        clock: Any = time.time,
    ):
        self._keys = [(jws.key_id(k), k) for k in keys]
        self._issuers = set(issuers)
        self._audiences = set(audiences or issuers)
        self._source = source
        self._allow_legacy = allow_legacy
        self._clock = clock

    async def __call__(self, token: str) -> UserInfo | None:
        try:
            parsed = jws.parse_compact(token)
        except jws.JWSError:
            return None
        iss = parsed.claims.get("iss")
        legacy = iss == LEGACY_ISSUER and self._allow_legacy
        if not legacy and iss not in self._issuers:
            return None
        kid = parsed.header.get("kid")
        candidates = [k for i, k in self._keys if i == kid] if kid else []
        if not candidates:
            candidates = [k for _, k in self._keys]
        if not any(jws.verify_signature(parsed, k) for k in candidates):
            raise AuthenticationError("invalid bearer token, square/go-jose: error in cryptographic primitive")
        return await (self._legacy_user(parsed.claims) if legacy else self._bound_user(parsed.claims))

    def _check_times(self, claims: dict[str, Any]) -> None:
        """exp, nbf and iat against our clock with go-jose's default leeway (kube's claims.go: jwt.Expected{Time})."""
        now = self._clock()
        exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
        if exp is not None and (not isinstance(exp, int | float) or now - _CLOCK_SKEW_LEEWAY_SECONDS > exp):
            raise AuthenticationError("service account token has expired")
        if nbf is not None and (not isinstance(nbf, int | float) or now + _CLOCK_SKEW_LEEWAY_SECONDS < nbf):
            raise AuthenticationError("service account token is not valid yet")
        if iat is not None and (not isinstance(iat, int | float) or now + _CLOCK_SKEW_LEEWAY_SECONDS < iat):
            raise AuthenticationError("service account token is issued in the future")

    async def _bound_user(self, claims: dict[str, Any]) -> UserInfo:
        self._check_times(claims)
        aud = claims.get("aud")
        token_aud = {aud} if isinstance(aud, str) else set(aud) if isinstance(aud, list) else set()
        wanted = set(REQUESTED_AUDIENCES.get() or self._audiences)
        matched = (token_aud & wanted) if aud is not None else wanted
        if not matched:
            raise AuthenticationError(
                f"token audiences {sorted(token_aud)} is invalid for the target audiences {sorted(wanted)}"
            )
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise AuthenticationError("service account token claims could not be validated")
        ns = private.get("namespace")
        sa = private.get("serviceaccount") or {}
        if not isinstance(ns, str) or not ns or not isinstance(sa, dict) or not sa.get("name"):
            raise AuthenticationError("service account token claims could not be validated")
        if claims.get("sub") != service_account_username(ns, sa["name"]):
            raise AuthenticationError("service account token claims could not be validated")
        extra: dict[str, tuple[str, ...]] = {}
        await self._require_live("serviceaccounts", ns, sa["name"], sa.get("uid", ""))
        pod = private.get("pod")
        if isinstance(pod, dict) and pod.get("name"):
            await self._require_live("pods", ns, pod["name"], pod.get("uid", ""))
            extra[_POD_NAME_EXTRA] = (pod["name"],)
            extra[_POD_UID_EXTRA] = (pod.get("uid", ""),)
        secret = private.get("secret")
        if isinstance(secret, dict) and secret.get("name"):
            await self._require_live("secrets", ns, secret["name"], secret.get("uid", ""))
        node = private.get("node")
        if isinstance(node, dict) and node.get("name"):
            await self._require_live("nodes", "", node["name"], node.get("uid", ""))
            extra[_NODE_NAME_EXTRA] = (node["name"],)
            extra[_NODE_UID_EXTRA] = (node.get("uid", ""),)
        if isinstance(claims.get("jti"), str) and claims["jti"]:
            extra[_CREDENTIAL_ID_EXTRA] = (f"JTI={claims['jti']}",)
        MATCHED_AUDIENCES.set(tuple(sorted(matched)))
        return UserInfo(service_account_username(ns, sa["name"]), sa.get("uid", ""), service_account_groups(ns), extra)

    async def _legacy_user(self, claims: dict[str, Any]) -> UserInfo:
        ns = claims.get("kubernetes.io/serviceaccount/namespace")
        name = claims.get("kubernetes.io/serviceaccount/service-account.name")
        uid = claims.get("kubernetes.io/serviceaccount/service-account.uid", "")
        secret = claims.get("kubernetes.io/serviceaccount/secret.name")
        if not (isinstance(ns, str) and ns and isinstance(name, str) and name and isinstance(secret, str) and secret):
            raise AuthenticationError("service account token claims could not be validated")
        if claims.get("sub") != service_account_username(ns, name):
            raise AuthenticationError("service account token claims could not be validated")
        self._check_times(claims)
        await self._require_live("serviceaccounts", ns, name, uid)
        await self._require_live("secrets", ns, secret, "")
        return UserInfo(service_account_username(ns, name), uid, service_account_groups(ns))

    async def _require_live(self, resource: str, namespace: str, name: str, uid: str) -> None:
        if self._source is None:
            return
        obj = await self._source.get(resource, namespace, name)
        kind = resource[:-1]
        if obj is None:
            raise AuthenticationError(f"{kind} {_qualified(namespace, name)} not found")
        meta = obj.get("metadata") or {}
        if uid and meta.get("uid") != uid:
            raise AuthenticationError(
                f"{kind} {_qualified(namespace, name)} has been deleted and recreated (uid mismatch)"
            )
        deleted = meta.get("deletionTimestamp")
        if deleted:
            try:
                when = datetime.fromisoformat(str(deleted).replace("Z", "+00:00")).timestamp()
            except ValueError:
                when = 0.0
            if self._clock() - when > _DELETION_LEEWAY_SECONDS:
                raise AuthenticationError(f"{kind} {_qualified(namespace, name)} has been deleted")


def _qualified(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
