"""Helpers for the apiserver security-layer tests: real X.509 material, JWT minting, and a kubeadm-like cluster state
(default RBAC policy + kubeadm's RBAC + a bootstrap token + two nodes with pods) in a DictObjectSource."""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.apiserver.authz.bootstrap_policy import default_policy
from pykubeadm.apiserver.objects import DictObjectSource

NOW = dt.datetime.now(dt.UTC)
BOOTSTRAP_TOKEN = "abcdef.0123456789abcdef"
STATIC_TOKEN = "02b50b05283e98dd0fd71db496ef01e8"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    if cn:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


@dataclass
class CA:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        cn: str,
        orgs: tuple[str, ...] = (),
        *,
        eku: tuple[x509.ObjectIdentifier, ...] | None = (ExtendedKeyUsageOID.CLIENT_AUTH,),
        not_before: dt.datetime | None = None,
        not_after: dt.datetime | None = None,
        is_ca: bool = False,
    ) -> x509.Certificate:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, orgs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before or NOW - dt.timedelta(minutes=5))
            .not_valid_after(not_after or NOW + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if eku:
            b = b.add_extension(x509.ExtendedKeyUsage(list(eku)), critical=False)
        cert = b.sign(self.key, hashes.SHA256())
        if is_ca:
            self._last_key = key
        return cert

    def intermediate(self, cn: str) -> CA:
        cert = self.issue(cn, eku=None, is_ca=True)
        return CA(cert, self._last_key)


def make_ca(cn: str = "kubernetes") -> CA:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - dt.timedelta(hours=1))
        .not_valid_after(NOW + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CA(cert, key)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint_jwt(key: Any, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """Sign a compact JWT: RS256 for RSA keys, ES256 for P-256 keys (test helper, independent of the code under test)."""
    alg = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
    hdr = {"alg": alg, **(header or {})}
    signing_input = f"{_b64(json.dumps(hdr).encode())}.{_b64(json.dumps(claims).encode())}".encode()
    if alg == "RS256":
        sig = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{signing_input.decode()}.{_b64(sig)}"


def bound_claims(ns: str, name: str, uid: str, *, lifetime: int = 3600, **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "sub": f"system:serviceaccount:{ns}:{name}",
        "aud": [ISSUER],
        "iat": now,
        "nbf": now,
        "exp": now + lifetime,
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}},
    }
    claims.update(extra)
    return claims


def token_secret(
    token: str = BOOTSTRAP_TOKEN,
    *,
    expiration: str | None = None,
    usages: tuple[str, ...] = ("authentication", "signing"),
    groups: str | None = "system:bootstrappers:kubeadm:default-node-token",
    type_: str = "bootstrap.kubernetes.io/token",
    token_id: str | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    tid, sec = token.split(".")
    data = {"token-id": token_id or tid, "token-secret": sec}
    if expiration is None:
        expiration = (NOW + dt.timedelta(hours=24)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if expiration:
        data["expiration"] = expiration
    for u in usages:
        data[f"usage-bootstrap-{u}"] = "true"
    if groups is not None:
        data["auth-extra-groups"] = groups
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": type_,
        "metadata": {"name": f"bootstrap-token-{tid}", "namespace": "kube-system", **(extra_meta or {})},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


_RBAC = "rbac.authorization.k8s.io"
_RESOURCES = {
    "ClusterRole": f"clusterroles.{_RBAC}",
    "ClusterRoleBinding": f"clusterrolebindings.{_RBAC}",
    "Role": f"roles.{_RBAC}",
    "RoleBinding": f"rolebindings.{_RBAC}",
}


def _group(name: str) -> dict[str, str]:
    return {"kind": "Group", "apiGroup": _RBAC, "name": name}


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, Any]], ns: str = "") -> dict:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"kind": kind, "metadata": meta, "roleRef": {"apiGroup": _RBAC, "kind": role_kind, "name": role},
            "subjects": subjects}  # fmt: skip


def _role(name: str, ns: str, resource: str, names: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"kind": "Role", "metadata": {"name": name, "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": [resource], "resourceNames": names, "verbs": verbs}]}  # fmt: skip


def kubeadm_rbac() -> list[dict[str, Any]]:
    """What kubeadm init creates (kubeadm-facts §7.2–7.7)."""
    tok = "system:bootstrappers:kubeadm:default-node-token"
    return [
        {"kind": "ClusterRole", "metadata": {"name": "kubeadm:get-nodes"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]},
        _binding("ClusterRoleBinding", "kubeadm:get-nodes", "ClusterRole", "kubeadm:get-nodes", [_group(tok)]),
        _binding("ClusterRoleBinding", "kubeadm:kubelet-bootstrap", "ClusterRole", "system:node-bootstrapper",
                 [_group(tok)]),
        _binding("ClusterRoleBinding", "kubeadm:node-autoapprove-bootstrap", "ClusterRole",
                 "system:certificates.k8s.io:certificatesigningrequests:nodeclient", [_group(tok)]),
        _binding("ClusterRoleBinding", "kubeadm:node-autoapprove-certificate-rotation", "ClusterRole",
                 "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [_group("system:nodes")]),
        _binding("ClusterRoleBinding", "kubeadm:cluster-admins", "ClusterRole", "cluster-admin",
                 [_group("kubeadm:cluster-admins")]),
        _role("kubeadm:bootstrap-signer-clusterinfo", "kube-public", "configmaps", ["cluster-info"], ["get"]),
        _binding("RoleBinding", "kubeadm:bootstrap-signer-clusterinfo", "Role", "kubeadm:bootstrap-signer-clusterinfo",
                 [{"kind": "User", "apiGroup": _RBAC, "name": "system:anonymous"}], "kube-public"),
        _role("kubeadm:nodes-kubeadm-config", "kube-system", "configmaps", ["kubeadm-config"], ["get"]),
        _binding("RoleBinding", "kubeadm:nodes-kubeadm-config", "Role", "kubeadm:nodes-kubeadm-config",
                 [_group(tok), _group("system:nodes")], "kube-system"),
        _role("kubeadm:kubelet-config", "kube-system", "configmaps", ["kubelet-config"], ["get"]),
        _binding("RoleBinding", "kubeadm:kubelet-config", "Role", "kubeadm:kubelet-config",
                 [_group("system:nodes"), _group(tok)], "kube-system"),
        _role("kubeadm:kubeadm-certs", "kube-system", "secrets", ["kubeadm-certs"], ["get"]),
        _binding("RoleBinding", "kubeadm:kubeadm-certs", "Role", "kubeadm:kubeadm-certs", [_group(tok)],
                 "kube-system"),
        # A workload service account with read access in its namespace (subject namespace defaulted).
        _binding("RoleBinding", "a-sa-view", "ClusterRole", "view",
                 [{"kind": "ServiceAccount", "name": "a-sa"}], "default"),
    ]  # fmt: skip


def _pod(name: str, node: str, *, sa: str, secret: str, cm: str, pvc: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node,
            "serviceAccountName": sa,
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"name": cm, "key": "k"}}}],
                }
            ],
            "volumes": [
                {"name": "s", "secret": {"secretName": secret}},
                {"name": "p", "persistentVolumeClaim": {"claimName": pvc}},
                {"name": "t", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}},
            ],
        },
    }


def cluster_source() -> DictObjectSource:
    src = DictObjectSource()
    for obj in default_policy() + kubeadm_rbac():
        src.put(_RESOURCES[obj["kind"]], obj)
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        src.put("namespaces", {"kind": "Namespace", "metadata": {"name": ns}, "status": {"phase": "Active"}})
    src.put("namespaces", {"kind": "Namespace", "metadata": {"name": "dying", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                           "status": {"phase": "Terminating"}})  # fmt: skip
    for n in ("node-a", "node-b"):
        src.put("nodes", {"kind": "Node", "metadata": {"name": n, "uid": f"uid-{n}"}})
    src.put("pods", _pod("pod-a", "node-a", sa="a-sa", secret="a-secret", cm="a-config", pvc="a-pvc"))
    src.put("pods", _pod("pod-b", "node-b", sa="default", secret="b-secret", cm="b-config", pvc="b-pvc"))
    for name in ("a-secret", "b-secret"):
        src.put("secrets", {"kind": "Secret", "metadata": {"name": name, "namespace": "default"}})
    src.put("secrets", {"kind": "Secret", "metadata": {"name": "kubeadm-certs", "namespace": "kube-system"}})
    src.put("secrets", token_secret())
    for name in ("default", "a-sa"):
        src.put(
            "serviceaccounts",
            {"kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default", "uid": f"uid-sa-{name}"}},
        )
    src.put("persistentvolumeclaims", {"metadata": {"name": "a-pvc", "namespace": "default"},
                                       "spec": {"volumeName": "pv-a"}})  # fmt: skip
    return src


def kubeadm_flags(pki: Path) -> dict[str, Any]:
    """The security flags kubeadm writes into kube-apiserver.yaml (plus a token file)."""
    return {
        "client-ca-file": str(pki / "ca.crt"),
        "enable-bootstrap-token-auth": "true",
        "token-auth-file": str(pki / "tokens.csv"),
        "service-account-key-file": str(pki / "sa.pub"),
        "service-account-issuer": ISSUER,
        "requestheader-client-ca-file": str(pki / "front-proxy-ca.crt"),
        "requestheader-allowed-names": "front-proxy-client",
        "requestheader-username-headers": "X-Remote-User",
        "requestheader-group-headers": "X-Remote-Group",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-",
        "authorization-mode": "Node,RBAC",
        "enable-admission-plugins": "NodeRestriction",
    }
