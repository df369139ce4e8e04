"""The container runtime of a lab's nodes (`lab up --runtime containerd|builtin`): each node's own containerd.

A containerd lab gives every node a containerd of its own, as each kind node container runs one: its config, root,
state and socket under the node root (containerd.config: cgroupfs, runc, overlayfs, `restrict_oom_score_adj` where
the kernel refuses a negative oom_score_adj, the node's CNI conf dir, the registry hosts under certs.d), running in
the node's network and UTS namespaces, so that its Pods' networks are made on the node's network by the CNI config
the network addon writes. Its sandbox image is kubeadm's pause, built here from pykubeadm's own pause program and
imported into every node (`ctr images import`), so the lab starts offline. kubeadm's `nodeRegistration.criSocket`
(and so the kubelet's `--container-runtime-endpoint`) is the node's socket, `unix://<node root>/run/containerd/
containerd.sock`.

`start` launches the daemons and the pause imports as child processes without waiting (the lab process must stay
single-threaded to fork its commands, lab.forkcli); `wait_serving` blocks until a node's containerd listens (before
its init or join: kubeadm asks it through CRI), `wait` until its pause image is in (before the lab is declared up: no
Pod sandbox of the lab is made through CRI before then, the lab's system Pods being the built-in runtime's).
`stop` takes a node's runtime away completely: every Pod removed through CRI while the daemon runs (the shims outlive
containerd), the daemon stopped by its pid (checked against its command line), any shim of it left killed with what
runs under it, and every mount under its root and state dirs detached. Pids and logs are in the lab's state dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.nodes import LabNode
from pykubeadm.lab.pidfile import recorded_pid, stop_recorded, write_pid
from pykubeadm.layout import Layout
from pykubeadm.util.namespaces import nsenter_prefix, unmount
from pykubeadm.util.procstat import cmdline

if TYPE_CHECKING:
    from pykubeadm.containerd.config import ContainerdConfig

# containerd.config and what puts images into containerd bring the CRI client (gRPC, ~0.1 s of imports): imported by
# the functions that run for a containerd lab only.

__all__ = [
    "BUILTIN",
    "CONTAINERD",
    "RUNTIMES",
    "Starting",
    "choose",
    "config_of",
    "endpoint",
    "power_off",
    "running_pid",
    "start",
    "stop",
    "unavailable_reason",
]

Out = Callable[[str], None]
CONTAINERD = "containerd"
BUILTIN = "builtin"
RUNTIMES = (CONTAINERD, BUILTIN)
#: The programs a containerd lab needs, with their Debian packages.
_TOOLS = {"containerd": "containerd", "ctr": "containerd", "runc": "runc"}
#: How long a node's containerd may take to serve and import the pause image.
_START_TIMEOUT = 60.0
_PAUSE_ARCHIVE = "pause.oci.tar"


def unavailable_reason() -> str | None:
    """Why this machine cannot run the nodes' containerds (not root, a missing program), or None."""
    if os.geteuid() != 0:
        return "not running as root (containerd needs mounts, cgroups and runc)"
    for tool, package in _TOOLS.items():
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f'the "{tool}" command is missing (Debian package "{package}")'
    return None


def choose(asked: str | None, netns: bool, out: Out) -> str:
    """The runtime of a new lab: `asked` (an error if it is containerd and cannot run), else containerd where it can
    run (root, containerd and runc present, the netns topology), else builtin; says which and why in one line."""
    if asked is not None and asked not in RUNTIMES:
        raise KubeadmError(f'invalid --runtime "{asked}": use containerd or builtin')
    if asked == BUILTIN:
        out("[lab] Runtime: builtin (asked for): each node's kubelet runs its Pods' programs as processes")
        return BUILTIN
    why = unavailable_reason() if netns else "the loopback topology shares one network among all nodes"
    if why is not None:
        if asked == CONTAINERD:
            raise KubeadmError(f"lab: --runtime containerd cannot run here: {why}; use --runtime builtin")
        out(f"[lab] Runtime: builtin, because {why}")
        return BUILTIN
    out(
        f"[lab] Runtime: containerd ({'asked for' if asked else 'root, and containerd is installed'}): each node runs "
        "its own containerd in its namespaces, kubeadm's pause image preloaded"
    )
    return CONTAINERD


def config_of(node: LabNode) -> ContainerdConfig:
    """The node's containerd config (every path under its root)."""
    from pykubeadm.containerd.config import ContainerdConfig

    return ContainerdConfig(Layout(node.root))


def endpoint(node: LabNode) -> str:
    """The node's CRI endpoint (kubeadm's criSocket, the kubelet's containerRuntimeEndpoint)."""
    return f"unix://{Layout(node.root).containerd_socket}"


def _pid_file(node: LabNode) -> Path:
    return node.state / f"{node.name}-containerd.pid"


def _log_file(node: LabNode) -> Path:
    return node.state / f"{node.name}-containerd.log"


def running_pid(node: LabNode) -> int | None:
    """The pid of the node's containerd, if it runs (its command line names the node's config)."""
    return recorded_pid(_pid_file(node), str(Layout(node.root).containerd_config))


@dataclass
class Starting:
    """Nodes whose containerds are starting: the pause import of each (a `ctr` that waits for the socket)."""

    imports: dict[str, tuple[LabNode, subprocess.Popen[bytes]]]

    def wait_serving(self, names: Iterable[str], timeout: float = _START_TIMEOUT) -> None:
        """Block until the named nodes' containerds listen on their sockets (containerd listens once its plugins
        are loaded): enough for kubeadm's CRI check. The pause image may still be being imported (see wait)."""
        deadline = time.monotonic() + timeout
        for name in names:
            entry = self.imports.get(name)
            if entry is None:
                continue
            node, proc = entry
            socket = Layout(node.root).containerd_socket
            while not socket.is_socket():
                if running_pid(node) is None or proc.poll() not in (None, 0) or time.monotonic() > deadline:
                    self.wait([name], timeout=0)  # the error, with the end of the daemon's log
                    raise KubeadmError(f"lab: the containerd of {node.name} does not listen on {socket}")
                time.sleep(0.005)

    def wait(self, names: Iterable[str] | None = None, timeout: float = _START_TIMEOUT) -> None:
        """Block until the named nodes' (default: all) containerds serve with the pause image imported; a failure is
        a KubeadmError with the end of the daemon's log."""
        deadline = time.monotonic() + timeout
        for name in list(self.imports if names is None else names):
            entry = self.imports.pop(name, None)
            if entry is None:
                continue
            node, proc = entry
            try:
                code = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = -1
            if code != 0:
                raise KubeadmError(
                    f"lab: the containerd of {node.name} did not start with kubeadm's pause image "
                    f"(exit {code}); its log ({_log_file(node)}) ends with:\n{_tail(_log_file(node))}"
                )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def registry_hosts(node: LabNode, hosts: dict[str, tuple[str, list[str]]]) -> None:
    """Write the node's certs.d: registry → (its server, the hosts asked first)."""
    from pykubeadm.containerd.config import write_registry_hosts

    for registry, (server, mirrors) in hosts.items():
        write_registry_hosts(Layout(node.root), registry, server, mirrors)


def start(state: Path, nodes: Iterable[LabNode], hosts: dict[str, tuple[str, list[str]]] | None = None) -> Starting:
    """Start each node's containerd in its namespaces and, behind it, the import of kubeadm's pause image; returns
    at once (see Starting.wait). `hosts`: the registry hosts each node's containerd is given (registry_hosts)."""
    nodes = [n for n in nodes if running_pid(n) is None]
    if not nodes:
        return Starting({})
    from pykubeadm.containerd.config import write_config
    from pykubeadm.containerd.images import build_pause_image

    ctr = shutil.which("ctr") or "/usr/sbin/ctr"
    binary = shutil.which("containerd") or "/usr/sbin/containerd"
    archive = state / _PAUSE_ARCHIVE
    if not archive.exists():
        build_pause_image(archive, state / "native-cache")
    started: dict[str, tuple[LabNode, subprocess.Popen[bytes]]] = {}
    for node in nodes:
        cfg = config_of(node)
        config = write_config(cfg)
        registry_hosts(node, hosts or {})
        socket = cfg.layout.containerd_socket
        socket.unlink(missing_ok=True)  # a killed daemon's: the import below waits for the new one's
        with open(_log_file(node), "ab") as log:
            daemon = subprocess.Popen(
                [*nsenter_prefix(node.namespaces or None), binary, "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            write_pid(_pid_file(node), daemon.pid)
            # The import waits for the socket, so that nothing in this process waits for the daemon.
            script = (
                'i=0; while [ ! -S "$1" ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 3; sleep 0.01; done; shift; exec "$@"'
            )
            started[node.name] = (
                node,
                subprocess.Popen(
                    [
                        "/bin/sh",
                        "-c",
                        script,
                        "sh",
                        str(socket),
                        ctr,
                        "--address",
                        str(socket),
                        "--connect-timeout",
                        "10s",
                        "--namespace",
                        c.CONTAINERD_K8S_NAMESPACE,
                        "images",
                        "import",
                        "--snapshotter",
                        cfg.snapshotter,
                        str(archive),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                ),
            )
    return Starting(started)


def _shims(socket: Path) -> list[int]:
    """The shims of the containerd at `socket` (they name its address on their command line)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        args = cmdline(int(entry.name)) or []
        if "-address" in args and str(socket) in args:
            found.append(int(entry.name))
    return found


def _descendants(pids: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                children.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(int(entry.name))
    found, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _remove_pods(cfg: ContainerdConfig) -> int:
    """Every sandbox of the runtime stopped and removed through CRI (kubeadm's reset does the same); how many."""
    from pykubeadm.cri.kubeadmruntime import ContainerRuntime

    runtime = ContainerRuntime(cfg.endpoint, timeout=30.0)
    sandboxes = runtime.list_kube_containers()
    runtime.remove_containers(sandboxes)
    return len(sandboxes)


def _mounts_under(paths: Iterable[Path]) -> list[str]:
    prefixes = tuple(f"{p}/" for p in paths)
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return sorted((p for p in points if p.startswith(prefixes)), key=len, reverse=True)


def stop(node: LabNode, out: Out) -> None:
    """Take the node's containerd away: its Pods (through CRI), the daemon, any shim left, every mount it made."""
    from pykubeadm.phases.reset.processes import stop_processes

    cfg = config_of(node)
    layout = cfg.layout
    pid = running_pid(node)
    if pid is not None and layout.containerd_socket.exists():
        try:
            removed = _remove_pods(cfg)
        except KubeadmError as err:
            out(f"[lab] {node.name}: removing its Pods through CRI failed: {err}")
        else:
            if removed:
                out(f"[lab] {node.name}: removed {removed} Pod sandbox(es) through CRI")
    if stop_recorded(_pid_file(node), str(layout.containerd_config)):
        out(f"[lab] stopped the containerd of {node.name}")
    left = _descendants(_shims(layout.containerd_socket))
    if left:
        stop_processes(left, grace=0.5)
        out(f"[lab] {node.name}: stopped {len(left)} containerd shim process(es) left: {left}")
    _unmount_all(node, out)
    layout.unlink_containerd_socket_dir()


def remove_socket_links(lab_dir: Path) -> int:
    """Remove every short containerd socket link (`Layout.containerd_socket`) that leads into `lab_dir`, also those of
    nodes a failed `lab up` never recorded; how many."""
    links = Path(c.CONTAINERD_SOCKET_LINK_DIR)
    inside = str(lab_dir.resolve()).rstrip("/") + "/"
    removed = 0
    for link in links.iterdir() if links.is_dir() else ():
        if link.is_symlink() and os.readlink(link).startswith(inside):
            link.unlink(missing_ok=True)
            removed += 1
    return removed


def _unmount_all(node: LabNode, out: Out) -> None:
    layout = Layout(node.root)
    mounts = _mounts_under([layout.containerd_state, layout.containerd_root])
    for point in mounts:
        with contextlib.suppress(OSError):
            unmount(point)
    if mounts:
        out(f"[lab] {node.name}: unmounted {len(mounts)} mount(s) of its containerd")


def power_off(node: LabNode, out: Out) -> list[int]:
    """The node loses power: its containerd, every shim of it and every container under them SIGKILLed at once
    (their records stay in containerd's root, as on a machine that lost power), its mounts detached; the pids."""
    layout = Layout(node.root)
    pid = running_pid(node)
    pids = ([pid] if pid is not None else []) + _descendants(_shims(layout.containerd_socket))
    for victim in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    _unmount_all(node, out)
    return pids
