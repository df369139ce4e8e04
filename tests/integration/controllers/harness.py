"""Integration harness: our apiserver + real `pykubeadm component kube-controller-manager` processes.

Kubeconfigs are written the way kubeadm writes them (embedded CA, client certificate and key data; bearer tokens for
bootstrap tokens). Every process started here is stopped by the fixtures, also on failure.
"""

from __future__ import annotations

import base64
import os
import secrets
import ssl
import string
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.testing.apiserver import ApiServer, free_port

TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def embedded_kubeconfig(
    api: ApiServer,
    path: Path,
    user: str,
    *,
    cert: Path | None = None,
    key: Path | None = None,
    token: str | None = None,
) -> Path:
    """A kubeconfig like kubeadm's (cluster name = cluster, embedded *-data, one context)."""
    creds: dict[str, Any] = {}
    if cert is not None and key is not None:
        creds = {"client-certificate-data": b64(cert.read_bytes()), "client-key-data": b64(key.read_bytes())}
    if token is not None:
        creds["token"] = token
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kubernetes",
                "cluster": {"server": api.url, "certificate-authority-data": b64(api.pki.ca_cert.read_bytes())},
            }
        ],
        "users": [{"name": user, "user": creds}],
        "contexts": [{"name": f"{user}@kubernetes", "context": {"cluster": "kubernetes", "user": user}}],
        "current-context": f"{user}@kubernetes",
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def kcm_kubeconfig(api: ApiServer, directory: Path) -> Path:
    cert, key = api.pki.sign("system:kube-controller-manager", name="controller-manager")
    return embedded_kubeconfig(
        api, directory / "controller-manager.conf", "system:kube-controller-manager", cert=cert, key=key
    )


class ControllerManager:
    """One kube-controller-manager process with the flags kubeadm writes (plus test timings)."""

    def __init__(
        self,
        api: ApiServer,
        directory: Path,
        *,
        name: str = "kcm",
        external_ca: bool = False,
        extra_flags: Sequence[str] = (),
        lease: tuple[str, str, str] = ("15s", "10s", "2s"),
    ):
        self.api = api
        self.dir = directory
        self.name = name
        self.port = free_port()
        self.kubeconfig = kcm_kubeconfig(api, directory)
        pki = api.pki
        self.flags = [
            "--allocate-node-cidrs=true",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--client-ca-file={pki.ca_cert}",
            "--cluster-cidr=10.244.0.0/16",
            "--cluster-name=kubernetes",
            f"--cluster-signing-cert-file={'' if external_ca else pki.ca_cert}",
            f"--cluster-signing-key-file={'' if external_ca else pki.ca_key}",
            "--controllers=*,bootstrapsigner,tokencleaner",
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=true",
            f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
            f"--root-ca-file={pki.ca_cert}",
            f"--service-account-private-key-file={pki.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--use-service-account-credentials=true",
            f"--secure-port={self.port}",
            f"--leader-elect-lease-duration={lease[0]}",
            f"--leader-elect-renew-deadline={lease[1]}",
            f"--leader-elect-retry-period={lease[2]}",
            *extra_flags,
        ]
        self.log_path = directory / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> ControllerManager:
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pykubeadm", "component", "kube-controller-manager", *self.flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.wait_healthy(timeout)
        return self

    def healthz(self) -> tuple[int, str]:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz", context=ctx, timeout=2) as r:
            return r.status, r.read().decode()

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.log()}")
            try:
                if self.healthz()[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} not healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:] if self.log_path.exists() else ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kubeadm_rbac(api: ApiServer) -> None:
    """The bindings kubeadm's bootstrap-token phase creates (tlsbootstrap.go)."""
    docs = []
    for name, role, group in (
        ("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", TOKEN_GROUP),
        (
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            TOKEN_GROUP,
        ),
        (
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:nodes",
        ),
    ):
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
            }
        )
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def new_token() -> tuple[str, str]:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(6)), "".join(secrets.choice(alphabet) for _ in range(16))


def token_secret(
    token_id: str,
    token_secret_: str,
    *,
    expiration: datetime | None = None,
    groups: str = TOKEN_GROUP,
    usages: Sequence[str] = ("authentication", "signing"),
) -> dict[str, Any]:
    string_data = {"token-id": token_id, "token-secret": token_secret_, "auth-extra-groups": groups}
    for usage in usages:
        string_data[f"usage-bootstrap-{usage}"] = "true"
    if expiration is not None:
        string_data["expiration"] = expiration.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": string_data,
    }


def create_token(
    api: ApiServer, *, expires_in: timedelta | None = timedelta(hours=24), **kwargs: Any
) -> tuple[str, str]:
    tid, tsecret = new_token()
    expiration = datetime.now(UTC) + expires_in if expires_in is not None else None
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(token_secret(tid, tsecret, expiration=expiration, **kwargs)))
    return tid, tsecret


def csr_pem(
    cn: str = "system:node:worker-1",
    orgs: Sequence[str] = ("system:nodes",),
    *,
    dns: Sequence[str] = (),
    ips: Sequence[str] = (),
) -> bytes:
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def csr_body(
    pem: bytes,
    *,
    name: str | None = None,
    signer: str = KUBELET_CLIENT_SIGNER,
    usages: Sequence[str] = ("digital signature", "client auth"),
    expiration_seconds: int | None = None,
) -> dict[str, Any]:
    meta = {"name": name} if name else {"generateName": "csr-"}
    spec: dict[str, Any] = {"request": b64(pem), "signerName": signer, "usages": list(usages)}
    if expiration_seconds is not None:
        spec["expirationSeconds"] = expiration_seconds
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": meta, "spec": spec}


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def token_request_available(api: ApiServer) -> bool:
    """Whether the apiserver issues ServiceAccount tokens (needed by --use-service-account-credentials)."""
    api.kubectl("create", "serviceaccount", "probe", "-n", "default", check=False)
    res = api.kubectl("create", "token", "probe", "-n", "default", check=False)
    return res.returncode == 0


def grant_controller_roles_to_kcm_user(api: ApiServer) -> None:
    """Bind the system:controller:* roles our controllers use to User system:kube-controller-manager.

    Only needed while the apiserver lacks TokenRequest: the controller-manager then falls back from per-controller
    ServiceAccounts to its own identity (logged), which the default policy does not let approve, sign or publish.
    """
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-controller-manager"}
    docs: list[dict[str, Any]] = []
    for role in ("certificate-controller", "root-ca-cert-publisher", "service-account-controller", "node-controller"):
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"test:kcm:{role}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": f"system:controller:{role}",
                },
                "subjects": [user],
            }
        )
    for namespace, role in (
        ("kube-system", "bootstrap-signer"),
        ("kube-public", "bootstrap-signer"),
        ("kube-system", "token-cleaner"),
    ):
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"test:kcm:{role}", "namespace": namespace},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": f"system:controller:{role}",
                },
                "subjects": [user],
            }
        )
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
