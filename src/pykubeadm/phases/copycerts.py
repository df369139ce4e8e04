"""`upload-certs` / join's `download-certs`: the kubeadm-certs Secret, AES-256-GCM with the certificate key (§7.7).

Each file is sealed as nonce(12) || ciphertext || tag. The Secret is owned by a short-lived bootstrap token Secret, so
the token cleaner's deletion of that token garbage-collects the certificates.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.phases import objects as o
from pykubeadm.phases.objects import Obj

__all__ = [
    "CERT_TOKEN_DESCRIPTION",
    "CertFile",
    "certs_secret",
    "certs_secret_rbac",
    "decode_certificate_key",
    "decrypt",
    "encrypt",
    "generate_certificate_key",
    "read_shared_files",
    "shared_cert_files",
]

#: Description of the token owning the kubeadm-certs Secret.
CERT_TOKEN_DESCRIPTION = "Proxy for managing TTL for the kubeadm-certs secret"
_NONCE_SIZE = 12


def generate_certificate_key() -> str:
    """32 random bytes as 64 lower-case hex characters (`kubeadm certs certificate-key`)."""
    return secrets.token_bytes(c.CERTIFICATE_KEY_SIZE).hex()


def decode_certificate_key(key: str) -> bytes:
    try:
        raw = bytes.fromhex(key)
    except ValueError as err:
        raise KubeadmError("error decoding certificate key") from err
    if len(raw) != c.CERTIFICATE_KEY_SIZE:
        raise KubeadmError(
            f"error decoding certificate key: the key must be {c.CERTIFICATE_KEY_SIZE} bytes "
            f"({2 * c.CERTIFICATE_KEY_SIZE} hex characters), got {len(raw)}"
        )
    return raw


def encrypt(data: bytes, key: bytes) -> bytes:
    nonce = os.urandom(_NONCE_SIZE)
    return nonce + AESGCM(key).encrypt(nonce, data, None)


def decrypt(blob: bytes, key: bytes) -> bytes:
    if len(blob) < _NONCE_SIZE:
        raise KubeadmError("ciphertext too short")
    try:
        return AESGCM(key).decrypt(blob[:_NONCE_SIZE], blob[_NONCE_SIZE:], None)
    except InvalidTag as err:
        raise KubeadmError(
            "error decrypting certificate data: the certificate key is wrong or the data was modified"
        ) from err


@dataclass(frozen=True)
class CertFile:
    """One shared file: its Secret data key and its node path (relative to certificatesDir unless absolute)."""

    key: str
    path: str
    private: bool


def shared_cert_files(external_etcd: tuple[str, str, str] | None = None) -> list[CertFile]:
    """The files kubeadm shares between control-plane nodes; for external etcd, (caFile, certFile, keyFile)."""
    files = [
        CertFile("ca.crt", "ca.crt", False),
        CertFile("ca.key", "ca.key", True),
        CertFile("sa.key", "sa.key", True),
        CertFile("sa.pub", "sa.pub", True),
        CertFile("front-proxy-ca.crt", "front-proxy-ca.crt", False),
        CertFile("front-proxy-ca.key", "front-proxy-ca.key", True),
    ]
    if external_etcd is None:
        files += [CertFile("etcd-ca.crt", "etcd/ca.crt", False), CertFile("etcd-ca.key", "etcd/ca.key", True)]
    else:
        ca, cert, key = external_etcd
        files += [
            CertFile("external-etcd-ca.crt", ca, False),
            CertFile("external-etcd.crt", cert, False),
            CertFile("external-etcd.key", key, True),
        ]
    return [f for f in files if f.path]


def certs_secret(files: dict[str, bytes], key: bytes, owner_token_secret: Obj) -> Obj:
    """kube-system/kubeadm-certs with every file sealed, owned by the short-lived token's Secret (needs its uid)."""
    secret = o.secret(c.KUBEADM_CERTS_SECRET, c.NAMESPACE_SYSTEM, {k: encrypt(v, key) for k, v in files.items()})
    meta = owner_token_secret["metadata"]
    secret["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return secret


def certs_secret_rbac() -> list[Obj]:
    name = c.KUBEADM_CERTS_CLUSTER_ROLE_NAME
    return [
        o.role(
            name, c.NAMESPACE_SYSTEM, [o.policy_rule(["get"], ["secrets"], resource_names=[c.KUBEADM_CERTS_SECRET])]
        ),
        o.role_binding(name, c.NAMESPACE_SYSTEM, name, [o.group(c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP)]),
    ]


def read_shared_files(resolve: Callable[[str], Path], files: list[CertFile]) -> dict[str, bytes]:
    """The existing shared files (missing ones are skipped, as kubeadm does); `resolve` maps a CertFile path
    (relative to certificatesDir, or an absolute node path) to the file on this machine."""
    out: dict[str, bytes] = {}
    for f in files:
        p = resolve(f.path)
        if p.is_file():
            out[f.key] = p.read_bytes()
    return out
