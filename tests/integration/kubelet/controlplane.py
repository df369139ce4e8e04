"""A real kube-apiserver (the shared launcher in pykubeadm.testing.apiserver) and helpers for kubelet tests.

Also offers a test-side CSR approver/signer (an admin approving via `/approval` and signing via `/status` with the cluster CA),
which stands in for kube-controller-manager where a test needs only the kubelet's side of the CSR flow.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from pykubeadm.kubelet.api import ApiError, ClientConfig, KubeClient
from pykubeadm.testing.apiserver import ApiServer

TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"


class ControlPlane:
    """The shared launcher's apiserver (`pykubeadm.testing.apiserver.ApiServer`, SQLite, Node,RBAC) plus what kubelet
    tests need: an admin KubeClient, bootstrap kubeconfigs, and signing with the cluster CA."""

    def __init__(self, base: Path, host: str = "127.0.0.1"):
        self.api = ApiServer(base, host=host)
        self.pki = self.api.pki

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def ca_cert(self) -> Path:
        return self.pki.ca_cert

    @property
    def ca_pem(self) -> bytes:
        return self.pki.ca_cert.read_bytes()

    def start(self) -> ControlPlane:
        self.api.start(timeout=60)
        return self

    def stop(self) -> None:
        self.api.stop()

    def kill(self) -> None:
        """SIGKILL the apiserver (a crash); start() brings it back on the same data and port."""
        proc = self.api.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        self.api.proc = None

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.api.log_path.read_text(errors="replace").splitlines()[-n:])

    def admin_config(self) -> ClientConfig:
        return ClientConfig(
            server=self.url,
            ca_pem=self.ca_pem,
            cert_pem=self.pki.admin_cert.read_bytes(),
            key_pem=self.pki.admin_key.read_bytes(),
        )

    def admin(self) -> KubeClient:
        return KubeClient(self.admin_config())

    def write_bootstrap_kubeconfig(self, path: Path, token: str) -> None:
        """What `kubeadm join` writes as bootstrap-kubelet.conf (embedded CA, bearer token)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "kubernetes",
                            "cluster": {
                                "server": self.url,
                                "certificate-authority-data": base64.b64encode(self.ca_pem).decode(),
                            },
                        }
                    ],
                    "contexts": [
                        {
                            "name": "tls-bootstrap-token-user@kubernetes",
                            "context": {"cluster": "kubernetes", "user": "tls-bootstrap-token-user"},
                        }
                    ],
                    "current-context": "tls-bootstrap-token-user@kubernetes",
                    "users": [{"name": "tls-bootstrap-token-user", "user": {"token": token}}],
                }
            )
        )

    def sign_csr(self, csr_pem: bytes, usages: list[str], lifetime: dt.timedelta, backdate: bool = True) -> bytes:
        """Sign like csrsigning: subject and SANs copied, usages from the spec, NotBefore = now − 5 min (or now)."""
        ca = x509.load_pem_x509_certificate(self.pki.ca_cert.read_bytes())
        ca_key = serialization.load_pem_private_key(self.pki.ca_key.read_bytes(), None)
        req = x509.load_pem_x509_csr(csr_pem)
        now = dt.datetime.now(dt.UTC)
        start = now - dt.timedelta(minutes=5) if backdate else now
        ekus = [ExtendedKeyUsageOID.CLIENT_AUTH] if "client auth" in usages else [ExtendedKeyUsageOID.SERVER_AUTH]
        b = (
            x509.CertificateBuilder()
            .subject_name(req.subject)
            .issuer_name(ca.subject)
            .public_key(req.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(now + lifetime)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
        )
        with contextlib.suppress(x509.ExtensionNotFound):
            b = b.add_extension(req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value, False)
        return b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


async def create_or_replace(client: KubeClient, path: str, obj: dict[str, Any]) -> None:
    try:
        await client.post(path, obj)
    except ApiError as e:
        if e.status != 409:
            raise


async def setup_bootstrap(client: KubeClient, token_id: str, secret: str, ttl: dt.timedelta) -> None:
    """The bootstrap token Secret and kubeadm's TLS-bootstrap RBAC (kubeadm init's bootstrap-token phase)."""
    exp = (dt.datetime.now(dt.UTC) + ttl).strftime("%Y-%m-%dT%H:%M:%SZ")
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    await create_or_replace(
        client,
        "/api/v1/namespaces/kube-system/secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "data": {
                "token-id": b64(token_id),
                "token-secret": b64(secret),
                "expiration": b64(exp),
                "usage-bootstrap-authentication": b64("true"),
                "usage-bootstrap-signing": b64("true"),
                "auth-extra-groups": b64(TOKEN_GROUP),
            },
        },
    )
    crb = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"

    def binding(name: str, role: str, group: str) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }

    await create_or_replace(client, crb, binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", TOKEN_GROUP))
    await create_or_replace(
        client,
        crb,
        binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            TOKEN_GROUP,
        ),
    )
    await create_or_replace(
        client,
        crb,
        binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:nodes",
        ),
    )
    await create_or_replace(
        client,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "kubeadm:get-nodes"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        },
    )
    await create_or_replace(client, crb, binding("kubeadm:get-nodes", "kubeadm:get-nodes", TOKEN_GROUP))


async def approve_and_sign(
    client: KubeClient, cp: ControlPlane, csr: dict[str, Any], lifetime: dt.timedelta, backdate: bool = True
) -> None:
    """What csrapproving + csrsigning do for one CSR, done by an admin from the test."""
    name = csr["metadata"]["name"]
    csr.setdefault("status", {})["conditions"] = [
        {
            "type": "Approved",
            "status": "True",
            "reason": "AutoApproved",
            "message": "Auto approving kubelet client certificate after SubjectAccessReview.",
        }
    ]
    approved = await client.put(f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval", csr)
    cert = cp.sign_csr(base64.b64decode(csr["spec"]["request"]), csr["spec"]["usages"], lifetime, backdate)
    approved["status"]["certificate"] = base64.b64encode(cert).decode()
    await client.put(f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/status", approved)


async def run_signer(
    server: ControlPlane,
    lifetime: dt.timedelta,
    *,
    signers: tuple[str, ...] = ("kubernetes.io/kube-apiserver-client-kubelet",),
    poll: float = 0.2,
    backdate: bool = True,
) -> None:
    """Approve and sign every pending CSR of the given signers until cancelled."""
    done: set[str] = set()
    client = server.admin()
    try:
        while True:
            try:
                lst = await client.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")
                for item in lst.get("items") or []:
                    name = item["metadata"]["name"]
                    status = item.get("status") or {}
                    if name in done or item["spec"].get("signerName") not in signers:
                        continue
                    if status.get("certificate") or any(
                        c.get("type") in ("Denied", "Failed") for c in status.get("conditions") or []
                    ):
                        done.add(name)
                        continue
                    try:
                        await approve_and_sign(client, server, item, lifetime, backdate)
                        done.add(name)
                    except ApiError:
                        pass  # changed meanwhile (e.g. denied): look again next round
            except Exception:
                pass
            await asyncio.sleep(poll)
    finally:
        await client.close()
