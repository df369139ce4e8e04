"""csrservingapproving in a real kube-controller-manager (opt-in through --controllers) against our apiserver:
a node's serving CSR for its own addresses is approved and signed; one naming another node's address stays Pending
with a Warning Event naming that SAN; a CSR whose Node appears later is approved once the Node exists."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from cryptography import x509
from harness import ControllerManager, csr_body, csr_pem, wait_until
from lightkube import Client
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR
from lightkube.resources.core_v1 import Event, Node

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

SERVING = "kubernetes.io/kubelet-serving"
USAGES = ("digital signature", "server auth")


@pytest.fixture(scope="module")
def kcm(start_kcm: Callable[..., ControllerManager]) -> ControllerManager:
    return start_kcm(extra_flags=["--controllers=*,bootstrapsigner,tokencleaner,csrservingapproving"])


@pytest.fixture(scope="module")
def admin(api: ApiServer) -> Client:
    return sync_client(api.kubeconfig())


def create_node(admin: Client, name: str, ip: str) -> None:
    addresses = [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]
    admin.create(Node.from_dict({"metadata": {"name": name}, "status": {"addresses": addresses}}))


def node_client(api: ApiServer, name: str) -> Client:
    return sync_client(api.kubeconfig_for(f"system:node:{name}", ["system:nodes"]))


def serving_csr(client: Client, node: str, ips: tuple[str, ...], dns: tuple[str, ...]) -> str:
    body = csr_body(csr_pem(f"system:node:{node}", ips=ips, dns=dns), signer=SERVING, usages=USAGES)
    return str(client.create(CSR.from_dict(body)).metadata.name)


def refusals(admin: Client, name: str) -> list[Any]:
    return [
        e
        for e in admin.list(Event, namespace="default")
        if e.involvedObject.name == name and e.reason == "AutoApprovalRefused"
    ]


def test_own_addresses_are_approved_by_the_controller_and_signed(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    create_node(admin, "worker-a", "127.0.30.1")
    name = serving_csr(node_client(api, "worker-a"), "worker-a", ("127.0.30.1",), ("worker-a",))
    obj = wait_until(lambda: (o := admin.get(CSR, name)).status and o.status.certificate and o, 10, what="issued")
    (approved,) = [c for c in obj.status.conditions if c.type == "Approved"]
    assert approved.reason == "AutoApproved"
    assert approved.message == (
        "Auto approving kubelet serving certificate after checking its SANs against Node worker-a (csrservingapproving)."
    )
    cert = x509.load_pem_x509_certificates(base64.b64decode(obj.status.certificate))[0]
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["worker-a"]
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["127.0.30.1"]
    ca = x509.load_pem_x509_certificate(api.pki.ca_cert.read_bytes())
    cert.verify_directly_issued_by(ca)


def test_another_nodes_address_stays_pending_with_an_event_naming_it(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    create_node(admin, "worker-b", "127.0.30.2")
    create_node(admin, "worker-c", "127.0.30.3")
    name = serving_csr(node_client(api, "worker-b"), "worker-b", ("127.0.30.2", "127.0.30.3"), ("worker-b",))
    (event,) = wait_until(lambda: refusals(admin, name), 10, what="AutoApprovalRefused event")
    assert event.type == "Warning"
    assert event.message == (
        f"not approving kubelet serving CSR {name}: IP:127.0.30.3: "
        "IP subjectAltName 127.0.30.3 is not an address of Node worker-b"
    )
    assert event.source.component == "csrservingapproving-controller"
    obj = admin.get(CSR, name)
    assert not obj.status.conditions and not obj.status.certificate


def test_a_bootstrap_token_requester_is_never_approved(api: ApiServer, kcm: ControllerManager, admin: Client) -> None:
    create_node(admin, "worker-d", "127.0.30.4")
    body = csr_body(csr_pem("system:node:worker-d", ips=("127.0.30.4",)), signer=SERVING, usages=USAGES)
    name = str(admin.create(CSR.from_dict(body)).metadata.name)  # requested by the admin, not the node
    (event,) = wait_until(lambda: refusals(admin, name), 10, what="AutoApprovalRefused event")
    assert "spec.username" in event.message
    assert not admin.get(CSR, name).status.conditions


def test_a_csr_waiting_for_its_node_is_approved_when_the_node_appears(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    name = serving_csr(node_client(api, "worker-e"), "worker-e", ("127.0.30.5",), ())
    (event,) = wait_until(lambda: refusals(admin, name), 10, what="AutoApprovalRefused event")
    assert event.message.endswith("node: Node worker-e not found")
    create_node(admin, "worker-e", "127.0.30.5")
    wait_until(lambda: (o := admin.get(CSR, name)).status and o.status.certificate, 10, what="issued")
