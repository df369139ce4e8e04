"""Acceptance: a kubelet with only a bootstrap kubeconfig joins a cluster of our kube-apiserver and our
kube-controller-manager (csrapproving + csrsigning): kubelet.conf appears, CSR Approved,Issued with requestor
system:bootstrap:<id>, the certificate verifies with openssl, the Node is Ready and its Lease renews."""

from __future__ import annotations

import subprocess

import pytest
from tests.integration.controllers.harness import (
    ControllerManager,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)
from tests.integration.kubelet.test_tls_bootstrap import TOKEN_ID, Node, _ready_node, _true, apiserver, eventually  # noqa: F401

pytestmark = pytest.mark.integration


async def test_join_with_real_controller_manager(apiserver, tmp_path):  # noqa: F811
    server, admin = apiserver
    (tmp_path / "kcm").mkdir()
    kcm = ControllerManager(server.api, tmp_path / "kcm")
    node = Node(tmp_path, server, "node-k", "127.0.10.31")
    kubeadm_rbac(server.api)
    if not token_request_available(server.api):
        grant_controller_roles_to_kcm_user(server.api)
    try:
        kcm.start(timeout=60)
        node.kubelet.start()
        await eventually(lambda: _true(node.current_pem.exists()), 60, "kubelet-client-current.pem")
        assert node.kubeconfig.exists()
        subject = subprocess.run(
            ["openssl", "x509", "-in", str(node.current_pem), "-noout", "-subject", "-issuer"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "CN = system:node:node-k" in subject and "O = system:nodes" in subject
        verify = subprocess.run(
            ["openssl", "verify", "-CAfile", str(server.ca_cert), str(node.current_pem)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert verify.strip().endswith("OK")
        csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
        [csr] = [c for c in csrs if c["spec"].get("username") == f"system:bootstrap:{TOKEN_ID}"]
        approved = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
        assert approved and approved[0]["reason"] == "AutoApproved"
        assert csr["status"]["certificate"]
        # what `kubectl get csr` shows: Approved,Issued with the bootstrap requestor
        out = server.api.kubectl("get", "csr", csr["metadata"]["name"], "--no-headers").stdout
        assert "Approved,Issued" in out and f"system:bootstrap:{TOKEN_ID}" in out
        await eventually(lambda: _ready_node(admin, "node-k"), 30, "Node node-k Ready")
        nodes = server.api.kubectl("get", "nodes", "node-k", "--no-headers").stdout
        assert "Ready" in nodes
        lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-k"
        lease = await eventually(lambda: admin.get(lease_path), 20, "Lease")
        first = lease["spec"]["renewTime"]

        async def renewed():
            return (await admin.get(lease_path))["spec"]["renewTime"] != first

        await eventually(renewed, 15, "Lease renewal")
    finally:
        node.kubelet.stop()
        kcm.stop()


async def test_rotation_with_real_controller_manager(apiserver, tmp_path):  # noqa: F811
    """--cluster-signing-duration=1m: the certificate (NotBefore backdated 5 min) is due at once or within seconds;
    renewals go through selfnodeclient approval with the node's own certificate, after the bootstrap token is gone."""
    server, admin = apiserver
    (tmp_path / "kcm").mkdir()
    kcm = ControllerManager(server.api, tmp_path / "kcm", extra_flags=["--cluster-signing-duration=1m"])
    node = Node(tmp_path, server, "node-q", "127.0.10.32")
    kubeadm_rbac(server.api)
    if not token_request_available(server.api):
        grant_controller_roles_to_kcm_user(server.api)
    try:
        kcm.start(timeout=60)
        node.kubelet.start()
        await eventually(lambda: _true(node.current_pem.exists()), 60, "first certificate")
        first = node.current_pem.resolve()
        await admin.delete(f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{TOKEN_ID}")

        async def self_renewal():
            csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
            done = [
                c
                for c in csrs
                if c["spec"].get("username") == "system:node:node-q" and (c.get("status") or {}).get("certificate")
            ]
            return done if done and node.current_pem.resolve() != first else None

        [csr, *_] = await eventually(self_renewal, 90, "a renewal approved as selfnodeclient and issued")
        [approved] = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
        assert approved["reason"] == "AutoApproved" and "self kubelet client certificate" in approved["message"]
        await eventually(lambda: _ready_node(admin, "node-q"), 30, "Node still Ready")
        errors = [line for line in node.kubelet.log().splitlines() if line.startswith("E")]
        assert not errors, errors[:5]
    finally:
        node.kubelet.stop()
        kcm.stop()
