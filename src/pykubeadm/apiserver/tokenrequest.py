"""TokenRequest (`POST serviceaccounts/<name>/token`, `kubectl create token`): issue a bound service-account JWT signed
with --service-account-signing-key-file, with kube-apiserver's claims (iss, sub, aud, exp, iat, nbf, kubernetes.io).

The auth package's ServiceAccountTokenAuthenticator verifies these tokens; this module only signs them.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
import uuid
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.jws import key_id

__all__ = ["TokenIssuer"]

Obj = dict[str, Any]
DEFAULT_SECONDS = 3600
MIN_SECONDS = 600
MAX_SECONDS = 48 * 3600  # --service-account-max-token-expiration is unset: kube caps at 48h for bound tokens
#: The kubelet's kube-api-access tokens ask for this many seconds; bound to a Pod and for the API server's audiences,
#: kube-apiserver (--service-account-extend-token-expiration, default true) signs them for a year and puts the
#: requested expiry in a `warnafter` claim, while the answer still reports the requested expiry.
WARN_ONLY_SECONDS = 3607
EXTENDED_SECONDS = 365 * 24 * 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class TokenIssuer:
    def __init__(self, key_file: Path, issuer: str, audiences: list[str], *, extend_expiration: bool = True):
        self.extend_expiration = extend_expiration
        # the node's own key file, trusted as the flags naming it are: skip the RSA primality checks (~30 ms at start)
        key = serialization.load_pem_private_key(key_file.read_bytes(), None, unsafe_skip_rsa_key_validation=True)
        if isinstance(key, rsa.RSAPrivateKey):
            self.alg = "RS256"
        elif isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1":
            self.alg = "ES256"
        else:
            raise ValueError(f"--service-account-signing-key-file {key_file}: unsupported key type")
        self.key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = key
        self.kid = key_id(self.key.public_key())
        self.issuer = issuer
        self.audiences = audiences

    def sign(self, claims: Obj) -> str:
        header = {"alg": self.alg, "kid": self.kid}
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(claims, separators=(",", ":")).encode())
        )
        if isinstance(self.key, rsa.RSAPrivateKey):
            sig = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return signing_input + "." + _b64(sig)

    async def __call__(self, *, request: Any, kind: Any, body: Obj, user: Any) -> Obj:
        from pykubeadm.apiserver.handlers.context import admit_of, info_of, state_of

        info = info_of(request)
        sa_store = state_of(request).store("serviceaccounts")
        admit = admit_of(request, sa_store)
        if admit is not None:  # NodeRestriction: a node's token must be bound to a Pod on that node
            await admit("CREATE", body, None)
        sa = await sa_store.get(info.namespace, info.name)
        spec = body.get("spec") or {}
        seconds = spec.get("expirationSeconds") or DEFAULT_SECONDS
        if not isinstance(seconds, int) or seconds < MIN_SECONDS:
            raise st.invalid(
                "TokenRequest",
                "authentication.k8s.io",
                info.name,
                [
                    st.Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {seconds}: may not specify a duration less than 10 minutes",
                        "spec.expirationSeconds",
                    )
                ],
            )
        seconds = min(seconds, MAX_SECONDS)
        audiences = list(spec.get("audiences") or self.audiences)
        now = int(time.time())
        k8s: Obj = {
            "namespace": info.namespace,
            "serviceaccount": {"name": info.name, "uid": sa["metadata"].get("uid", "")},
        }
        ref = spec.get("boundObjectRef") or None
        if ref:
            kind_ = ref.get("kind")
            if kind_ not in ("Pod", "Secret", "Node"):
                raise st.bad_request(f"cannot bind token for object of kind {kind_!r}")
            resource = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}[kind_]
            target = (
                await state_of(request)
                .store(resource)
                .get(info.namespace if kind_ != "Node" else "", ref.get("name", ""))
            )
            if ref.get("uid") and ref["uid"] != target["metadata"].get("uid"):
                raise st.conflict(
                    kind_,
                    "",
                    ref.get("name", ""),
                    f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
                    "The object might have been deleted and then recreated",
                )
            if kind_ == "Pod" and (target.get("spec") or {}).get("serviceAccountName") != info.name:
                raise st.bad_request(
                    f'cannot bind token for serviceaccount "{info.name}" to pod running with different serviceaccount '
                    "name."
                )
            k8s[kind_.lower()] = {"name": ref.get("name", ""), "uid": target["metadata"].get("uid", "")}
        signed_seconds = seconds
        if (
            self.extend_expiration
            and "pod" in k8s
            and seconds == WARN_ONLY_SECONDS
            and set(audiences) <= set(self.audiences)
        ):
            k8s["warnafter"] = now + seconds
            signed_seconds = EXTENDED_SECONDS
        claims = {
            "aud": audiences,
            "exp": now + signed_seconds,
            "iat": now,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": k8s,
            "nbf": now,
            "sub": f"system:serviceaccount:{info.namespace}:{info.name}",
        }
        out = dict(body)
        out.setdefault("metadata", {})
        out["metadata"].update(
            {
                "name": info.name,
                "namespace": info.namespace,
                "creationTimestamp": dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        out["spec"] = {**spec, "audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": ref}
        exp = dt.datetime.fromtimestamp(now + seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out["status"] = {"token": self.sign(claims), "expirationTimestamp": exp}
        return out
