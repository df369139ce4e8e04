"""Test helper: a real `pykubeadm component kube-apiserver` subprocess on 127.0.0.1 with freshly generated PKI.

Used by the apiserver's own integration tests and by anyone who needs "a running apiserver" (controllers, kubelet,
scheduler tests). Everything lives under one directory (a pytest `tmp_path`); the process is always stopped.

    with running_apiserver(tmp_path) as api:            # sqlite store, Node,RBAC, admin = O=system:masters
        api.kubeconfig()                                  # admin kubeconfig path (for kubectl --kubeconfig / clients)
        api.client_cert("system:node:n1", ["system:nodes"])  # (cert, key) paths signed by the cluster CA
        api.kubeconfig_for("system:node:n1", ["system:nodes"])
        api.python_client()                               # kubernetes.client.ApiClient for the admin
        api.restart()                                     # same data dir, same port
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.testing.etcd import free_port

__all__ = ["ApiServer", "Pki", "free_port", "generate_pki", "running_apiserver"]


def _write_key(path: Path, key: Any) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(cn: str, orgs: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@dataclass
class Pki:
    """A cluster CA plus the apiserver's serving cert, an admin client cert and a service-account key pair."""

    dir: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path
    front_proxy_ca_cert: Path
    front_proxy_ca_key: Path
    _ca: tuple[x509.Certificate, Any] | None = field(default=None, repr=False)

    def _load_ca(self, cert: Path, key: Path) -> tuple[x509.Certificate, Any]:
        return x509.load_pem_x509_certificate(cert.read_bytes()), serialization.load_pem_private_key(
            key.read_bytes(), None
        )

    def sign(
        self,
        cn: str,
        orgs: Sequence[str] = (),
        *,
        server: bool = False,
        ips: Sequence[str] = (),
        dns: Sequence[str] = (),
        name: str = "",
        front_proxy: bool = False,
    ) -> tuple[Path, Path]:
        """Issue a certificate from the cluster CA (or the front-proxy CA); returns (cert path, key path)."""
        ca_cert, ca_key = (
            self._load_ca(self.front_proxy_ca_cert, self.front_proxy_ca_key)
            if front_proxy
            else self._load_ca(self.ca_cert, self.ca_key)
        )
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, orgs))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
        )
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        sans += [x509.DNSName(d) for d in dns]
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        base = name or cn.replace(":", "_")
        cp, kp = self.dir / f"{base}.crt", self.dir / f"{base}.key"
        cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(kp, key)
        return cp, kp


def _new_ca(cn: str) -> tuple[x509.Certificate, Any]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def generate_pki(directory: Path, host: str = "127.0.0.1") -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for base, cn in (("ca", "kubernetes"), ("front-proxy-ca", "front-proxy-ca")):
        cert, key = _new_ca(cn)
        (directory / f"{base}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(directory / f"{base}.key", key)
        paths[base] = (directory / f"{base}.crt", directory / f"{base}.key")
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(directory / "sa.key", sa)
    (directory / "sa.pub").write_bytes(
        sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    pki = Pki(
        directory,
        *paths["ca"],
        directory / "apiserver.crt",
        directory / "apiserver.key",
        directory / "admin.crt",
        directory / "admin.key",
        directory / "sa.key",
        directory / "sa.pub",
        *paths["front-proxy-ca"],
    )
    pki.sign(
        "kube-apiserver",
        server=True,
        ips=[host, "10.96.0.1"],
        dns=["localhost", "kubernetes", "kubernetes.default"],
        name="apiserver",
    )
    pki.sign("kubernetes-admin", ["system:masters"], name="admin")
    pki.sign("kube-apiserver-kubelet-client", ["kubeadm:cluster-admins"], name="apiserver-kubelet-client")
    return pki


class ApiServer:
    """One apiserver process. `storage` is "sqlite" (default, under dir/data), "memory", or a full URL."""

    def __init__(
        self,
        directory: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        storage: str = "sqlite",
        authorization_mode: str = "Node,RBAC",
        extra_flags: Sequence[str] = (),
        version: str | None = None,
        audit_log: bool = True,
    ):
        self.dir = directory
        self.host = host
        self.port = port or free_port(host)
        self.pki = generate_pki(directory / "pki", host)
        (directory / "data").mkdir(parents=True, exist_ok=True)
        self.storage_url = {"sqlite": f"sqlite://{directory / 'data' / 'state.db'}", "memory": "memory://"}.get(
            storage, storage
        )
        self.authorization_mode = authorization_mode
        self.extra_flags = list(extra_flags)
        self.version = version
        self.audit_log = directory / "audit.log" if audit_log else None
        self.log_path = directory / "apiserver.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def flags(self) -> list[str]:
        p = self.pki
        flags = [
            f"--advertise-address={self.host}",
            f"--bind-address={self.host}",
            f"--secure-port={self.port}",
            f"--tls-cert-file={p.serving_cert}",
            f"--tls-private-key-file={p.serving_key}",
            f"--client-ca-file={p.ca_cert}",
            f"--etcd-servers={self.storage_url}",
            f"--authorization-mode={self.authorization_mode}",
            "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth=true",
            f"--service-account-key-file={p.sa_pub}",
            f"--service-account-signing-key-file={p.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--allow-privileged=true",
            f"--requestheader-client-ca-file={p.front_proxy_ca_cert}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--kubelet-client-certificate={p.dir / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={p.dir / 'apiserver-kubelet-client.key'}",
        ]
        flags.append(f"--audit-log-path={self.audit_log if self.audit_log is not None else '-'}")
        if self.audit_log is not None:
            policy = self.dir / "audit-policy.yaml"  # every request at Metadata level
            policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
            flags.append(f"--audit-policy-file={policy}")
        if self.version:
            flags.append(f"--kubernetes-version={self.version}")
        return flags + self.extra_flags

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pykubeadm", "component", "kube-apiserver", *self.flags()]

    def start(self, timeout: float = 30.0) -> None:
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        self.wait_ready(timeout)

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return ctx

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(
                    f"apiserver exited with {self.proc.returncode}:\n{self.log_path.read_text()[-4000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", context=self._ssl(), timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        return
            except Exception as e:
                last = e
            time.sleep(0.1)
        raise TimeoutError(f"apiserver not ready after {timeout}s: {last}\n{self.log_path.read_text()[-4000:]}")

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def restart(self) -> None:
        self.stop()
        self.start()

    # --- credentials ------------------------------------------------------------------------------------------------

    def client_cert(self, user: str, groups: Sequence[str] = ()) -> tuple[Path, Path]:
        return self.pki.sign(user, groups)

    def _write_kubeconfig(self, path: Path, user: str, cert: Path | None, key: Path | None, token: str | None) -> Path:
        creds: dict[str, Any] = {}
        if cert is not None:
            creds = {"client-certificate": str(cert), "client-key": str(key)}
        if token is not None:
            creds["token"] = token
        import yaml

        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "test",
            "clusters": [
                {"name": "test", "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_cert)}}
            ],
            "users": [{"name": user, "user": creds}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        }
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return path

    def kubeconfig(self) -> Path:
        """The admin (O=system:masters) kubeconfig."""
        return self._write_kubeconfig(self.dir / "admin.conf", "admin", self.pki.admin_cert, self.pki.admin_key, None)

    def kubeconfig_for(self, user: str, groups: Sequence[str] = ()) -> Path:
        cert, key = self.client_cert(user, groups)
        return self._write_kubeconfig(self.dir / f"{user.replace(':', '_')}.conf", user, cert, key, None)

    def kubeconfig_token(self, token: str, name: str = "token") -> Path:
        return self._write_kubeconfig(self.dir / f"{name}.conf", name, None, None, token)

    def kubeconfig_anonymous(self) -> Path:
        return self._write_kubeconfig(self.dir / "anonymous.conf", "anonymous", None, None, None)

    def python_client(self, kubeconfig: Path | None = None) -> Any:
        """A `kubernetes.client.ApiClient` (the official client) for `kubeconfig` (default: admin)."""
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig or self.kubeconfig()), client_configuration=cfg)
        return client.ApiClient(cfg)

    def kubectl_env(self, kubeconfig: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["KUBECONFIG"] = str(kubeconfig or self.kubeconfig())
        env["KUBECACHEDIR"] = str(self.dir / "kube-cache")
        env["HOME"] = str(self.dir)
        return env

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        check: bool = True,
        timeout: float = 60,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real `kubectl` against this server."""
        res = subprocess.run(
            ["kubectl", *args],
            env=self.kubectl_env(kubeconfig),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
            check=False,
        )
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res


@contextlib.contextmanager
def running_apiserver(directory: Path, **kwargs: Any) -> Iterator[ApiServer]:
    """Start an ApiServer under `directory` (use a pytest tmp_path) and always stop it."""
    api = ApiServer(directory, **kwargs)
    try:
        api.start()
        yield api
    finally:
        api.stop()
