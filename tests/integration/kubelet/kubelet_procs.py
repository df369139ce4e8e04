"""Helpers for kubelet integration tests: start `pykubeadm component kubelet` as a real process, find its children."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def children_of(pid: int) -> list[int]:
    """PIDs whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(pred: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class KubeletProcess:
    """`pykubeadm component kubelet ARGS` with its log in `log_path`; stop() always reaps it and its children."""

    def __init__(self, root: Path, args: Sequence[str], log_path: Path, env: dict[str, str] | None = None):
        self.root = root
        self.args = list(args)
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> KubeletProcess:
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        env.update(self.env or {})
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pykubeadm", "component", "kubelet", f"--node-root-dir={self.root}", *self.args],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        kids = children_of(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for k in kids:  # only processes this kubelet started
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(k, signal.SIGKILL)
        return self.proc.returncode


def node_files(root: Path) -> list[Path]:
    """Every file and directory under a node root."""
    return sorted(root.rglob("*"))


def write_kubelet_files(layout: Any, port: int, node: str, extra_flags: str = "") -> None:
    """What kubelet-start writes for a warm kubelet to start with: kubeadm-flags.env (its healthz on 127.0.0.1:`port`,
    node name `node`) and an empty KubeletConfiguration."""
    layout.kubelet_env_file.parent.mkdir(parents=True, exist_ok=True)
    layout.kubelet_env_file.write_text(
        f'KUBELET_KUBEADM_ARGS="--hostname-override={node} --node-ip=127.0.0.1 '
        f'--healthz-bind-address=127.0.0.1 --healthz-port={port}{extra_flags}"\n'
    )
    (layout.kubelet_env_file.parent / "config.yaml").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    )


def kubelet_healthz(port: int) -> bool:
    """The kubelet's /healthz on 127.0.0.1:`port` answers ok."""
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).text == "ok"
    except httpx.HTTPError:
        return False
