"""Finding and stopping whatever still runs for a node root in built-in mode (the "containers" reset removes).

The built-in kubelet runs each static Pod container as a process in its own session, with every hostPath argument
mapped under the node's root dir (`--data-dir=<root>/var/lib/etcd`); the kubelet itself carries `--root-dir <root>`
and PYKUBEADM_ROOT_DIR. A process belongs to the node when its environment's PYKUBEADM_ROOT_DIR is the root, or when
it leads its own session (as the kubelet daemon and every container process do) and one of its arguments names the
root dir (the root itself or a path below it, also after `=`, `,`, `:` or `sqlite://`). So a `tail -f` of a log
under the root in someone's terminal is left alone. A Pod sandbox whose session leader is gone (a killed kubelet's
intermediate process, a shim that died first) belongs to the node too when its arguments name the root, and so do
its descendants (the containers inside its namespaces). Processes are never matched by name. This process and its
ancestors are never touched, nor anything when the root is "/" (host mode: the container runtime owns the containers
there). `stop_processes` signals them all at once: SIGTERM, a short window (RESET_GRACE for reset), SIGKILL.
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

__all__ = ["RESET_GRACE", "node_processes", "nodes_processes", "orphaned_pod_processes", "stop_processes"]

_PROC = Path("/proc")
#: Seconds reset (and `lab down`) lets a node's processes exit after SIGTERM before SIGKILL, all of them at once: a
#: window of reset's own, not each Pod's terminationGracePeriodSeconds (kubeadm's `crictl stopp`/`rmp` do not wait
#: out grace periods either: the runtime kills a sandbox's containers at once).
RESET_GRACE = 0.5


def _matcher(root: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?:^|[=,:]|://)" + re.escape(root.encode()) + rb"(?:/|$)")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


#: pid → (parent pid, session id, arguments) of every live process.
_Table = dict[int, tuple[int, int, list[bytes]]]


def _scan() -> _Table:
    """Every live process, read once (its stat and cmdline); zombies left out (a dead process not yet reaped is gone
    all the same). Plain string paths: a scan runs several times per reset, on a machine with hundreds of processes."""
    procs: _Table = {}
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        stat, args = _read(f"{_PROC}/{name}/stat"), _read(f"{_PROC}/{name}/cmdline")
        if stat is None or args is None:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 3 and fields[0] not in (b"Z", b"X"):
            procs[int(name)] = (int(fields[1]), int(fields[3]), args.split(b"\0"))
    return procs


def _ancestors(procs: _Table) -> set[int]:
    pids = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        pid = procs[pid][0] if pid in procs else 0
    return pids


def _orphans(procs: _Table, root: Path) -> set[int]:
    """Pod sandboxes naming `root` whose session leader is gone, and their descendants."""
    prefix = f"{root}/".encode()
    exact = str(root).encode()
    # Our own session is never an orphaned sandbox, even when its leader is gone or lives outside this PID namespace
    # (sid 0), as under a CI runner: a `tail -f` started from here is someone's terminal, not a Pod.
    ours = os.getsid(0)
    found = {
        pid
        for pid, (_, sid, args) in procs.items()
        if sid not in procs and sid not in (pid, ours, 0) and any(a == exact or a.startswith(prefix) for a in args)
    }
    grew = True
    while grew:  # their descendants (the containers inside a sandbox's namespaces)
        more = {pid for pid, (ppid, _, _) in procs.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return found - _ancestors(procs)


def orphaned_pod_processes(root: Path) -> list[int]:
    """Pod sandboxes whose arguments name the node's root but whose session leader is gone, and their descendants.
    A process of someone's terminal that names the root (a `tail -f` of a log) keeps its live session leader."""
    if os.path.realpath(root) == "/":
        return []
    return sorted(_orphans(_scan(), root))


def node_processes(root: Path) -> list[int]:
    """Pids of the processes (of any session) that belong to the node root `root`, orphaned Pod sandboxes
    included; [] for "/"."""
    return nodes_processes([root])[root]


def nodes_processes(roots: Iterable[Path]) -> dict[Path, list[int]]:
    """`node_processes` of several node roots (a lab's), from one look at /proc."""
    wanted = {root: {str(root), os.path.realpath(root)} for root in roots}
    found: dict[Path, set[int]] = {root: set() for root in wanted}
    matchers = {root: [_matcher(n) for n in names] for root, names in wanted.items() if "/" not in names}
    envs = {root: [f"{c.ROOT_DIR_ENV}={n}".encode() for n in wanted[root]] for root in matchers}
    if not matchers:  # host mode: the container runtime owns the containers
        return {root: [] for root in found}
    procs = _scan()
    skip = _ancestors(procs)
    for pid, (_, sid, args) in procs.items():
        if pid in skip:
            continue
        env: list[bytes] | None = None
        for root, patterns in matchers.items():
            if sid == pid and any(p.search(a) for p in patterns for a in args if a):
                found[root].add(pid)
                continue
            if env is None:
                env = (_read(f"{_PROC}/{pid}/environ") or b"").split(b"\0")
            if any(e in env for e in envs[root]):
                found[root].add(pid)
    return {root: sorted(found[root] | (_orphans(procs, root) if root in matchers else set())) for root in found}


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
