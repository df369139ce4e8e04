"""`pykubeadm join` (token discovery) against an apiserver that is SIGSTOPped in the middle: after discovery, while
the new node's kubelet runs its TLS bootstrap. The join waits, and once the apiserver gets SIGCONT it finishes: the
node's certificate is issued, the Node registers and becomes Ready.

The cluster is a one-node lab (`pykubeadm lab up --workers 0`, i.e. `pykubeadm init` with built-in components) on
127.0.19.1; the joining node is a root dir of its own on 127.0.19.9 with the commands a user would type.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import stop_kubelet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

PREFIX = "127.0.19."
WORKER_IP = f"{PREFIX}9"
STOPPED_FOR = 6.0  # seconds the apiserver stays frozen once the kubelet's bootstrap has begun


def pykubeadm_cmd(*args: str, root: Path | None = None) -> list[str]:
    return [sys.executable, "-m", "pykubeadm", *(["--root-dir", str(root)] if root else []), *args]


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    e["PYKUBEADM_LAB_ADDRESS_PREFIX"] = PREFIX
    e["PYTHONUNBUFFERED"] = "1"  # the join's progress lines arrive as it prints them
    return e


@contextlib.contextmanager
def lab(directory: Path) -> Iterator[str]:
    """A one-node lab; yields the `kubeadm join` arguments it printed. Torn down with `lab down` on the way out."""
    try:
        res = subprocess.run(
            pykubeadm_cmd("lab", "up", "--topology", "loopback", "--dir", str(directory), "--workers", "0"),
            capture_output=True, text=True, env=env(), timeout=120, check=False,
        )  # fmt: skip
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        m = re.search(
            r"kubeadm join (\S+) --token (\S+) \\\s+--discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})", res.stdout
        )
        assert m, res.stdout
        yield m.group(1), m.group(2), m.group(3)  # type: ignore[misc]
    finally:
        subprocess.run(
            pykubeadm_cmd("lab", "down", "--dir", str(directory)),
            capture_output=True,
            env=env(),
            timeout=120,
            check=False,
        )


def apiserver_pid(cp_root: Path) -> int:
    """The control-plane node's kube-apiserver process (a child of its kubelet), judged on one read of each cmdline."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kube-apiserver" in args and any(a.startswith(f"--client-ca-file={cp_root}/".encode()) for a in args):
            return int(entry.name)
    raise AssertionError(f"no kube-apiserver process for {cp_root}")


def test_join_waits_for_a_stopped_apiserver(tmp_path: Path) -> None:
    worker = tmp_path / "faults-worker"
    with lab(tmp_path / "lab") as (endpoint, token, ca_hash):
        try:
            cp_root = tmp_path / "lab" / "lab-control-plane"
            api_pid = apiserver_pid(cp_root)
            patches = tmp_path / "worker-patches"
            patches.mkdir()
            (patches / "kubeletconfiguration+merge.yaml").write_text(
                f"address: {WORKER_IP}\nhealthzBindAddress: {WORKER_IP}\n"
            )
            join = subprocess.Popen(
                pykubeadm_cmd(
                    "join", endpoint, "--token", token, "--discovery-token-ca-cert-hash", ca_hash,
                    "--node-name", "faults-worker", "--patches", str(patches), "--ignore-preflight-errors=Port-10250",
                    root=worker,
                ),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env(),
                start_new_session=True,
            )  # fmt: skip
            out: list[str] = []
            stopped = threading.Event()
            resumed_at: list[float] = []

            def freeze_during_bootstrap() -> None:
                os.kill(api_pid, signal.SIGSTOP)
                stopped.set()
                time.sleep(STOPPED_FOR)  # the fault's duration, not a wait for a condition
                os.kill(api_pid, signal.SIGCONT)
                resumed_at.append(time.monotonic())

            freezer = threading.Thread(target=freeze_during_bootstrap, daemon=True)
            try:
                assert join.stdout is not None
                for line in join.stdout:
                    out.append(line)
                    if "Waiting for the kubelet to perform the TLS Bootstrap" in line and freezer.ident is None:
                        freezer.start()
                rc = join.wait(120)
                finished = time.monotonic()
                freezer.join(STOPPED_FOR + 5)
            finally:
                os.kill(api_pid, signal.SIGCONT)  # never leave it frozen
                if join.poll() is None:
                    os.killpg(join.pid, signal.SIGKILL)
                    join.wait(10)
            text = "".join(out)
            assert stopped.is_set(), f"the join never reached the kubelet's TLS bootstrap:\n{text}"
            assert rc == 0, text
            assert "This node has joined the cluster" in text, text
            assert resumed_at and finished > resumed_at[0], "the join finished while the apiserver was stopped"
            kubeconfig = cp_root / "etc/kubernetes/admin.conf"
            deadline = time.monotonic() + 60
            while True:
                res = subprocess.run(
                    ["kubectl", "--kubeconfig", str(kubeconfig), "get", "node", "faults-worker", "--no-headers"],
                    capture_output=True, text=True, timeout=30, check=False,
                )  # fmt: skip
                if res.returncode == 0 and res.stdout.split()[1] == "Ready":
                    break
                assert time.monotonic() < deadline, f"faults-worker not Ready: {res.stdout}{res.stderr}"
                time.sleep(0.5)
            assert (worker / "var/lib/kubelet/pki/kubelet-client-current.pem").resolve(strict=True)
        finally:
            stop_kubelet(Layout(root=worker))  # the joined node's kubelet and its Pods
