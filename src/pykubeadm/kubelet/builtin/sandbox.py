"""Container isolation for the built-in runtime: a Pod's process in its own mount, PID and UTS namespaces.

The pod worker asks `can_isolate()` once; where it is true (root, namespaces usable) it starts each container through
`sandboxed_argv(...)`, a prefix running the native `pod-sandbox` launcher (native/pod-sandbox.c): it unshares
mount+PID+UTS, makes every mount private, bind-mounts each `Mount` at its container path (read-only where asked;
missing mount points are made inside the namespace only, over a private overlay, so the host sees no new directory),
sets the hostname to the Pod's name, joins the Pod's network namespace where it has one, and forks the program as PID 1 with its own /proc in `workingDir`. The launcher
stays the program's parent: signals sent to it are forwarded, and it exits with the program's status. API Pods also
get their own root (a writable layer over the host's root, or a read-only root), their identity, capabilities,
no_new_privs, seccomp filter and cgroups (`containment` decides, the launcher applies). Where isolation is not
available the pod worker runs the program directly and maps paths instead (`runtime.PathMapper`).
`enter_argv(pid, ...)` is the prefix for `kubectl exec` into a running container (through the launcher, confined as
the container); `pause_path()` is the native pause, `cri_log_path()` the native CRI log writer.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path, PurePosixPath

from pykubeadm.kubelet.builtin.native import NativeBuildError, native_binary
from pykubeadm.kubelet.volumes import Mount
from pykubeadm.layout import Layout, default_root

__all__ = [
    "NativeBuildError",
    "can_isolate",
    "cri_log_path",
    "enter_argv",
    "launcher_features",
    "launcher_path",
    "pause_path",
    "sandboxed_argv",
]

log = logging.getLogger(__name__)

#: A Pod's hostname is its name, truncated to 63 characters without trailing '-' or '.'.
_HOSTNAME_MAX = 63
_decided: bool | None = None
_decide_lock = threading.Lock()


def _layout(layout: Layout | None) -> Layout:
    return layout if layout is not None else Layout(default_root())


def pause_path(layout: Layout | None = None) -> Path:
    """The native pause program (registry.k8s.io/pause); built on first use into the node's cache if setup.sh did not.

    Raises NativeBuildError naming the fix when it is missing and no C compiler exists.
    """
    return native_binary("pause", _layout(layout).native_cache_dir)


def launcher_path(layout: Layout | None = None) -> Path:
    """The native pod-sandbox launcher, found or built like `pause_path()`."""
    return native_binary("pod-sandbox", _layout(layout).native_cache_dir)


def cri_log_path(layout: Layout | None = None) -> Path:
    """The native CRI log writer (cri-log.c) the shims run beside each container, found or built like `pause_path()`."""
    return native_binary("cri-log", _layout(layout).native_cache_dir)


def can_isolate(layout: Layout | None = None) -> bool:
    """True when containers can run in their own namespaces here: root, the launcher available, and a trial
    run succeeds. Decided once per process (the first answer stands)."""
    global _decided
    with _decide_lock:
        if _decided is None:
            _decided = _probe(layout)
        return _decided


def _probe(layout: Layout | None) -> bool:
    if os.geteuid() != 0:
        log.info("containers share the host's namespaces: the kubelet is not running as root")
        return False
    true = shutil.which("true")
    if true is None:
        return False
    try:
        launcher = launcher_path(layout)
        with tempfile.TemporaryDirectory(prefix="pod-sandbox-probe-") as src:
            # a missing mount point at the top: namespaces, the private overlay root and a bind mount all work
            target = f"/.pod-sandbox-probe-{os.getpid()}/mnt"
            res = subprocess.run(
                [str(launcher), "-h", "probe", "-r", src, target, "--", true],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
    except (NativeBuildError, OSError, subprocess.TimeoutExpired) as e:
        log.warning("containers share the host's namespaces: %s", e)
        return False
    if res.returncode != 0:
        log.warning("containers share the host's namespaces: mount/PID namespaces unusable: %s", res.stderr.strip())
        return False
    return True


def _depth(path: str) -> int:
    return len(PurePosixPath(path).parts)


@cache
def launcher_features(layout: Layout | None = None) -> frozenset[str]:
    """What the launcher was built with (`pod-sandbox -V`): "seccomp" when libseccomp was there."""
    try:
        res = subprocess.run(
            [str(launcher_path(layout)), "-V"], capture_output=True, text=True, timeout=10, check=False
        )
    except (NativeBuildError, OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(res.stdout.split())


def sandboxed_argv(
    argv: Sequence[str],
    mounts: Sequence[Mount],
    *,
    workdir: str = "",
    hostname: str = "",
    layout: Layout | None = None,
    private_root: bool = False,
    zygote: Path | None = None,
    netns: Path | None = None,
    root_layer: Path | None = None,
    read_only_root: bool = False,
    confine: Sequence[str] = (),
    cgroups: Sequence[str] = (),
) -> list[str]:
    """`argv` prefixed so that it runs as PID 1 of new mount/PID/UTS namespaces with `mounts` bind-mounted.

    Mounts are applied parents first (by the depth of container_path, then in the given order, like runc), so a
    volume mounted inside another lands on top of it. `workdir` ("" = /) is created in the namespace if missing.
    `hostname` (the Pod's name) is truncated to 63 characters as the kubelet does. `private_root` gives the program
    a writable layer of its own over the host's root directory (kept in memory; the host's other mounts, such as
    /dev, /sys, /run or /tmp where that is a mount, stay shared); without it, writes outside volumes reach the host
    as with Nomad's raw_exec. With `zygote` (the socket of the lab's kubelet zygote) the program, a built-in
    component, is forked by the zygote into the namespaces instead of exec'd there (kubelet.builtin.zygote). With `netns`
    (the Pod's network namespace file, kubelet.builtin.podnetwork) the program runs in the Pod's network, else the node's.

    A container's own root: `root_layer` (a directory kept across its restarts) holds the writable upper layer over
    the host's root; `read_only_root` makes the root read-only instead (readOnlyRootFilesystem). Either hardens the
    container (the host's other mounts read-only, a fresh /dev, masked /proc). `confine` are the launcher's identity
    and privilege options (`securitycontext.Confinement.launcher_args()`), `cgroups` the container's cgroup.procs
    files.
    """
    out = [str(launcher_path(layout))]
    if read_only_root:
        out.append("-o")
    elif root_layer is not None:
        out += ["-l", str(root_layer)]
    elif private_root:
        out.append("-p")
    out += confine
    for procs in cgroups:
        out += ["-C", procs]
    if len(hostname) > _HOSTNAME_MAX:  # the kubelet's GeneratePodHostNameAndDomain
        hostname = hostname[:_HOSTNAME_MAX].rstrip("-.")
    if hostname:
        out += ["-h", hostname]
    if workdir:
        out += ["-w", workdir]
    if zygote is not None:
        out += ["-z", str(zygote)]
    if netns is not None:
        out += ["-n", str(netns)]
    for m in sorted(mounts, key=lambda m: _depth(m.container_path)):
        if not PurePosixPath(m.container_path).is_absolute():
            raise ValueError(f"mount path {m.container_path!r} must be absolute")
        out += ["-r" if m.read_only else "-b", str(m.host_path), m.container_path]
    return [*out, "--", *argv]


def enter_argv(
    pid: int, confine: Sequence[str] | None = None, cgroups: Sequence[str] = (), layout: Layout | None = None
) -> list[str]:
    """A prefix running a command inside the container started as `pid` (the launcher's or the program's pid): its
    mount, UTS, network and PID namespaces, root and working directory (`kubectl exec`). With `confine` (the
    container's launcher options) and `cgroups`, the launcher enters it and the command runs confined as the
    container is; without, nsenter enters it as root."""
    if confine is not None:
        out = [str(launcher_path(layout)), *confine]
        for procs in cgroups:
            out += ["-C", procs]
        return [*out, "-e", str(pid), "--"]
    ns = f"/proc/{pid}/ns"
    pid_ns = "--pid"
    try:
        if os.readlink(f"{ns}/pid") != os.readlink(f"{ns}/pid_for_children"):
            pid_ns = f"--pid={ns}/pid_for_children"  # the launcher: its program is PID 1 of the namespace it made
    except OSError:
        pass
    nsenter = shutil.which("nsenter") or "nsenter"
    return [nsenter, f"--target={pid}", "--mount", "--uts", "--net", pid_ns, "--root", "--wd", "--"]
