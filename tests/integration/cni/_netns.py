"""Network namespaces a test makes and always removes, and a way to run our CNI code inside one of them.

Every address these tests use exists only inside these namespaces: the host's network namespace is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.integration.kubelet.kubelet_procs import wait_until

CNI_BIN = "/usr/lib/cni"
CNITOOL = Path(__file__).with_name("_cnitool.py")
RELAY = Path(__file__).parents[1] / "proxy" / "_relay.py"

needs_netns = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("ip") is None, reason='no "ip" command (Debian package "iproute2")'),
    pytest.mark.skipif(
        not os.access(f"{CNI_BIN}/bridge", os.X_OK),
        reason="no CNI plugins (Debian package containernetworking-plugins)",
    ),
]


def run(*argv: str, ns: str | None = None, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    return subprocess.run(full, capture_output=True, text=True, check=check, timeout=120, **kw)


@contextmanager
def namespaces() -> Iterator[Callable[[str], str]]:
    """A factory of uniquely named namespaces (`ip netns add`, lo up); all deleted on exit, even on failure."""
    made: list[str] = []

    def make(role: str) -> str:
        name = f"pk-{role}-{uuid.uuid4().hex[:8]}"
        run("ip", "netns", "add", name)
        made.append(name)
        run("ip", "link", "set", "lo", "up", ns=name)
        return name

    try:
        yield make
    finally:
        for name in reversed(made):
            subprocess.run(["ip", "netns", "del", name], check=False, timeout=60)


def netns_path(name: str) -> str:
    return f"/run/netns/{name}"


def cnitool(node_ns: str, command: str, **kw: Any) -> dict[str, Any]:
    """Run pykubeadm.cni's `command` (add/check/del) inside `node_ns` (where the bridge is) in a fresh process."""
    res = run(sys.executable, str(CNITOOL), command, json.dumps(kw), ns=node_ns, check=False)
    if res.returncode != 0:
        raise AssertionError(f"cnitool {command} failed: {res.stdout}{res.stderr}")
    return dict(json.loads(res.stdout))


def addresses(ns: str, dev: str) -> list[str]:
    """The IPv4 addresses (with prefix) of `dev` inside `ns`; [] when the device does not exist."""
    res = run("ip", "-j", "-4", "addr", "show", "dev", dev, ns=ns, check=False)
    if res.returncode != 0:
        return []
    return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(res.stdout) for a in link.get("addr_info", [])]


class Procs:
    """Processes of the test, each in its own process group, all stopped at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], log: Path, ns: str | None = None) -> subprocess.Popen[bytes]:
        # nsenter --net (not `ip netns exec`): the node's processes share the host's mount namespace, so the Pods'
        # namespace files a kubelet pins stay visible to the next kubelet, as on a real node
        full = ["nsenter", f"--net=/run/netns/{ns}", "--", *argv] if ns else argv
        env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
        with open(log, "ab") as fh:
            proc = subprocess.Popen(full, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    @staticmethod
    def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)


def api_relay(procs: Procs, api: Any, ns: str, tmp: Path) -> None:
    """The apiserver (host loopback) at the same 127.0.0.1:port inside `ns`, through a Unix socket."""
    sock = tmp / f"api-{uuid.uuid4().hex[:6]}.sock"
    procs.start([sys.executable, str(RELAY), "unix-to-tcp", str(sock), api.host, str(api.port)], tmp / "relay-host.log")
    wait_until(sock.exists, 30, "the host relay")
    log = tmp / f"relay-{ns}.log"
    procs.start([sys.executable, str(RELAY), "tcp-to-unix", "127.0.0.1", str(api.port), str(sock)], log, ns)
    wait_until(lambda: "ready" in log.read_text(), 30, "the namespace's relay")
