"""Issue 9, manual approval ("kubectl approval" on the TLS-bootstrapping page): without the auto-approve-csrs-for-group
binding a bootstrapping kubelet's CSR stays Pending although kube-controller-manager runs; `kubectl get csr` and
`kubectl describe csr` show it; `kubectl certificate deny` makes the kubelet log the denial and retry with a new CSR
(never crash, never a certificate); `kubectl certificate approve` lets it finish."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from cryptography import x509
from tests.integration.tlsbootstrap.cluster import (
    AUTO_APPROVE_RENEWALS_FOR_NODES,
    CA_PEM,
    CERT_DIR,
    CREATE_CSRS_FOR_BOOTSTRAPPING,
    ControllerManager,
    Machine,
    Worker,
    stopping,
    wait_until,
)
from tests.integration.tlsbootstrap.test_page_flow import (
    assert_kubelet_client_certificate,
    conditions,
    create_bindings,
    csrs,
    csrs_of,
    node_ready,
    token_file_apiserver,
)

pytestmark = pytest.mark.integration


def csr_of_node(api, node: str, seen: set[str]) -> str | None:
    """A new pending CSR whose request is for system:node:<node>."""
    for c in csrs_of(api, "kubelet-bootstrap"):
        name = c["metadata"]["name"]
        if name in seen or conditions(c):
            continue
        req = x509.load_pem_x509_csr(base64.b64decode(c["spec"]["request"]))
        if req.subject.rfc4514_string() == f"CN=system:node:{node},O=system:nodes":
            return name
    return None


def test_manual_deny_and_approve(tmp_path: Path) -> None:
    api, token = token_file_apiserver(tmp_path)
    kcm = ControllerManager(api, tmp_path / "kcm", signing_duration="24h")
    approved_worker = Worker(Machine(tmp_path / "worker-m"), "worker-m", "127.0.30.21", logs=tmp_path)
    denied_worker = Worker(Machine(tmp_path / "worker-d"), "worker-d", "127.0.30.22", logs=tmp_path)
    with stopping(api, kcm, approved_worker, denied_worker):
        api.start(timeout=60)
        # the page's bindings except auto-approve-csrs-for-group
        create_bindings(api, tmp_path, CREATE_CSRS_FOR_BOOTSTRAPPING, AUTO_APPROVE_RENEWALS_FOR_NODES)
        kcm.start()
        for w in (approved_worker, denied_worker):
            w.distribute_ca(api.master)
            w.write_bootstrap_kubeconfig(api.url, token)
            w.start()
        seen: set[str] = set()
        first = wait_until(lambda: csr_of_node(api, "worker-m", seen), 60, "worker-m's CSR")
        denied_first = wait_until(lambda: csr_of_node(api, "worker-d", seen), 60, "worker-d's CSR")

        # Pending although the controller-manager runs: nobody is allowed to auto-approve a kubelet-bootstrap CSR
        wait_until(lambda: f"recognized csr '{first}' as [nodeclient]" in kcm.log(), 20, "the approver's SAR")
        time.sleep(3)
        assert conditions(next(c for c in csrs(api) if c["metadata"]["name"] == first)) == {}
        rows = api.kubectl("get", "csr").stdout.splitlines()
        assert rows[0].split()[:5] == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION"], rows[0]
        [row] = [r for r in rows if r.startswith(first + " ")]
        assert row.split()[2:4] == ["kubernetes.io/kube-apiserver-client-kubelet", "kubelet-bootstrap"], row
        assert row.split()[-1] == "Pending", row
        described = api.kubectl("describe", "csr", first).stdout
        for expected in (
            f"Name:               {first}",
            "Requesting User:    kubelet-bootstrap",
            "Signer:             kubernetes.io/kube-apiserver-client-kubelet",
            "Status:             Pending",
            "Common Name:    system:node:worker-m",
            "Serial Number:",
            "Organization:   system:nodes",
        ):
            assert expected in described, f"{expected!r} not in:\n{described}"
        assert not approved_worker.client_current.exists()

        # deny: the kubelet reports it and comes back with a new CSR, never crashing
        out = api.kubectl("certificate", "deny", first).stdout
        assert out.strip() == f"certificatesigningrequest.certificates.k8s.io/{first} denied", out
        seen.add(first)
        wait_until(
            lambda: "certificate signing request is denied, reason: KubectlDeny" in approved_worker.log(),
            20,
            "the denial in worker-m's log",
        )
        [line] = [ln for ln in approved_worker.log().splitlines() if "denied" in ln]
        assert line.startswith("E") and "client certificate request was not issued" in line, line
        assert "This CSR was denied by kubectl certificate deny." in line, line
        second = wait_until(lambda: csr_of_node(api, "worker-m", seen), 30, "worker-m's retry with a new CSR")
        assert second != first and approved_worker.alive()
        row = api.kubectl("get", "csr", first, "--no-headers").stdout
        assert row.split()[-1] == "Denied", row

        # approve the retry: the kubelet finishes bootstrapping, with the operator's CA
        out = api.kubectl("certificate", "approve", second).stdout
        assert out.strip() == f"certificatesigningrequest.certificates.k8s.io/{second} approved", out
        wait_until(
            approved_worker.client_current.exists, 30, f"worker-m's certificate\n{approved_worker.log()[-2000:]}"
        )
        assert_kubelet_client_certificate(approved_worker, api.master.host(CA_PEM))
        row = api.kubectl("get", "csr", second, "--no-headers").stdout
        assert row.split()[-1] == "Approved,Issued", row
        approved = conditions(next(c for c in csrs(api) if c["metadata"]["name"] == second))["Approved"]
        assert approved["reason"] == "KubectlApprove"
        wait_until(lambda: node_ready(api, "worker-m"), 60, "Node worker-m Ready")

        # worker-d is denied every time: it keeps retrying and never gets a certificate
        denied = {denied_first}
        api.kubectl("certificate", "deny", denied_first)
        for _ in range(2):
            nxt = wait_until(lambda: csr_of_node(api, "worker-d", seen | denied), 40, "worker-d retrying")
            api.kubectl("certificate", "deny", nxt)
            denied.add(nxt)
        wait_until(
            lambda: approved_worker.log().count("KubectlDeny") == 1 and denied_worker.log().count("KubectlDeny") >= 3,
            20,
            "denials logged",
        )
        time.sleep(2)  # the signer had its chance
        assert denied_worker.alive() and approved_worker.alive()
        for c in csrs(api):
            if c["metadata"]["name"] in denied | {first}:
                assert set(conditions(c)) == {"Denied"} and not (c.get("status") or {}).get("certificate"), c
        assert not denied_worker.client_current.exists()
        assert not list(denied_worker.m.host(CERT_DIR).glob("kubelet-client*"))
        assert api.kubectl("get", "node", "worker-d", check=False).returncode != 0
        assert "Traceback" not in denied_worker.log() and "Traceback" not in approved_worker.log()
