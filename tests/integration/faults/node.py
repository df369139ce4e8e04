"""A worker node for the fault tests: a root dir prepared as `kubeadm join` leaves it (CA, bootstrap kubeconfig,
KubeletConfiguration with rotateCertificates) and its real kubelet process; plus a test-side CSR approver/signer that
chooses each certificate's validity (what kube-controller-manager's csrapproving + csrsigning would do)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID
from tests.integration.kubelet.controlplane import ControlPlane
from tests.integration.kubelet.kubelet_procs import KubeletProcess

from pykubeadm.kubelet.api import ApiError, KubeClient
from pykubeadm.testing.etcd import free_port

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


class Node:
    def __init__(
        self, tmp: Path, server: ControlPlane, name: str, ip: str, token: str, env: dict[str, str] | None = None
    ):
        self.root = tmp / name
        self.name = name
        pki = self.root / "etc/kubernetes/pki"
        pki.mkdir(parents=True)
        shutil.copy(server.ca_cert, pki / "ca.crt")
        (self.root / "etc/kubernetes/manifests").mkdir(parents=True)
        server.write_bootstrap_kubeconfig(self.root / "etc/kubernetes/bootstrap-kubelet.conf", token)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
            },
            "authorization": {"mode": "Webhook"},
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port("127.0.0.1"),
            "port": free_port(ip),
            "rotateCertificates": True,
            "staticPodPath": "/etc/kubernetes/manifests",
        }
        (self.root / "var/lib/kubelet").mkdir(parents=True)
        (self.root / "var/lib/kubelet/config.yaml").write_text(yaml.safe_dump(config))
        self.kubelet = KubeletProcess(
            self.root,
            [
                "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                "--kubeconfig=/etc/kubernetes/kubelet.conf",
                "--config=/var/lib/kubelet/config.yaml",
                f"--node-ip={ip}",
                f"--hostname-override={name}",
            ],
            tmp / f"kubelet-{name}.log",
            env=env,
        )

    @property
    def cert_dir(self) -> Path:
        return self.root / "var/lib/kubelet/pki"

    @property
    def current_pem(self) -> Path:
        return self.cert_dir / "kubelet-client-current.pem"


def sign(cp: ControlPlane, csr_pem: bytes, not_before: dt.datetime, not_after: dt.datetime) -> bytes:
    """A kubelet client certificate for the request, from the cluster CA, with the given validity."""
    ca = x509.load_pem_x509_certificate(cp.pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(cp.pki.ca_key.read_bytes(), None)
    req = x509.load_pem_x509_csr(csr_pem)
    return (
        x509.CertificateBuilder()
        .subject_name(req.subject)
        .issuer_name(ca.subject)
        .public_key(req.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )


async def approve_and_sign(
    admin: KubeClient, cp: ControlPlane, csr: dict[str, Any], not_before: dt.datetime, not_after: dt.datetime
) -> x509.Certificate:
    name = csr["metadata"]["name"]
    csr.setdefault("status", {})["conditions"] = [
        {"type": "Approved", "status": "True", "reason": "FaultsTest", "message": "approved by the fault test"}
    ]
    approved = await admin.put(f"{CSRS}/{name}/approval", csr)
    pem = sign(cp, base64.b64decode(csr["spec"]["request"]), not_before, not_after)
    approved["status"]["certificate"] = base64.b64encode(pem).decode()
    await admin.put(f"{CSRS}/{name}/status", approved)
    return x509.load_pem_x509_certificate(pem)


async def pending_csr(admin: KubeClient, username: str, seen: set[str]) -> dict[str, Any] | None:
    """A CSR requested by `username` that is not in `seen` and has no condition yet."""
    for c in (await admin.get(CSRS)).get("items") or []:
        if c["metadata"]["name"] in seen or c["spec"].get("username") != username:
            continue
        if not (c.get("status") or {}).get("conditions"):
            return c
    return None


async def eventually(pred: Callable[[], Awaitable[Any]], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = await pred()
            if value:
                return value
        except (ApiError, OSError) as e:
            last = e
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last})" if last else ""))


async def ready_node(admin: KubeClient, name: str) -> dict[str, Any] | None:
    n = await admin.get(f"/api/v1/nodes/{name}")
    conds = {c["type"]: c for c in n.get("status", {}).get("conditions", [])}
    return n if conds.get("Ready", {}).get("status") == "True" else None
