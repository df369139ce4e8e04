"""Fuzzing the parsers of untrusted documents: kubeconfigs (pykubeadm.kubeconfig: parse, current cluster/user, client
credentials) give a value or KubeconfigError; CSRs (the controllers' parse_csr and the approver's recognizers, the
apiserver's CSR validation and admission) give a result or their documented error, never another exception. Fixed
seed, bounded budget; no processes."""

from __future__ import annotations

import asyncio
import base64
import copy
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from pykubeadm.apiserver.admission.certificates import CertificateSubjectRestriction
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, AdmissionError, Operation
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.registry import csr as csr_registry
from pykubeadm.controllers.certificates import csrutil
from pykubeadm.controllers.certificates.approver import controller as csrapproving
from pykubeadm.errors import KubeconfigError
from pykubeadm.kubeconfig.config import client_cert_and_key_pem, current_cluster, current_user, parse_kubeconfig
from tests.fuzz import fuzz_settings

FUZZ = fuzz_settings(150)

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), st.binary(max_size=8))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)

GOOD_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "admin@kubernetes",
    "clusters": [
        {
            "name": "kubernetes",
            "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "LS0tLS1CRUdJTg=="},
        }
    ],
    "contexts": [{"name": "admin@kubernetes", "context": {"cluster": "kubernetes", "user": "admin"}}],
    "users": [{"name": "admin", "user": {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}}],
}
KEY_PATHS = [
    ("current-context",),
    ("clusters",),
    ("clusters", 0),
    ("clusters", 0, "name"),
    ("clusters", 0, "cluster"),
    ("clusters", 0, "cluster", "certificate-authority-data"),
    ("clusters", 0, "cluster", "certificate-authority"),
    ("contexts",),
    ("contexts", 0),
    ("contexts", 0, "context"),
    ("contexts", 0, "context", "user"),
    ("users",),
    ("users", 0),
    ("users", 0, "user"),
    ("users", 0, "user", "client-certificate-data"),
    ("users", 0, "user", "client-key"),
]


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p] if isinstance(doc, list) or p in doc else doc.setdefault(p, {})
    doc[path[-1]] = value


def _use(text: str | bytes) -> None:
    try:
        cfg = parse_kubeconfig(text, "fuzz")
        current_cluster(cfg, "fuzz")
        current_user(cfg, "fuzz")
        client_cert_and_key_pem(cfg, "fuzz")
    except KubeconfigError as err:
        assert str(err)


@FUZZ
@given(st.sampled_from(KEY_PATHS), values.filter(lambda v: not isinstance(v, bytes)))
def test_mutated_kubeconfigs(path: tuple[Any, ...], value: Any) -> None:
    doc = copy.deepcopy(GOOD_KUBECONFIG)
    _set(doc, path, value)
    _use(yaml.safe_dump(doc))


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_random_kubeconfig_bytes(data: bytes | str) -> None:
    _use(data)


def test_deeply_nested_kubeconfig_is_an_error_not_a_crash() -> None:
    _use("clusters: " + "[" * 50_000)


def _csr_pem(cn: str = "system:node:n1", orgs: tuple[str, ...] = ("system:nodes",)) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    req = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    return req.public_bytes(serialization.Encoding.PEM)


GOOD_CSR_PEM = _csr_pem()


@st.composite
def csr_requests(draw: st.DrawFn) -> Any:
    how = draw(st.sampled_from(["good", "flipped", "truncated", "garbage", "not-base64", "value"]))
    pem = GOOD_CSR_PEM
    if how == "flipped":
        der = x509.load_pem_x509_csr(pem).public_bytes(serialization.Encoding.DER)
        i = draw(st.integers(0, len(der) - 1))
        der = der[:i] + bytes([der[i] ^ draw(st.integers(1, 255))]) + der[i + 1 :]
        pem = (
            b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(der) + b"-----END CERTIFICATE REQUEST-----\n"
        )
    elif how == "truncated":
        pem = pem[: draw(st.integers(0, len(pem) - 1))]
    elif how == "garbage":
        pem = b"-----BEGIN CERTIFICATE REQUEST-----\n" + draw(st.binary(max_size=200))
    elif how == "not-base64":
        return draw(st.text(max_size=40))
    elif how == "value":
        return draw(values)
    return base64.b64encode(pem).decode()


@FUZZ
@given(csr_requests(), st.lists(st.sampled_from(["client auth", "digital signature", "key encipherment", "x"])))
def test_csr_parsers(request: Any, usages: list[str]) -> None:
    obj = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "fuzz"},
        "spec": {
            "request": request,
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": usages,
            "username": "system:bootstrap:abcdef",
            "groups": ["system:bootstrappers"],
        },
    }
    try:
        req = csrutil.parse_csr(obj)
    except csrutil.CSRParseError as err:
        assert str(err)
        req = None
    if req is not None:
        csrutil.validate_kubelet_client_csr(req, usages)
        csrutil.validate_kubelet_serving_csr(req, usages)
        csrapproving.recognize(obj, req)
    assert csr_registry._validate_request(request) in (None, "invalid signature on CSR", *_REQUEST_ERRORS)
    asyncio.run(_admit(CertificateSubjectRestriction(), obj))


_REQUEST_ERRORS = ("PEM block type must be CERTIFICATE REQUEST",)


async def _admit(plugin: Any, obj: dict[str, Any]) -> None:
    obj = copy.deepcopy(obj)
    obj["spec"]["signerName"] = "kubernetes.io/kube-apiserver-client"
    attrs = AdmissionAttributes(
        Operation.CREATE,
        "certificatesigningrequests",
        UserInfo("u"),
        name="fuzz",
        group="certificates.k8s.io",
        kind="CertificateSigningRequest",
        obj=obj,
    )
    try:
        await plugin.validate(attrs)
    except AdmissionError as err:  # only the plugin's Forbidden answer is allowed
        assert err.code == 403, repr(err)
