"""The external etcd of an HA lab (`lab up --datastore external-etcd`): a 3-member etcd cluster of its own, made the
way kubeadm's "Set up a High Availability etcd Cluster with kubeadm" guide makes one.

Each member is a lab "etcd host" with its own root (`<lab>/lab-etcd1` …) and loopback address (127.0.10.241-243).
The guide's steps, with our kubeadm: `init phase certs etcd-ca` once (on the first host; the CA is copied to the
others), then on every host `init phase certs etcd-server`, `etcd-peer`, `etcd-healthcheck-client` and
`apiserver-etcd-client` with a config naming the host's address in `etcd.local.serverCertSANs`/`peerCertSANs`. The
members run as processes the lab starts (the real `etcd` binary, TLS for clients and peers, client certificates
required), each with its pid in `.lab/etcd/<name>.pid`, stopped by that pid. The first control plane gets the etcd
CA certificate and the apiserver-etcd-client pair copied into its certificatesDir, as the guide says, and the
ClusterConfiguration's `etcd.external` names the endpoints and those files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.nodes import LAB_STATE_DIR, address_prefix
from pykubeadm.layout import Layout
from pykubeadm.phases.reset.processes import stop_processes
from pykubeadm.util.procstat import cmdline

__all__ = ["ExternalEtcd"]

Out = Callable[[str], None]
#: Last octets of the members' addresses.
MEMBER_OCTETS = (241, 242, 243)
#: How long the new cluster may take to answer on every member.
HEALTHY_TIMEOUT = 60.0
_PKI = c.DEFAULT_CERTIFICATES_DIR


class ExternalEtcd:
    """The external etcd cluster of the lab in `lab_dir`."""

    def __init__(self, lab_dir: Path, prefix: str | None = None) -> None:
        """`prefix`: the lab's first three octets (default: this environment's)."""
        self.lab_dir = lab_dir
        self.names = [f"lab-etcd{i + 1}" for i in range(len(MEMBER_OCTETS))]
        self.addresses = [f"{address_prefix(prefix)}{o}" for o in MEMBER_OCTETS]
        self.state = lab_dir / LAB_STATE_DIR / "etcd"

    @property
    def endpoints(self) -> list[str]:
        return [f"https://{a}:{c.ETCD_LISTEN_CLIENT_PORT}" for a in self.addresses]

    def root(self, i: int) -> Path:
        return self.lab_dir / self.names[i]

    def pid_file(self, i: int) -> Path:
        return self.state / f"{self.names[i]}.pid"

    def _config(self, i: int) -> Path:
        ip = self.addresses[i]
        docs: list[dict[str, Any]] = [
            {
                "apiVersion": c.KUBEADM_API_VERSION,
                "kind": "InitConfiguration",
                "localAPIEndpoint": {"advertiseAddress": ip},
                "nodeRegistration": {"name": self.names[i]},
            },
            {
                "apiVersion": c.KUBEADM_API_VERSION,
                "kind": "ClusterConfiguration",
                "kubernetesVersion": c.KUBERNETES_VERSION,
                "encryptionAlgorithm": "ECDSA-P256",
                "etcd": {"local": {"serverCertSANs": [ip], "peerCertSANs": [ip]}},
            },
        ]
        path = self.state / f"{self.names[i]}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return path

    def _phase(self, i: int, *phases: str) -> subprocess.Popen[bytes]:
        """`init phase certs P` for each of `phases` on member i, one after another, in a shell of its own."""
        log = open(self.state / f"{self.names[i]}.log", "ab")  # noqa: SIM115 - owned by the child
        env = {k: v for k, v in os.environ.items() if k != c.ROOT_DIR_ENV}
        base = [sys.executable, "-m", "pykubeadm", "--root-dir", str(self.root(i)), "init", "phase", "certs"]
        script = " && ".join(
            " ".join([*map(_quote, base), p, "--config", _quote(str(self._config(i)))]) for p in phases
        )
        try:
            return subprocess.Popen(["sh", "-c", script], stdout=log, stderr=subprocess.STDOUT, env=env)
        finally:
            log.close()

    def _run_all(self, procs: list[subprocess.Popen[bytes]], what: str) -> None:
        for i, p in enumerate(procs):
            if p.wait() != 0:
                raise KubeadmError(f"lab: {what} on {self.names[i]} failed; see {self.state}/{self.names[i]}.log")

    def create(self, out: Out) -> None:
        """Certificates for every member, then the members, then wait until each answers."""
        from pykubeadm.testing.etcd import etcd_available

        if not etcd_available():
            raise KubeadmError("lab: an external etcd needs the etcd binary: install the Debian package 'etcd-server'")
        self.state.mkdir(parents=True, exist_ok=True)
        self._run_all([self._phase(0, "etcd-ca")], "init phase certs etcd-ca")
        ca = Layout(self.root(0))
        for i in range(1, len(self.names)):
            dst = Layout(self.root(i))
            dst.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(
                ca.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME), dst.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME)
            )
            shutil.copy2(ca.key_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME), dst.key_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME))
        phases = ("etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client")
        self._run_all([self._phase(i, *phases) for i in range(len(self.names))], "init phase certs")
        for i in range(len(self.names)):
            self._start_member(i)
        out(f"[lab] etcd members started: {', '.join(self.endpoints)}")
        self.wait_healthy()

    def _start_member(self, i: int) -> None:
        lay, ip = Layout(self.root(i)), self.addresses[i]
        data = lay.etcd_data_dir()
        data.mkdir(parents=True, exist_ok=True, mode=0o700)
        peers = ",".join(
            f"{n}=https://{a}:{c.ETCD_LISTEN_PEER_PORT}" for n, a in zip(self.names, self.addresses, strict=True)
        )
        cmd = [
            "etcd",
            f"--name={self.names[i]}",
            f"--data-dir={data}",
            f"--listen-client-urls=https://{ip}:{c.ETCD_LISTEN_CLIENT_PORT}",
            f"--advertise-client-urls=https://{ip}:{c.ETCD_LISTEN_CLIENT_PORT}",
            f"--listen-peer-urls=https://{ip}:{c.ETCD_LISTEN_PEER_PORT}",
            f"--initial-advertise-peer-urls=https://{ip}:{c.ETCD_LISTEN_PEER_PORT}",
            f"--listen-metrics-urls=http://{ip}:{c.ETCD_METRICS_PORT}",
            f"--initial-cluster={peers}",
            "--initial-cluster-state=new",
            "--initial-cluster-token=lab-external-etcd",
            "--client-cert-auth=true",
            f"--trusted-ca-file={lay.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME)}",
            f"--cert-file={lay.cert_path(c.ETCD_SERVER_CERT_AND_KEY_BASE_NAME)}",
            f"--key-file={lay.key_path(c.ETCD_SERVER_CERT_AND_KEY_BASE_NAME)}",
            "--peer-client-cert-auth=true",
            f"--peer-trusted-ca-file={lay.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME)}",
            f"--peer-cert-file={lay.cert_path(c.ETCD_PEER_CERT_AND_KEY_BASE_NAME)}",
            f"--peer-key-file={lay.key_path(c.ETCD_PEER_CERT_AND_KEY_BASE_NAME)}",
            "--snapshot-count=10000",
        ]
        with open(self.state / f"{self.names[i]}.etcd.log", "ab") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pid_file(i).write_text(f"{proc.pid}\n")

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT) -> None:
        from pykubeadm.phases import etcdmember

        deadline = time.monotonic() + timeout
        lay = Layout(self.root(0))
        while True:
            try:
                for url in self.endpoints:
                    etcdmember.call(lay, [url], "get the etcd status", lambda cl: cl.status())
                return
            except KubeadmError as err:
                if time.monotonic() > deadline:
                    raise KubeadmError(
                        f"lab: the external etcd cluster is not healthy after {timeout:g}s: {err}"
                    ) from err
            time.sleep(0.2)

    def members(self) -> list[dict[str, Any]]:
        from pykubeadm.phases import etcdmember

        return etcdmember.list_members(Layout(self.root(0)), self.endpoints)

    def install_client_files(self, cp: Layout) -> dict[str, Any]:
        """Copy the etcd CA certificate and the apiserver-etcd-client pair to the first control plane; the
        ClusterConfiguration's `etcd.external`."""
        src = Layout(self.root(0))
        files = (
            (src.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME), cp.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME)),
            (
                src.cert_path(c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME),
                cp.cert_path(c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME),
            ),
            (
                src.key_path(c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME),
                cp.key_path(c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME),
            ),
        )
        for a, b in files:
            b.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(a, b)
        return {
            "endpoints": self.endpoints,
            "caFile": f"{_PKI}/{c.ETCD_CA_CERT_AND_KEY_BASE_NAME}.crt",
            "certFile": f"{_PKI}/{c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME}.crt",
            "keyFile": f"{_PKI}/{c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME}.key",
        }

    def _pid(self, i: int) -> int | None:
        try:
            pid = int(self.pid_file(i).read_text().strip())
        except (OSError, ValueError):
            return None
        args = cmdline(pid) or []
        return pid if f"--name={self.names[i]}" in args and str(self.lab_dir) in " ".join(args) else None

    def stop(self, out: Out, timeout: float = 10.0) -> None:
        """Stop every member by its pid file."""
        for i, name in enumerate(self.names):
            pid = self._pid(i)
            if pid is not None:
                stop_processes([pid], grace=timeout)
                out(f"[lab] stopped etcd member {name}")
            self.pid_file(i).unlink(missing_ok=True)


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)
