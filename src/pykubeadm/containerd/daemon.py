"""Runs a node's containerd as a child process: writes its config, starts it, waits until its CRI answers (with a
deadline), and stops it by pid; used by the lab's nodes and the tests.

Stopping containerd does not stop its Pods: each sandbox's shim outlives it (reparented to PID 1), as on any
containerd host. Remove Pods through CRI (StopPodSandbox, RemovePodSandbox) before `stop()`; `remove_all_pods`
does that for every sandbox of this containerd.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.containerd.config import ContainerdConfig, write_config
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.errors import CRIError
from pykubeadm.errors import KubeadmError
from pykubeadm.util.child import terminate_child

__all__ = ["ContainerdError", "ContainerdProcess", "containerd_binary", "remove_all_pods"]

_POLL = 0.02


class ContainerdError(KubeadmError):
    """containerd is missing, did not start, or did not answer in time."""


def containerd_binary() -> str:
    """The containerd executable on PATH, or ContainerdError naming the package to install."""
    found = shutil.which("containerd")
    if found is None:
        raise ContainerdError("containerd not found in $PATH: install it (Debian: apt-get install containerd runc)")
    return found


async def remove_all_pods(cri: CRIClient, *, timeout: float = 30.0) -> list[str]:
    """Stop and remove every sandbox (and so every container) of the runtime; returns their ids. A container still
    being started (a kubelet stopped in the middle of StartContainer) cannot be removed yet — containerd answers
    "container is in starting state, can't be removed" — so a sandbox is stopped and removed again until `timeout`,
    as kubeadm's reset retries its removals."""
    removed = []
    for sandbox in await cri.list_pod_sandbox():
        deadline = time.monotonic() + timeout
        while True:
            try:
                await cri.stop_pod_sandbox(sandbox.id)
                await cri.remove_pod_sandbox(sandbox.id)
                break
            except CRIError as err:
                if "starting state" not in str(err) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)
        removed.append(sandbox.id)
    return removed


class ContainerdProcess:
    """One containerd for one node (its config, root, state and socket under the node root)."""

    def __init__(self, cfg: ContainerdConfig, *, log_file: Path | None = None) -> None:
        self.cfg = cfg
        self.log_file = log_file or cfg.layout.host(f"{c.PYKUBEADM_LOG_DIR}/containerd.log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return self.cfg.endpoint

    async def start(self, *, timeout: float = 30.0) -> None:
        """Write the config, start containerd and wait until its CRI answers Version; on failure it is stopped and
        the error carries the end of its log."""
        binary = containerd_binary()
        config = write_config(self.cfg)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [binary, "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            await self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    async def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        last = "its socket did not appear"
        async with CRIClient(self.endpoint, timeout=1.0) as cri:
            while True:
                if self.process.poll() is not None:
                    raise ContainerdError(
                        f"containerd exited with status {self.process.returncode} before serving CRI; "
                        f"its log ({self.log_file}) ends with:\n{self.log_tail()}"
                    )
                if self.cfg.layout.containerd_socket.exists():
                    try:
                        await cri.version()
                        return
                    except CRIError as err:
                        last = str(err)
                if time.monotonic() > deadline:
                    raise ContainerdError(
                        f"containerd did not answer CRI on {self.endpoint} within {timeout:g}s ({last}); "
                        f"its log ({self.log_file}) ends with:\n{self.log_tail()}"
                    )
                await asyncio.sleep(_POLL)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM containerd (SIGKILL after `timeout`) and reap it, and remove its socket's short link if it has one.
        Its Pods' shims are not touched."""
        proc, self.process = self.process, None
        terminate_child(proc, timeout)
        self.cfg.layout.unlink_containerd_socket_dir()
