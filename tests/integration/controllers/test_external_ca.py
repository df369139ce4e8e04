"""Issue 6 acceptance: external-CA mode (empty --cluster-signing-key-file) approves but never signs, and keeps running."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from harness import ControllerManager, create_token, csr_body, csr_pem, embedded_kubeconfig, wait_until
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def test_external_ca_approves_but_does_not_sign(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> None:
    kcm = start_kcm(external_ca=True)
    assert "--cluster-signing-key-file=" in kcm.flags
    tid, secret = create_token(api)
    client = sync_client(embedded_kubeconfig(api, api.dir / "ext.conf", "u", token=f"{tid}.{secret}"))
    name = client.create(CSR.from_dict(csr_body(csr_pem("system:node:ext-1")))).metadata.name

    def approved() -> bool:
        obj = client.get(CSR, name)
        return bool(obj.status and any(c.type == "Approved" for c in obj.status.conditions or []))

    wait_until(approved, 2.0, what="approval")
    api.kubectl("certificate", "approve", name)  # an admin approving again changes nothing either
    time.sleep(1.5)
    obj = client.get(CSR, name)
    assert not obj.status.certificate
    assert not any(c.type == "Failed" for c in obj.status.conditions)
    assert kcm.proc is not None and kcm.proc.poll() is None
    assert kcm.healthz() == (200, "ok")
    assert "Traceback" not in kcm.log()


def test_healthz_is_https_with_a_self_signed_serving_cert(start_kcm: Callable[..., ControllerManager]) -> None:
    import ssl

    from cryptography import x509
    from cryptography.x509.oid import NameOID

    kcm = start_kcm(external_ca=True)
    leaf = x509.load_pem_x509_certificate(ssl.get_server_certificate(("127.0.0.1", kcm.port)).encode())
    cn = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    issuer = leaf.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert cn.startswith("localhost@") and issuer.startswith("localhost-ca@")
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    assert kcm.healthz() == (200, "ok")
