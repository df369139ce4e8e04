"""Shared fixtures: running the real `pykubeadm` command in a subprocess against a node root under tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

OFFLINE_SKIP = (
    "wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,addon,"
    "show-join-command"
)


def run_pykubeadm(
    *args: str, root: Path | None = None, check: bool = False, env: dict | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm"]
    if root is not None:
        cmd += ["--root-dir", str(root)]
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYKUBEADM_ROOT_DIR", None)
    res = subprocess.run([*cmd, *args], capture_output=True, text=True, env=full_env, input=input, timeout=120)
    if check and res.returncode != 0:
        raise AssertionError(f"pykubeadm {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture
def pykubeadm() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_pykubeadm


@pytest.fixture(autouse=True)
def _stop_node_kubelets(request: pytest.FixtureRequest):
    """Stop every built-in kubelet daemon a test started under its tmp_path (by pid file, never by name), then what
    still runs for each node root there: Pod containers outlive their kubelet, as real containers do, so stopping a
    kubelet alone would leave them behind (found by the node's root, as reset finds them)."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None:
        return
    from pykubeadm.layout import Layout
    from pykubeadm.phases.kubeletservice import stop_kubelet
    from pykubeadm.phases.reset.processes import node_processes, stop_processes

    for pid_file in Path(tmp).glob("**/var/run/pykubeadm/kubelet.pid"):
        stop_kubelet(Layout(root=pid_file.parents[3]))
    for kubelet_dir in Path(tmp).glob("**/var/lib/kubelet"):
        stop_processes(node_processes(kubelet_dir.parents[2]), grace=5.0)
