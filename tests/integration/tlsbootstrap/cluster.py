"""A cluster configured by hand, as the TLS-bootstrapping page describes it, out of our real components.

Each "machine" is a root directory under the test's tmp_path: the master (`pykubeadm --root-dir <master> component
kube-apiserver`, so its flags are the page's node paths such as `--client-ca-file=/var/lib/kubernetes/ca.pem`) and one
root per worker (`pykubeadm --root-dir <worker> component kubelet`). The operator's CA is made with `openssl req`;
the other certificates are signed with it. Bootstrap kubeconfigs are written with the page's four `kubectl config`
commands. Every process started here has a `stop()` that the tests call in `finally` blocks; nothing is killed by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from pykubeadm.testing.apiserver import ApiServer, Pki, free_port

#: Where the page puts the Kubernetes CA on the master nodes (and, for the bootstrap kubeconfig, on workers).
CA_PEM = "/var/lib/kubernetes/ca.pem"
CA_KEY_PEM = "/var/lib/kubernetes/ca-key.pem"
TOKEN_FILE = "/var/lib/kubernetes/token.csv"
BOOTSTRAP_KUBECONFIG = "/var/lib/kubelet/bootstrap-kubeconfig"
KUBECONFIG = "/var/lib/kubelet/kubeconfig"
CERT_DIR = "/var/lib/kubelet/pki"

#: The page's sample bootstrap kubeconfig (server and token differ per cluster).
PAGE_BOOTSTRAP_KUBECONFIG = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority: /var/lib/kubernetes/ca.pem
    server: https://my.server.example.com:6443
  name: bootstrap
contexts:
- context:
    cluster: bootstrap
    user: kubelet-bootstrap
  name: bootstrap
current-context: bootstrap
kind: Config
preferences: {}
users:
- name: kubelet-bootstrap
  user:
    token: 07401b.f395accd246ae52d
"""

# The page's YAML, verbatim (comments included).
CREATE_CSRS_FOR_BOOTSTRAPPING = """\
# enable bootstrapping nodes to create CSR
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata:
  name: create-csrs-for-bootstrapping
subjects:
- kind: Group
  name: system:bootstrappers
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:node-bootstrapper
  apiGroup: rbac.authorization.k8s.io
"""
AUTO_APPROVE_CSRS_FOR_GROUP = """\
# Approve all CSRs for the group "system:bootstrappers"
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata:
  name: auto-approve-csrs-for-group
subjects:
- kind: Group
  name: system:bootstrappers
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:nodeclient
  apiGroup: rbac.authorization.k8s.io
"""
AUTO_APPROVE_RENEWALS_FOR_NODES = """\
# Approve renewal CSRs for the group "system:nodes"
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata:
  name: auto-approve-renewals-for-nodes
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
  apiGroup: rbac.authorization.k8s.io
"""
PAGE_BINDINGS = {
    "create-csrs-for-bootstrapping": CREATE_CSRS_FOR_BOOTSTRAPPING,
    "auto-approve-csrs-for-group": AUTO_APPROVE_CSRS_FOR_GROUP,
    "auto-approve-renewals-for-nodes": AUTO_APPROVE_RENEWALS_FOR_NODES,
}


def run(cmd: Sequence[str], *, check: bool = True, env: dict[str, str] | None = None, **kw: Any) -> str:
    res = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=60, check=False, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res.stdout + res.stderr


def openssl(*args: str, check: bool = True) -> str:
    return run(["openssl", *args], check=check, input="")


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = pred()
            if value:
                return value
        except Exception as e:
            last = e
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last!r})" if last else "")
    )


def page_token() -> str:
    """The page's recipe for a 128-bit token: `head -c 16 /dev/urandom | od -An -t x | tr -d ' '`."""
    out = run(["sh", "-c", "head -c 16 /dev/urandom | od -An -t x | tr -d ' '"]).strip()
    assert len(out) == 32, out
    return out


class Machine:
    """A host stood in for by a root directory: node paths (`/var/lib/...`) live under it."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def host(self, node_path: str) -> Path:
        return self.root.joinpath(*Path(node_path).parts[1:])

    def write(self, node_path: str, data: bytes | str, mode: int = 0o644) -> Path:
        p = self.host(node_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        p.chmod(mode)
        return p


def make_operator_ca(master: Machine) -> None:
    """Steps 1–2 of the page's operator duties: create the CA with openssl at /var/lib/kubernetes/{ca,ca-key}.pem."""
    cert, key = master.host(CA_PEM), master.host(CA_KEY_PEM)
    cert.parent.mkdir(parents=True, exist_ok=True)
    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
        "-subj", "/CN=Kubernetes/O=Operator CA",
        "-keyout", str(key), "-out", str(cert),
    )  # fmt: skip
    key.chmod(0o600)


class PageApiServer(ApiServer):
    """kube-apiserver configured by hand on the master: every file flag is a node path under the master root, the CA
    is the operator's, and authentication of bootstrapping kubelets is `auth_flags` (--token-auth-file or
    --enable-bootstrap-token-auth)."""

    def __init__(self, master: Machine, workdir: Path, *, host: str, auth_flags: Sequence[str]):
        super().__init__(workdir, host=host, audit_log=False)
        self.master = master
        self.auth_flags = list(auth_flags)
        # the operator's CA signs the serving, admin and component certificates
        spare = self.pki  # a throwaway PKI from the launcher: only its service-account pair is reused
        ours = Pki(
            workdir / "operator",
            master.host(CA_PEM),
            master.host(CA_KEY_PEM),
            master.host("/var/lib/kubernetes/kubernetes.pem"),
            master.host("/var/lib/kubernetes/kubernetes-key.pem"),
            workdir / "operator" / "admin.crt",
            workdir / "operator" / "admin.key",
            master.host("/var/lib/kubernetes/service-account-key.pem"),
            master.host("/var/lib/kubernetes/service-account.pem"),
            spare.front_proxy_ca_cert,
            spare.front_proxy_ca_key,
        )
        ours.dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(spare.sa_key, ours.sa_key)
        shutil.copy(spare.sa_pub, ours.sa_pub)
        cert, key = ours.sign(
            "kubernetes", server=True, ips=[host, "10.32.0.1"], dns=["localhost", "kubernetes"], name="kubernetes"
        )
        shutil.move(cert, ours.serving_cert)
        shutil.move(key, ours.serving_key)
        ours.sign("admin", ["system:masters"], name="admin")
        self.pki = ours
        self.data_db = "/var/lib/kubernetes/state.db"

    def flags(self) -> list[str]:
        return [
            f"--advertise-address={self.host}",
            f"--bind-address={self.host}",
            f"--secure-port={self.port}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            f"--client-ca-file={CA_PEM}",
            f"--etcd-servers=sqlite://{self.data_db}",
            "--tls-cert-file=/var/lib/kubernetes/kubernetes.pem",
            "--tls-private-key-file=/var/lib/kubernetes/kubernetes-key.pem",
            "--service-account-key-file=/var/lib/kubernetes/service-account.pem",
            "--service-account-signing-key-file=/var/lib/kubernetes/service-account-key.pem",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.32.0.0/24",
            *self.auth_flags,
        ]

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "pykubeadm", "--root-dir", str(self.master.root),
            "component", "kube-apiserver", *self.flags(),
        ]  # fmt: skip

    def kubectl_json(self, *args: str, kubeconfig: Path | None = None) -> Any:
        return yaml.safe_load(self.kubectl(*args, "-o", "json", kubeconfig=kubeconfig).stdout)

    def component_kubeconfig(self, path: Path, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig (embedded data, written with kubectl config --embed-certs) for a user of the operator's CA."""
        cert, key = self.pki.sign(user, groups)
        env = self.kubectl_env()
        env.pop("KUBECONFIG")
        kc = f"--kubeconfig={path}"
        run(["kubectl", "config", kc, "set-cluster", "kubernetes", f"--server={self.url}",
             f"--certificate-authority={self.pki.ca_cert}", "--embed-certs=true"], env=env)  # fmt: skip
        run(["kubectl", "config", kc, "set-credentials", user, f"--client-certificate={cert}",
             f"--client-key={key}", "--embed-certs=true"], env=env)  # fmt: skip
        run(["kubectl", "config", kc, "set-context", "default", "--cluster=kubernetes", f"--user={user}"], env=env)
        run(["kubectl", "config", kc, "use-context", "default"], env=env)
        return path


class ControllerManager:
    """kube-controller-manager on the master with the page's signing flags (host paths of the master's files)."""

    def __init__(self, api: PageApiServer, workdir: Path, *, signing_duration: str, extra: Sequence[str] = ()):
        workdir.mkdir(parents=True, exist_ok=True)
        self.api = api
        self.port = free_port("127.0.0.1")
        self.kubeconfig = api.component_kubeconfig(
            workdir / "kube-controller-manager.kubeconfig", "system:kube-controller-manager"
        )
        m = api.master
        self.flags = [
            f"--kubeconfig={self.kubeconfig}",
            f"--cluster-signing-cert-file={m.host(CA_PEM)}",
            f"--cluster-signing-key-file={m.host(CA_KEY_PEM)}",
            f"--cluster-signing-duration={signing_duration}",
            f"--root-ca-file={m.host(CA_PEM)}",
            f"--service-account-private-key-file={m.host('/var/lib/kubernetes/service-account-key.pem')}",
            "--use-service-account-credentials=true",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--leader-elect=false",
            *extra,
        ]
        self.log_path = workdir / "kube-controller-manager.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ControllerManager:
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pykubeadm", "component", "kube-controller-manager", *self.flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE

        def healthy() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"kube-controller-manager exited {self.proc.returncode}:\n{self.log()}")
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz", context=ctx, timeout=2) as r:
                return r.status == 200

        try:
            wait_until(healthy, timeout, "kube-controller-manager /healthz")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log()}") from None
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:] if self.log_path.exists() else ""

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 15.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


class Worker:
    """A worker machine: the CA certificate distributed to it, the bootstrap kubeconfig written with the page's four
    `kubectl config` commands, and a kubelet started with the page's flags."""

    def __init__(self, machine: Machine, name: str, ip: str, *, logs: Path):
        self.m = machine
        self.name = name
        self.ip = ip
        self.port = free_port(ip)
        self.healthz_port = free_port(ip)
        self.log_path = logs / f"kubelet-{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.flags: list[str] = []

    def distribute_ca(self, master: Machine) -> None:
        self.m.write(CA_PEM, master.host(CA_PEM).read_bytes())

    def write_bootstrap_kubeconfig(self, server: str, token: str) -> list[str]:
        """The page's commands, verbatim except for the server URL, the token and the file's location on this root."""
        kc = f"--kubeconfig={self.m.host(BOOTSTRAP_KUBECONFIG)}"
        self.m.host(BOOTSTRAP_KUBECONFIG).parent.mkdir(parents=True, exist_ok=True)
        cmds = [
            ["kubectl", "config", kc, "set-cluster", "bootstrap", f"--server={server}",
             f"--certificate-authority={CA_PEM}"],
            ["kubectl", "config", kc, "set-credentials", "kubelet-bootstrap", f"--token={token}"],
            ["kubectl", "config", kc, "set-context", "bootstrap", "--user=kubelet-bootstrap", "--cluster=bootstrap"],
            ["kubectl", "config", kc, "use-context", "bootstrap"],
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["HOME"] = str(self.m.root)
        return [run(cmd, env=env) for cmd in cmds]

    def start(self, *extra: str, rotate: bool = True) -> Worker:
        """The page's kubelet flags (--rotate-certificates unless `rotate` is false), this machine's name and
        loopback address, free ports for the kubelet API and healthz, then `extra`."""
        self.flags = [
            f"--bootstrap-kubeconfig={BOOTSTRAP_KUBECONFIG}",
            f"--kubeconfig={KUBECONFIG}",
            f"--cert-dir={CERT_DIR}",
            *(["--rotate-certificates"] if rotate else []),
            f"--hostname-override={self.name}",
            f"--node-ip={self.ip}",
            f"--address={self.ip}",
            f"--port={self.port}",
            f"--healthz-bind-address={self.ip}",
            f"--healthz-port={self.healthz_port}",
            *extra,
        ]
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pykubeadm", "--root-dir", str(self.m.root), "component", "kubelet",
                 *self.flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )  # fmt: skip
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        _stop(self.proc, timeout=20)
        self.proc = None

    @property
    def client_current(self) -> Path:
        return self.m.host(f"{CERT_DIR}/kubelet-client-current.pem")

    @property
    def server_current(self) -> Path:
        return self.m.host(f"{CERT_DIR}/kubelet-server-current.pem")

    @property
    def kubeconfig(self) -> Path:
        return self.m.host(KUBECONFIG)

    def served_certificate(self) -> str:
        """The certificate :port presents, as `openssl s_client` prints it (PEM)."""
        out = run(
            ["openssl", "s_client", "-connect", f"{self.ip}:{self.port}", "-servername", self.name, "-showcerts"],
            input="",
            check=False,
        )
        start = out.find("-----BEGIN CERTIFICATE-----")
        end = out.find("-----END CERTIFICATE-----")
        if start < 0 or end < 0:
            return ""
        return out[start : end + len("-----END CERTIFICATE-----")] + "\n"


def kubectl_as(api: PageApiServer, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run kubectl with some other kubeconfig (a kubelet's), never failing the test by itself."""
    return api.kubectl(*args, kubeconfig=kubeconfig, check=False)


@contextlib.contextmanager
def stopping(*things: Any):
    """Stop every process-like thing (in reverse order) on the way out, also on failure."""
    try:
        yield
    finally:
        for t in reversed(things):
            with contextlib.suppress(Exception):
                t.stop()


__all__ = [
    "PAGE_BINDINGS",
    "ControllerManager",
    "Machine",
    "PageApiServer",
    "Worker",
    "make_operator_ca",
    "openssl",
    "page_token",
    "wait_until",
]
