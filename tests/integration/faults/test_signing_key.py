"""kube-controller-manager's CSR signing key gone bad, as kube's csrsigning behaves (ca_provider.go + the dynamic
cert/key loader): unreadable or unparsable at start, the signing controllers do not start and the controller-manager
exits 1 with "Error starting controllers" naming the file (so approved CSRs stay unsigned; kube writes no CSR condition
or event for this); broken while running (replaced by garbage, then removed), the last good pair stays in use, the error
is logged once, and approved CSRs keep being issued by the same CA.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding
from tests.integration.controllers.harness import (
    ControllerManager,
    csr_body,
    csr_pem,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
    wait_until,
)

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HOST = "127.0.19.5"
SIGNER = "kubernetes.io/kube-apiserver-client"


def submit_and_approve(api: ApiServer, name: str) -> None:
    body = csr_body(csr_pem(f"faults-{name}", ["faults"]), name=name, signer=SIGNER)
    api.kubectl("create", "-f", "-", input=json.dumps(body))
    api.kubectl("certificate", "approve", name)


def issued(api: ApiServer, name: str) -> x509.Certificate | None:
    csr = json.loads(api.kubectl("get", "csr", name, "-o", "json").stdout)
    pem = (csr.get("status") or {}).get("certificate")
    return x509.load_pem_x509_certificate(base64.b64decode(pem)) if pem else None


def signed_by(cert: x509.Certificate, ca_file: Path) -> bool:
    ca = x509.load_pem_x509_certificate(ca_file.read_bytes())
    ca.public_key().verify(
        cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm
    )
    return cert.issuer == ca.subject


def start_and_exit(kcm: ControllerManager, timeout: float = 60) -> int:
    """Start `kcm`, which serves /healthz before it leads and starts its controllers, and wait for its exit code."""
    with contextlib.suppress(RuntimeError):  # it may already have exited by the time /healthz is asked
        kcm.start(timeout=timeout)
    assert kcm.proc is not None
    return kcm.proc.wait(timeout)


def test_unreadable_signing_key(tmp_path: Path) -> None:
    api = ApiServer(tmp_path / "api", host=HOST, audit_log=False)
    kcms: list[ControllerManager] = []
    try:
        api.start(timeout=60)
        kubeadm_rbac(api)
        if not token_request_available(api):
            grant_controller_roles_to_kcm_user(api)
        signing = tmp_path / "signing"
        signing.mkdir()
        ca_crt, ca_key = signing / "ca.crt", signing / "ca.key"
        shutil.copy(api.pki.ca_cert, ca_crt)
        good_key = api.pki.ca_key.read_bytes()

        def kcm(n: int) -> ControllerManager:
            d = tmp_path / f"kcm{n}"
            d.mkdir()
            k = ControllerManager(
                api,
                d,
                name=f"kcm{n}",
                extra_flags=[
                    f"--cluster-signing-cert-file={ca_crt}",
                    f"--cluster-signing-key-file={ca_key}",
                    "--leader-elect=false",  # a controller-manager that died leading would hold the Lease 15 s
                ],
            )
            kcms.append(k)
            return k

        # at start: a key file that does not parse stops the controller-manager, naming the file
        ca_key.write_text("this is not a PEM private key\n")
        broken = kcm(0)
        assert start_and_exit(broken) == 1
        log = broken.log()
        [line] = [ln for ln in log.splitlines() if "Error starting controllers" in ln]
        assert " E " in line, line
        assert "failed to start kubernetes.io/kubelet-serving certificate controller" in line, line
        assert f"error reading CA key file {ca_key}: data does not contain a valid RSA or ECDSA private key" in line
        assert "Traceback" not in log, log
        # so nothing signs: an approved CSR stays without a certificate
        submit_and_approve(api, "while-down")
        assert issued(api, "while-down") is None

        # a good key: the pending CSR and new ones are issued
        ca_key.write_bytes(good_key)
        ca_key.chmod(0o600)
        running = kcm(1).start(timeout=60)
        cert = wait_until(lambda: issued(api, "while-down"), 30, what="the CSR approved while no signer ran")
        assert signed_by(cert, ca_crt)

        # while running: garbage in place of the key, then no key file at all; the pair loaded before stays in use
        ca_key.write_text("-----BEGIN EC PRIVATE KEY-----\ngarbage\n-----END EC PRIVATE KEY-----\n")
        submit_and_approve(api, "key-garbage")
        cert = wait_until(lambda: issued(api, "key-garbage"), 30, what="a certificate with the previous pair")
        assert signed_by(cert, ca_crt)
        ca_key.unlink()
        submit_and_approve(api, "key-removed")
        cert = wait_until(lambda: issued(api, "key-removed"), 30, what="a certificate with the previous pair")
        assert signed_by(cert, ca_crt)
        assert running.proc is not None and running.proc.poll() is None
        errors = [ln for ln in running.log().splitlines() if "keeping the previous one" in ln]
        assert len(errors) == 2 and all(" E " in ln for ln in errors), errors
        assert "error reading CA key file" in errors[0] and "No such file or directory" in errors[1], errors

        # restarted without the key file: it refuses to start (its flag check names the file), approved CSRs wait
        running.stop()
        again = kcm(2)
        assert start_and_exit(again) != 0
        assert f"--cluster-signing-key-file: open {ca_key}: no such file or directory" in again.log(), again.log()
        submit_and_approve(api, "after-restart")
        assert issued(api, "after-restart") is None
    finally:
        for k in kcms:
            k.stop()
        api.stop()
