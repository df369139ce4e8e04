"""Finding and stopping whatever still runs for a node root in built-in mode (the "containers" reset removes).

The built-in kubelet runs each static Pod container as a process in its own session, with every hostPath argument
mapped under the node's root dir (`--data-dir=<root>/var/lib/etcd`); the kubelet itself carries `--root-dir <root>`
and PYKUBEADM_ROOT_DIR. A process belongs to the node when its environment's PYKUBEADM_ROOT_DIR is the root, or when
it leads its own session (as the kubelet daemon and every container process do) and one of its arguments names the
root dir (the root itself or a path below it, also after `=`, `,`, `:` or `sqlite://`). So a `tail -f` of a log
under the root in someone's terminal is left alone. A Pod sandbox whose session leader is gone (a killed kubelet's
intermediate process, a shim that died first) belongs to the node too when its arguments name the root, and so do
its descendants (the containers inside its namespaces). Processes are never matched by name. This process and its ancestors are never touched, nor anything when the root is
"/" (host mode: the container runtime owns the containers there).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.util.procstat import stat_fields

__all__ = ["node_processes", "orphaned_pod_processes", "stop_processes"]

_PROC = Path("/proc")


def _matcher(root: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?:^|[=,:]|://)" + re.escape(root.encode()) + rb"(?:/|$)")


def _ancestors() -> set[int]:
    pids = {os.getpid()}
    pid = os.getpid()
    while pid > 1:
        try:
            stat = (_PROC / str(pid) / "stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.add(pid)
    return pids


def _session_leader(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def _belongs(pid: int, pattern: re.Pattern[bytes], root: str) -> bool:
    try:
        args = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if _session_leader(pid) and any(pattern.search(a) for a in args if a):
        return True
    try:
        env = (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{c.ROOT_DIR_ENV}={root}".encode() in env


def _scan() -> dict[int, tuple[int, int, list[str]]]:
    """pid → (parent pid, session id, arguments), one read of /proc per process."""
    procs: dict[int, tuple[int, int, list[str]]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, IndexError):
            continue
        if stat[0] not in ("Z", "X"):  # a dead session leader not yet reaped is gone all the same
            procs[int(entry.name)] = (int(stat[1]), int(stat[3]), args)
    return procs


def orphaned_pod_processes(root: Path) -> list[int]:
    """Pod sandboxes whose arguments name the node's root but whose session leader is gone, and their descendants.
    A process of someone's terminal that names the root (a `tail -f` of a log) keeps its live session leader."""
    if os.path.realpath(root) == "/":
        return []
    procs = _scan()
    prefix = f"{root}/"
    # Our own session is never an orphaned sandbox, even when its leader is gone or lives outside this PID namespace
    # (sid 0), as under a CI runner: a `tail -f` started from here is someone's terminal, not a Pod.
    ours = os.getsid(0)
    found = {
        pid
        for pid, (_, sid, args) in procs.items()
        if sid not in procs and sid not in (pid, ours, 0) and any(a == str(root) or a.startswith(prefix) for a in args)
    }
    grew = True
    while grew:  # their descendants (the containers inside a sandbox's namespaces)
        more = {pid for pid, (ppid, _, _) in procs.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    found -= _ancestors()
    return sorted(found)


def node_processes(root: Path) -> list[int]:
    """Pids of the processes (of any session) that belong to the node root `root`, orphaned Pod sandboxes
    included; [] for "/"."""
    real = os.path.realpath(root)
    if real == "/":
        return []
    roots = {str(root), real}
    patterns = [(_matcher(r), r) for r in roots]
    skip = _ancestors()
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in skip:
            continue
        if any(_belongs(pid, p, r) for p, r in patterns):
            found.append(pid)
    return sorted(set(found) | set(orphaned_pod_processes(root)))


def _alive(pid: int) -> bool:
    fields = stat_fields(pid, _PROC)
    if fields is None:
        return False
    if fields[0] == "Z":
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


def _signal(pid: int, sig: int) -> None:
    """Signal the process group when `pid` leads its own group (its children go too), else the process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid and pid != os.getpgrp():
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def stop_processes(pids: Iterable[int], grace: float = 10.0) -> list[int]:
    """SIGTERM `pids`, wait up to `grace` seconds, SIGKILL the rest; returns the pids that were signalled."""
    pids = [p for p in pids if _alive(p)]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return pids
