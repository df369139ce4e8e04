"""Issue 9, "Client and Serving Certificates" on the TLS-bootstrapping page: the kubelet's :port (10250 by default; a
free port on the worker's own loopback address here) serves

* a certificate requested through the CSR API with --rotate-server-certificates: a kubelet-serving CSR that the built-in
  approver never approves; once `kubectl certificate approve`d, the signed certificate is what `openssl s_client` sees;
* the pair given with --tls-cert-file/--tls-private-key-file;
* otherwise a self-signed pair the kubelet makes in --cert-dir (kubelet.crt/kubelet.key).
"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.integration.tlsbootstrap.cluster import (
    AUTO_APPROVE_CSRS_FOR_GROUP,
    AUTO_APPROVE_RENEWALS_FOR_NODES,
    CA_KEY_PEM,
    CA_PEM,
    CERT_DIR,
    CREATE_CSRS_FOR_BOOTSTRAPPING,
    ControllerManager,
    Machine,
    Worker,
    openssl,
    stopping,
    wait_until,
)
from tests.integration.tlsbootstrap.test_page_flow import (
    conditions,
    create_bindings,
    csrs,
    node_ready,
    token_file_apiserver,
)

pytestmark = pytest.mark.integration

SERVING_SIGNER = "kubernetes.io/kubelet-serving"


def serving_csrs(api, node: str) -> list[dict]:
    return [
        c
        for c in csrs(api)
        if c["spec"]["signerName"] == SERVING_SIGNER and c["spec"].get("username") == f"system:node:{node}"
    ]


def leaf(pem: str | bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificates(pem.encode() if isinstance(pem, str) else pem)[0]


def test_serving_certificates(tmp_path: Path) -> None:
    api, token = token_file_apiserver(tmp_path)
    kcm = ControllerManager(api, tmp_path / "kcm", signing_duration="24h")
    rotating = Worker(Machine(tmp_path / "worker-s"), "worker-s", "127.0.30.31", logs=tmp_path)
    given = Worker(Machine(tmp_path / "worker-t"), "worker-t", "127.0.30.32", logs=tmp_path)
    selfsigned = Worker(Machine(tmp_path / "worker-u"), "worker-u", "127.0.30.33", logs=tmp_path)
    ca = api.master.host(CA_PEM)
    with stopping(api, kcm, rotating, given, selfsigned):
        api.start(timeout=60)
        create_bindings(
            api, tmp_path, CREATE_CSRS_FOR_BOOTSTRAPPING, AUTO_APPROVE_CSRS_FOR_GROUP, AUTO_APPROVE_RENEWALS_FOR_NODES
        )
        kcm.start()
        for w in (rotating, given, selfsigned):
            w.distribute_ca(api.master)
            w.write_bootstrap_kubeconfig(api.url, token)

        # the operator's own serving pair for worker-t, made with openssl and signed by the operator's CA
        key, csr, crt = (
            given.m.host(f"/var/lib/kubelet/{n}") for n in ("kubelet-key.pem", "kubelet.csr", "kubelet.pem")
        )
        openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                "-subj", "/CN=worker-t", "-addext", f"subjectAltName=IP:{given.ip},DNS:worker-t")  # fmt: skip
        openssl("x509", "-req", "-in", str(csr), "-CA", str(api.master.host(CA_PEM)),
                "-CAkey", str(api.master.host(CA_KEY_PEM)), "-CAcreateserial", "-days", "1",
                "-copy_extensions", "copy", "-out", str(crt))  # fmt: skip

        rotating.start("--rotate-server-certificates")
        given.start(
            "--tls-cert-file=/var/lib/kubelet/kubelet.pem", "--tls-private-key-file=/var/lib/kubelet/kubelet-key.pem"
        )
        selfsigned.start()

        # --rotate-server-certificates: after the client bootstrap, a kubelet-serving CSR as the node itself
        [csr_obj] = wait_until(lambda: serving_csrs(api, "worker-s"), 60, f"the serving CSR\n{rotating.log()[-2000:]}")
        name = csr_obj["metadata"]["name"]
        assert csr_obj["spec"]["usages"] == ["digital signature", "server auth"]
        assert "system:nodes" in csr_obj["spec"]["groups"]
        request = x509.load_pem_x509_csr(base64.b64decode(csr_obj["spec"]["request"]))
        assert request.subject.rfc4514_string() == "CN=system:node:worker-s,O=system:nodes"
        san = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert [str(i) for i in san.get_values_for_type(x509.IPAddress)] == [rotating.ip]

        # the other two serve at once: the given pair, and a self-signed pair
        served_given = wait_until(given.served_certificate, 60, f"worker-t's :port\n{given.log()[-2000:]}")
        assert leaf(served_given) == leaf(crt.read_bytes())
        assert openssl("verify", "-CAfile", str(ca), str(crt)).strip().endswith("OK")
        assert not given.m.host(f"{CERT_DIR}/kubelet.crt").exists()

        served_self = wait_until(selfsigned.served_certificate, 60, f"worker-u's :port\n{selfsigned.log()[-2000:]}")
        own = selfsigned.m.host(f"{CERT_DIR}/kubelet.crt")
        assert own.exists() and selfsigned.m.host(f"{CERT_DIR}/kubelet.key").exists()
        cert = leaf(served_self)
        assert cert == leaf(own.read_bytes())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value.startswith("worker-u@")
        assert cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value.startswith("worker-u-ca@")
        tmp_served = tmp_path / "served-u.pem"
        tmp_served.write_text(served_self)
        assert "OK" not in openssl("verify", "-CAfile", str(ca), str(tmp_served), check=False)
        # the self-signed chain itself verifies (leaf followed by its throw-away CA in kubelet.crt)
        chain = x509.load_pem_x509_certificates(own.read_bytes())
        assert len(chain) == 2 and chain[1].subject == cert.issuer

        # never auto-approved, although the controller-manager runs and approves client CSRs meanwhile
        wait_until(lambda: node_ready(api, "worker-u") and node_ready(api, "worker-t"), 60, "the other nodes Ready")
        time.sleep(3)
        [pending] = serving_csrs(api, "worker-s")
        assert conditions(pending) == {} and not (pending.get("status") or {}).get("certificate")
        assert api.kubectl("get", "csr", name, "--no-headers").stdout.split()[-1] == "Pending"
        assert rotating.served_certificate() == ""  # nothing to serve with yet
        assert not rotating.server_current.exists()

        # approved by hand: signed by the operator's CA and served on :port
        api.kubectl("certificate", "approve", name)
        wait_until(rotating.server_current.exists, 30, f"kubelet-server-current.pem\n{rotating.log()[-2000:]}")
        issued = rotating.server_current
        assert openssl("verify", "-CAfile", str(ca), str(issued)).strip() == f"{issued}: OK"
        served = wait_until(rotating.served_certificate, 30, "worker-s's :port")
        assert leaf(served) == leaf(issued.read_bytes())
        cert = leaf(served)
        assert cert.subject.rfc4514_string() == "CN=system:node:worker-s,O=system:nodes"
        assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
            ExtendedKeyUsageOID.SERVER_AUTH
        ]
        served_file = tmp_path / "served-s.pem"
        served_file.write_text(served)
        assert openssl("verify", "-CAfile", str(ca), str(served_file)).strip() == f"{served_file}: OK"
        # openssl s_client checking the chain and the node's IP against the operator's CA
        check = openssl(
            "s_client", "-connect", f"{rotating.ip}:{rotating.port}", "-CAfile", str(ca),
            "-verify_ip", rotating.ip, "-verify_return_error", check=False,
        )  # fmt: skip
        assert "Verify return code: 0 (ok)" in check, check[-2000:]
        assert api.kubectl("get", "csr", name, "--no-headers").stdout.split()[-1] == "Approved,Issued"
        for w in (rotating, given, selfsigned):
            assert w.alive()
