"""The lab's load balancer: a real HAProxy in TCP mode on its own loopback address, the HA lab's controlPlaneEndpoint.

HAProxy passes TLS through (clients keep their certificates end to end) and health-checks each apiserver's `/readyz`
over TLS (`option httpchk GET /readyz`, `check-ssl verify none`; `/readyz` is open to anonymous users). The lab owns
the process: it runs in the background with its pid in `.lab/haproxy.pid`, a change of servers rewrites
`.lab/haproxy.cfg` and reloads seamlessly (`haproxy -sf OLDPID`: the new process takes over the listener, the old one
finishes its connections), and `lab down` stops it by that pid, never by name. Its view of the servers comes from the
stats socket (`show stat`, `.lab/haproxy.sock`).
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.util.namespaces import entered, nsenter_prefix
from pykubeadm.util.procstat import cmdline

__all__ = ["LOAD_BALANCER_NAME", "LoadBalancer", "ServerState", "haproxy_binary"]

#: Last octet of the load balancer's loopback address (127.0.10.250).
LB_OCTET = 250
#: Backend name in the configuration (what `show stat` reports as pxname).
BACKEND = "kube-apiservers"
#: A network-namespace lab's load balancer node (its namespaces' name, kind's external load balancer container).
LOAD_BALANCER_NAME = "lab-external-load-balancer"
#: The Debian package that ships the binary.
PACKAGE = "haproxy"


def haproxy_binary() -> str:
    """The haproxy binary, or a KubeadmError naming the package to install."""
    found = shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
    )
    if not found:
        raise KubeadmError(
            f"lab: an HA lab needs HAProxy as its load balancer, and no haproxy binary was found in $PATH or /usr/sbin:"
            f" install the Debian package '{PACKAGE}' (apt-get install {PACKAGE}, or run scripts/setup.sh)"
        )
    return found


@dataclass(frozen=True)
class ServerState:
    """One apiserver as HAProxy sees it (a `show stat` row)."""

    name: str
    address: str
    status: str  # UP, DOWN, "UP 1/2", MAINT, no check …
    check: str  # the last check's status, e.g. L7OK, L4CON, L6TOUT


class LoadBalancer:
    """HAProxy for the lab in `state_dir`, listening on `address`:6443."""

    def __init__(self, state_dir: Path, address: str, port: int = c.KUBE_APISERVER_PORT, namespaces: str = "") -> None:
        self.state_dir = state_dir
        self.address = address
        self.port = port
        #: A network-namespace lab: the load balancer node's namespaces (util.namespaces), where HAProxy runs.
        self.namespaces = namespaces

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.state_dir / "haproxy.cfg"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "haproxy.pid"

    @property
    def stats_socket(self) -> Path:
        return self.state_dir / "haproxy.sock"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "haproxy.log"

    def render(self, servers: dict[str, str]) -> str:
        """The configuration for `servers` (node name → apiserver address)."""
        lines = [
            "# Written by pykubeadm lab: the control plane's load balancer (TCP, TLS passed through).",
            "global",
            f"    stats socket {self.stats_socket} mode 600 level admin",
            "    maxconn 4096",
            "",
            "defaults",
            "    mode tcp",
            "    option dontlognull",
            "    timeout connect 2s",
            "    timeout client 1h",  # watches are long-lived
            "    timeout server 1h",
            "    timeout check 2s",
            "    retries 2",
            "    option redispatch",
            "",
            "frontend kube-apiserver",
            f"    bind {self.endpoint}",
            f"    default_backend {BACKEND}",
            "",
            f"backend {BACKEND}",
            "    balance roundrobin",
            "    option httpchk GET /readyz",
            "    http-check expect status 200",
            # fall 3: an etcd leader election (readyz's etcd check fails for up to ~2 s) takes no apiserver out.
            "    default-server inter 1s fall 3 rise 2 check check-ssl verify none",
        ]
        lines += [f"    server {name} {addr}:{self.port}" for name, addr in sorted(servers.items())]
        return "\n".join(lines) + "\n"

    def pid(self) -> int | None:
        """The running HAProxy's pid (from the pid file; checked to be an haproxy with our config), or None."""
        try:
            pid = int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        args = cmdline(pid) or []
        ours = bool(args) and os.path.basename(args[0]) == "haproxy" and str(self.config_file) in args
        return pid if ours else None

    def apply(self, servers: dict[str, str]) -> None:
        """Write the configuration for `servers` and start HAProxy, or reload the running one seamlessly."""
        binary = haproxy_binary()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        text = self.render(servers)
        tmp = self.config_file.with_suffix(".tmp")
        tmp.write_text(text)
        check = subprocess.run([binary, "-c", "-q", "-f", str(tmp)], capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise KubeadmError(f"lab: haproxy refused its configuration {tmp}: {check.stdout}{check.stderr}".strip())
        tmp.replace(self.config_file)
        old = self.pid()
        cmd = [*nsenter_prefix(self.namespaces or None), binary, "-D", "-f", str(self.config_file)]
        cmd += ["-p", str(self.pid_file)]
        if old is not None:
            cmd += ["-sf", str(old)]
        with open(self.log_file, "ab") as log:
            res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=False)
        if res.returncode != 0:
            raise KubeadmError(f"lab: haproxy did not start (exit {res.returncode}); see {self.log_file}")
        self._wait_listening()

    def _wait_listening(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with (
                contextlib.suppress(OSError),
                entered(self.namespaces or None),
                socket.create_connection((self.address, self.port), timeout=1.0),
            ):
                return
            if time.monotonic() > deadline:
                raise KubeadmError(f"lab: haproxy does not listen on {self.endpoint}; see {self.log_file}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop HAProxy by its pid; True if one was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        # imported here: the reset package loads etcd's client and every reset phase, ~0.18 s of every `lab` command
        from pykubeadm.phases.reset.processes import stop_processes

        stop_processes([pid], grace=timeout)
        self.pid_file.unlink(missing_ok=True)
        self.stats_socket.unlink(missing_ok=True)
        return True

    def show_stat(self) -> list[ServerState]:
        """The backend's servers as HAProxy sees them (`show stat` on the stats socket)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3.0)
            s.connect(str(self.stats_socket))
            s.sendall(b"show stat\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        text = b"".join(chunks).decode(errors="replace").lstrip("# ")
        rows = csv.DictReader(text.splitlines())
        return [
            ServerState(r["svname"], r.get("addr", ""), r.get("status", ""), r.get("check_status", ""))
            for r in rows
            if r.get("pxname") == BACKEND and r.get("svname") not in ("BACKEND", "FRONTEND")
        ]
