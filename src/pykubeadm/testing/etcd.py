"""Start real etcd processes (one per member) for tests, benchmarks and the lab.

Every member is a separate `etcd` process (Debian's `etcd-server`, found on PATH or at /usr/bin/etcd) listening on a
loopback address, with its data dir and log file under a base directory you own (a pytest `tmp_path`).

API::

    from pykubeadm.testing.etcd import EtcdCluster, EtcdTLS, etcd_binary

    with EtcdCluster(tmp_path / "etcd", size=3) as cluster:    # starts, waits until every member is healthy
        cluster.url          # "http://127.0.0.1:41234,http://127.0.0.1:41236,..." (what --etcd-servers takes)
        cluster.endpoints    # the same as a list
        m = cluster.members[0]
        m.client_url, m.peer_url, m.data_dir, m.log_path, m.pid
        m.stop()             # SIGTERM, wait (SIGKILL after `timeout`)
        m.kill()             # SIGKILL (crash)
        m.pause(); m.resume()  # SIGSTOP / SIGCONT (a hung member)
        m.start(); m.wait_healthy()   # restart on the same data dir (rejoins the cluster)
    # leaving the block stops every member that is still running (also on exceptions)

* `EtcdCluster(base_dir, size=1, *, hosts=None, ports=None, tls=None, heartbeat_ms=100, election_ms=1000,
  extra_args=(), binary=None)`: `hosts` is one loopback address per member (default all "127.0.0.1"; the lab passes
  "127.0.10.1", "127.0.10.2", ...); `ports` one `(client_port, peer_port)` per member (default: free ports found by
  binding port 0 on the member's host). `start(timeout=30)`, `stop()`, `wait_healthy(timeout)`.
* `EtcdTLS(ca_file, cert_file, key_file, client_cert_auth=True, peer=False, client_cert_file=None,
  client_key_file=None)`: serve the client port over HTTPS with `cert_file`/`key_file` (the certificate must carry the
  member's IP as a SAN) and require client certificates signed by `ca_file` when `client_cert_auth`; with `peer=True`
  the same pair secures the peer port too (then it needs both serverAuth and clientAuth usages). The readiness probe
  presents `client_cert_file`/`client_key_file` (default: the server pair).
* `etcd_binary()` returns the etcd path or raises FileNotFoundError; `etcd_available()` is the boolean for skips.

Processes are started in their own session (a signal to the test runner's group does not reach them); their stderr
goes to `<base_dir>/<name>.log`, which error messages quote when a member fails to come up. Members still running
when the Python process exits are killed by an atexit hook.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = ["EtcdCluster", "EtcdMember", "EtcdTLS", "etcd_available", "etcd_binary", "free_port"]

_live: weakref.WeakSet[EtcdMember] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    """Last resort when a caller forgot to stop a member: never leave etcd processes behind us."""
    for member in list(_live):
        with contextlib.suppress(Exception):
            member.kill()


def etcd_binary() -> str:
    """The path of the etcd binary (PATH, then /usr/bin/etcd); FileNotFoundError if there is none."""
    found = shutil.which("etcd") or ("/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None)
    if not found:
        raise FileNotFoundError("etcd binary not found (install Debian's etcd-server; scripts/setup.sh does)")
    return found


def etcd_available() -> bool:
    try:
        etcd_binary()
    except FileNotFoundError:
        return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on `host` a moment ago (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class EtcdTLS:
    ca_file: Path
    cert_file: Path
    key_file: Path
    client_cert_auth: bool = True
    peer: bool = False
    client_cert_file: Path | None = None
    client_key_file: Path | None = None

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.check_hostname = False
        ctx.load_cert_chain(str(self.client_cert_file or self.cert_file), str(self.client_key_file or self.key_file))
        return ctx


class EtcdMember:
    """One etcd process; created by EtcdCluster (which passes the whole cluster's peer list)."""

    def __init__(
        self,
        name: str,
        host: str,
        client_port: int,
        peer_port: int,
        base_dir: Path,
        *,
        tls: EtcdTLS | None,
        binary: str,
    ):
        self.name = name
        self.host = host
        self.client_port = client_port
        self.peer_port = peer_port
        self.data_dir = base_dir / f"{name}.data"
        self.log_path = base_dir / f"{name}.log"
        self.tls = tls
        self.binary = binary
        self.process: subprocess.Popen[bytes] | None = None
        self._args: list[str] = []

    @property
    def client_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"{'https' if self.tls and self.tls.peer else 'http'}://{self.host}:{self.peer_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def configure(
        self, initial_cluster: str, token: str, heartbeat_ms: int, election_ms: int, extra: Sequence[str]
    ) -> None:
        args = [
            self.binary,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={self.peer_url}",
            f"--initial-advertise-peer-urls={self.peer_url}",
            f"--initial-cluster={initial_cluster}",
            f"--initial-cluster-token={token}",
            "--initial-cluster-state=new",
            f"--heartbeat-interval={heartbeat_ms}",
            f"--election-timeout={election_ms}",
            "--logger=zap",
            "--log-outputs=stderr",
        ]
        if self.tls:
            args += [f"--cert-file={self.tls.cert_file}", f"--key-file={self.tls.key_file}"]
            if self.tls.client_cert_auth:
                args += ["--client-cert-auth=true", f"--trusted-ca-file={self.tls.ca_file}"]
            if self.tls.peer:
                args += [
                    f"--peer-cert-file={self.tls.cert_file}",
                    f"--peer-key-file={self.tls.key_file}",
                    "--peer-client-cert-auth=true",
                    f"--peer-trusted-ca-file={self.tls.ca_file}",
                ]
        self._args = args + list(extra)

    def start(self) -> None:
        """Start the process (again, on the same data dir, after stop/kill). Does not wait; see wait_healthy."""
        if self.running:
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self._args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True
            )
        _live.add(self)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM and wait; SIGKILL if still alive after `timeout`."""
        if not self.process or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if not self.process or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait(10)

    def pause(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGCONT)

    def healthy(self) -> bool:
        """GET /health answers {"health":"true"} (the member is up and the cluster has a leader)."""
        ctx = self.tls.ssl_context() if self.tls else None
        try:
            with urllib.request.urlopen(f"{self.client_url}/health", timeout=2, context=ctx) as resp:  # noqa: S310
                return json.loads(resp.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"etcd member {self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            if self.healthy():
                return
            time.sleep(0.05)
        raise TimeoutError(
            f"etcd member {self.name} not healthy at {self.client_url} after {timeout}s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class EtcdCluster:
    """`size` etcd members forming one cluster; a context manager that starts them and always stops them."""

    def __init__(
        self,
        base_dir: Path,
        size: int = 1,
        *,
        hosts: Sequence[str] | None = None,
        ports: Sequence[tuple[int, int]] | None = None,
        tls: EtcdTLS | None = None,
        heartbeat_ms: int = 100,
        election_ms: int = 1000,
        extra_args: Sequence[str] = (),
        binary: str | None = None,
    ):
        self.base_dir = Path(base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        hosts = list(hosts) if hosts else ["127.0.0.1"] * size
        if len(hosts) != size or (ports is not None and len(ports) != size):
            raise ValueError("hosts and ports need one entry per member")
        binary = binary or etcd_binary()
        used: set[tuple[str, int]] = set()
        self.members: list[EtcdMember] = []
        for i, host in enumerate(hosts):
            if ports is not None:
                cport, pport = ports[i]
            else:
                cport, pport = self._free_pair(host, used)
            self.members.append(EtcdMember(f"m{i}", host, cport, pport, self.base_dir, tls=tls, binary=binary))
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        token = f"pykubeadm-{os.getpid()}-{id(self)}"
        for m in self.members:
            m.configure(initial, token, heartbeat_ms, election_ms, extra_args)

    @staticmethod
    def _free_pair(host: str, used: set[tuple[str, int]]) -> tuple[int, int]:
        out: list[int] = []
        while len(out) < 2:
            p = free_port(host)
            if (host, p) not in used:
                used.add((host, p))
                out.append(p)
        return out[0], out[1]

    @property
    def endpoints(self) -> list[str]:
        return [m.client_url for m in self.members]

    @property
    def url(self) -> str:
        return ",".join(self.endpoints)

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        try:
            for m in self.members:
                m.start()
            self.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        for m in self.members:
            if m.running:
                m.wait_healthy(max(0.1, deadline - time.monotonic()))

    def stop(self) -> None:
        for m in self.members:
            with contextlib.suppress(Exception):
                m.stop()

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
