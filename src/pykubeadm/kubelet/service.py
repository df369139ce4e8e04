"""Starting and stopping the node's kubelet: systemd's kubelet.service in host mode, our kubelet as a daemon otherwise.

The kubelet's own service control, used by kubeadm's phases (kubelet-start, reset), the lab and the kubelet zygote
(which forks warm kubelets); it imports nothing of kubeadm's phases.

Host mode (root dir "/" and a kubelet unit known to systemd) does what kubeadm does: `systemctl stop kubelet` before
the files are written, `systemctl start kubelet` after. Built-in mode starts `pykubeadm component kubelet` with the
flags the systemd drop-in (10-kubeadm.conf) would pass — bootstrap/kubeconfig, --config, and KUBELET_KUBEADM_ARGS from
kubeadm-flags.env — in its own session, with a pid file and a log file under the node's root, so `reset` can stop it
(by pid, after checking the process really is this node's kubelet; never by name).

Warm start (built-in mode): `init` and `join` call `prewarm_kubelet` when they begin. It starts the kubelet's
interpreter at once with `--flags-from-stdin`: it imports its modules (~0.3 s of CPU, on the other core while the
command discovers the cluster and writes files) and waits. `start_kubelet` then hands it its command line and log file
on stdin instead of starting a cold process. A warm kubelet that is never started ends when the command exits: at exit
(`discard_prewarmed_kubelets`) or, if the command is killed, at EOF on its stdin. It writes nothing before it is started.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.layout import Layout
from pykubeadm.util.fs import ensure_dir
from pykubeadm.util.procstat import cmdline, is_running

__all__ = [
    "discard_prewarmed_kubelets",
    "kubelet_args",
    "kubelet_command",
    "kubelet_pid",
    "kubelet_will_start",
    "prewarm_kubelet",
    "release_prewarmed_kubelets",
    "start_kubelet",
    "stop_kubelet",
    "uses_systemd",
    "warm_kubelet_command",
]

#: The flag that makes `component kubelet` wait for its real flags on stdin (a warm start).
FLAGS_FROM_STDIN = "--flags-from-stdin"
FORK_SERVER = "--fork-server"

#: node root → its warm kubelet (a _WarmProcess, or a kubelet.builtin.zygote.WarmKubelet)
_prewarmed: dict[str, Any] = {}


def uses_systemd(layout: Layout) -> bool:
    """True on a real node: root dir "/" and systemd knows a kubelet unit."""
    if str(layout.root) != "/" or shutil.which("systemctl") is None:
        return False
    res = subprocess.run(
        ["systemctl", "list-unit-files", "kubelet.service", "--no-legend"], capture_output=True, text=True, check=False
    )
    return res.returncode == 0 and "kubelet.service" in res.stdout


def _env_file_args(layout: Layout) -> list[str]:
    path = layout.kubelet_env_file
    if not path.is_file():
        return []
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == c.KUBELET_ENV_VARIABLE:
            return shlex.split(value.strip().strip('"'))
    return []


def kubelet_args(layout: Layout) -> list[str]:
    """The kubelet's flags as systemd's 10-kubeadm.conf drop-in would assemble them."""
    return [
        f"--bootstrap-kubeconfig={c.KUBERNETES_DIR}/{c.KUBELET_BOOTSTRAP_KUBECONFIG_FILE}",
        f"--kubeconfig={c.KUBERNETES_DIR}/{c.KUBELET_KUBECONFIG_FILE}",
        f"--config={c.KUBELET_RUN_DIR}/{c.KUBELET_CONFIG_FILE}",
        *_env_file_args(layout),
    ]


def _component_prefix(layout: Layout) -> list[str]:
    return [sys.executable, "-m", "pykubeadm", "--root-dir", str(layout.root), "component", "kubelet"]


def warm_kubelet_command(layout: Layout, control_plane: bool = False) -> list[str]:
    """A warm kubelet's command line (`prewarm_kubelet`; kubelet.builtin.zygote's warm kubelets show the same): its flags come
    later, on stdin; a control plane's forks its fork server."""
    return [*_component_prefix(layout), FLAGS_FROM_STDIN, *([FORK_SERVER] if control_plane else [])]


def kubelet_command(layout: Layout) -> list[str]:
    """The built-in kubelet's command line."""
    return [*_component_prefix(layout), *kubelet_args(layout)]


def _child_env(layout: Layout) -> dict[str, str]:
    return {**os.environ, c.ROOT_DIR_ENV: str(layout.root)}


def kubelet_will_start(dry_run: bool, skip_phases: Iterable[str]) -> bool:
    """Whether an init or join run reaches kubelet-start (and so wants a warm kubelet)."""
    return not dry_run and "kubelet-start" not in skip_phases


class _WarmProcess:
    """A warm kubelet started as a new interpreter, its flags to come on a pipe (the zygote's are kubelet.builtin.zygote's
    WarmKubelet: the same four members)."""

    def __init__(self, proc: subprocess.Popen[bytes], layout: Layout) -> None:
        self.proc = proc
        self.layout = layout

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, line: bytes) -> int:
        """Hand it its flags (one JSON line); its pid. OSError if it died (killed, or failed to import)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.close()
        return self.proc.pid

    def release(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def discard(self) -> None:
        # By pid, after checking it is still this node's kubelet: in a join the lab forked (lab.forkcli) it is not our
        # child, and Popen.kill() would take "not my child" for "already ended" and send nothing.
        if _is_our_kubelet(self.proc.pid, self.layout):
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGKILL)
        self.release()
        self.proc.wait()


def prewarm_kubelet(
    layout: Layout, control_plane: bool = False, zygote: Path | None = None, namespaces: str = ""
) -> None:
    """Built-in mode: start this node's kubelet interpreter now; `start_kubelet` hands it its flags later. A control
    plane's kubelet also forks its fork server while it waits (kubelet.builtin.forkserver: its static Pods' components). With
    `zygote` (a lab's kubelet zygote socket, kubelet.builtin.zygote), it is forked from the zygote, warm at once; without a
    zygote to ask, it is a new interpreter. `namespaces`: the node's namespace directory (a network-namespace lab's
    node, util.namespaces), which the kubelet runs in."""
    key = str(layout.root)
    if key in _prewarmed or uses_systemd(layout):
        return
    if not _prewarmed:
        atexit.register(discard_prewarmed_kubelets)
    if zygote is not None:
        from pykubeadm.kubelet.builtin.zygote import WarmKubelet

        forked = WarmKubelet.request(zygote, key, control_plane, namespaces)
        if forked is not None:
            _prewarmed[key] = forked
            return
    with contextlib.suppress(OSError):  # only a speed-up: start_kubelet starts a cold kubelet without it
        from pykubeadm.util.namespaces import nsenter_prefix

        proc = subprocess.Popen(
            [*nsenter_prefix(namespaces or None), *warm_kubelet_command(layout, control_plane)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=_child_env(layout),
        )
        _prewarmed[key] = _WarmProcess(proc, layout)


def discard_prewarmed_kubelets() -> None:
    """Stop the warm kubelets that were never started (the command failed or skipped kubelet-start)."""
    while _prewarmed:
        _, warm = _prewarmed.popitem()
        warm.discard()


def release_prewarmed_kubelets(keep: str | None = None) -> None:
    """Give up this process's claim on the warm kubelets (all but the one of root dir `keep`) without stopping them:
    the lab hands each to the join it forks for that node, which starts it or, failing, stops it."""
    for key in [k for k in _prewarmed if k != keep]:
        _prewarmed.pop(key).release()


def _start_prewarmed(layout: Layout) -> int | None:
    """Hand the warm kubelet (if one is waiting) its flags and log file: its pid; None if there is none or it is
    gone."""
    warm = _prewarmed.pop(str(layout.root), None)
    if warm is None:
        return None
    start = {"args": kubelet_args(layout), "log": str(layout.kubelet_log_file)}
    try:
        return warm.start(json.dumps(start).encode() + b"\n")
    except OSError:  # it died (killed, or failed to import): start a cold one
        warm.discard()
        return None


def _is_our_kubelet(pid: int, layout: Layout) -> bool:
    args = cmdline(pid) or []
    return "component" in args and "kubelet" in args and str(layout.root) in args


def kubelet_pid(layout: Layout) -> int | None:
    """The pid of this node's running built-in kubelet, or None."""
    try:
        pid = int(layout.kubelet_pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _is_our_kubelet(pid, layout) else None


def start_kubelet(layout: Layout) -> str:
    """(Re)start the kubelet; returns how ("systemd" or "pid N")."""
    if uses_systemd(layout):
        subprocess.run(["systemctl", "daemon-reload"], check=False)
        subprocess.run(["systemctl", "restart", "kubelet"], check=True)
        return "systemd"
    stop_kubelet(layout)
    ensure_dir(layout.run_dir, c.PRIVATE_DIR_MODE)
    ensure_dir(layout.kubelet_log_file.parent)
    # Opened here on both paths: a log file that cannot be written fails the command now, not the kubelet later.
    log = open(layout.kubelet_log_file, "ab")  # noqa: SIM115 - handed to the child
    try:
        pid = _start_prewarmed(layout)
        if pid is None:
            pid = subprocess.Popen(
                kubelet_command(layout),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_child_env(layout),
            ).pid
    finally:
        log.close()
    layout.kubelet_pid_file.write_text(f"{pid}\n")
    return f"pid {pid}"


def stop_kubelet(layout: Layout, timeout: float = 15.0) -> bool:
    """Stop the kubelet and the static Pods it runs (its process group); True if one was running."""
    if uses_systemd(layout):
        subprocess.run(["systemctl", "stop", "kubelet"], check=False)
        return True
    pid = kubelet_pid(layout)
    if pid is None:
        with contextlib.suppress(FileNotFoundError):
            layout.kubelet_pid_file.unlink()
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(FileNotFoundError):
        layout.kubelet_pid_file.unlink()
    return True


def _alive(pid: int) -> bool:
    # A zombie child of ours is reaped here; any zombie counts as gone.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    return is_running(pid)
