"""reset phase `cleanup-node`: stop the kubelet and its Pods, unmount, delete what kubeadm wrote (kubeadm-facts §6.5).

In kubeadm's order: stop the kubelet (systemd's unit in host mode, the built-in daemon otherwise), unmount what is
mounted below /var/lib/kubelet, remove the Pods' containers (in built-in mode: every process still running for this
node root, all at once, SIGKILL after reset's short SIGTERM window `RESET_GRACE` — see `processes.py`; in host mode
every Pod sandbox through CRI, as kubeadm does), delete the contents of the manifests, /var/lib/kubelet and certificates directories (and
/etc/kubernetes/tmp with --cleanup-tmp-dir), delete the kubeconfig files. Then, beyond kubeadm, the built-in control
plane's own state under the root (the SQLite datastore, /var/lib/pykubeadm, /var/run/pykubeadm, /var/log/pykubeadm,
and /var/log/pods unless a real kubelet owns it).
Messages print node paths; nothing outside the node's root is touched (`cleanup.py`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import stop_kubelet, uses_systemd
from pykubeadm.phases.reset.cleanup import clean_dir, inside_root, is_dir_empty, remove_path
from pykubeadm.phases.reset.data import ResetData
from pykubeadm.phases.reset.processes import RESET_GRACE, node_processes, stop_processes
from pykubeadm.phases.reset.proxy_rules import remove_proxy_rules
from pykubeadm.phases.reset.remove_etcd_member import ETCD_DATA_DIR_KEY
from pykubeadm.workflow import Phase

__all__ = ["BUILTIN_STATE_DIRS", "KUBECONFIG_FILES", "PHASE", "builtin_state_paths", "go_list"]

log = logging.getLogger(__name__)

#: The kubeconfig files reset deletes, in kubeadm's order.
KUBECONFIG_FILES = (
    c.ADMIN_KUBECONFIG_FILE,
    c.SUPER_ADMIN_KUBECONFIG_FILE,
    c.KUBELET_KUBECONFIG_FILE,
    c.KUBELET_BOOTSTRAP_KUBECONFIG_FILE,
    c.CONTROLLER_MANAGER_KUBECONFIG_FILE,
    c.SCHEDULER_KUBECONFIG_FILE,
)
#: Directories of the built-in mode (node paths), removed whole.
BUILTIN_STATE_DIRS = (c.PYKUBEADM_LIB_DIR, c.PYKUBEADM_RUN_DIR, c.PYKUBEADM_LOG_DIR)
_UNMOUNT_FLAGS = {"MNT_FORCE": 1, "MNT_DETACH": 2, "MNT_EXPIRE": 4, "UMOUNT_NOFOLLOW": 8}


def go_list(items: list[str]) -> str:
    """A string slice as Go's %v prints it: `[a b c]`."""
    return "[" + " ".join(items) + "]"


def _node_path(layout: Layout, host: str) -> str:
    """A host path below the root as a node path ("/var/lib/kubelet")."""
    root = os.path.realpath(layout.root)
    if root == "/":
        return host
    rel = os.path.relpath(host, root)
    return "/" if rel == "." else "/" + rel


# --- kubelet, mounts, containers ------------------------------------------------------------------------------------


def _stop_kubelet(data: ResetData) -> None:
    if data.dry_run:
        data.out("[reset] Would stop the kubelet service")
        return
    data.out("[reset] Stopping the kubelet service")
    try:
        stop_kubelet(data.layout, timeout=RESET_GRACE)  # its Pods' grace periods are not reset's to wait out
    except (OSError, subprocess.SubprocessError) as err:
        log.warning("[reset] The kubelet service could not be stopped by kubeadm: [%s]", err)
        log.warning("[reset] Please ensure kubelet is stopped manually")


def _mounts_below(path: str) -> list[str]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        parts = line.split()
        if len(parts) > 1:
            point = parts[1].replace("\\040", " ")
            if point.startswith(path.rstrip("/") + "/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def _unmount_kubelet_dir(data: ResetData) -> str | None:
    """Unmount everything below /var/lib/kubelet; the directory (node path) to clean, or None (kubeadm then skips)."""
    node = c.KUBELET_RUN_DIR
    try:
        host = inside_root(data.layout, node)
        real = os.path.realpath(host)
        if not os.path.isdir(real):
            raise FileNotFoundError(f"lstat {node}: no such file or directory")
    except OSError as err:
        log.warning('[reset] Failed to evaluate the "%s" directory. Skipping its unmount and cleanup: %s', node, err)
        return None
    flags = 0
    for name in data.cfg.unmount_flags:
        flags |= _UNMOUNT_FLAGS.get(name, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    for point in _mounts_below(real):
        if libc.umount2(point.encode(), flags) != 0:
            errno = ctypes.get_errno()
            log.warning("[reset] Failed to unmount mounted directories in %s: %s: %s", node, point, os.strerror(errno))
            return None
    return _node_path(data.layout, real)


def _cri_remove_pods(cri_socket: str) -> None:
    """kubeadm's removeContainers: every Pod sandbox of the runtime stopped and removed through CRI."""
    from pykubeadm.cri.kubeadmruntime import ContainerRuntime

    runtime = ContainerRuntime(cri_socket)
    runtime.remove_containers(runtime.list_kube_containers())


def _node_cri_socket(layout: Layout) -> str:
    """The CRI endpoint kubeadm gave this node's kubelet (its instance config, else kubeadm-flags.env), or ""."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        doc = yaml.safe_load(layout.kubelet_instance_config.read_text()) or {}
        if doc.get("containerRuntimeEndpoint"):
            return str(doc["containerRuntimeEndpoint"])
    with contextlib.suppress(OSError):
        found = re.search(r"--container-runtime-endpoint=([^\s\"]+)", layout.kubelet_env_file.read_text())
        if found:
            return found.group(1)
    return ""


def _node_local_socket(layout: Layout, endpoint: str) -> bool:
    """A built-in node's CRI endpoint names a socket under its root that exists: a runtime of the node's own."""
    path = endpoint.removeprefix("unix://")
    return layout.owns(path) and os.path.exists(path)


def _remove_containers(data: ResetData) -> None:
    if data.dry_run:
        data.out("[reset] Would remove Kubernetes-managed containers")
        return
    log.info("[reset] Removing Kubernetes-managed containers")
    if os.path.realpath(data.layout.root) == "/":
        try:
            _cri_remove_pods(data.cfg.cri_socket or c.DEFAULT_CRI_SOCKET)
        except KubeadmError as err:
            log.warning("[reset] Failed to remove containers: %s", err)
        return
    socket = data.cfg.cri_socket or _node_cri_socket(data.layout)
    if socket and _node_local_socket(data.layout, socket):  # a runtime of this node's own (a lab node's containerd)
        try:
            _cri_remove_pods(socket)
        except KubeadmError as err:
            log.warning("[reset] Failed to remove containers: %s", err)
    stopped: list[int] = []
    for _ in range(3):  # look again: a sandbox orphaned while its shim was being stopped
        pids = [p for p in node_processes(data.layout.root) if p not in stopped]
        if not pids:
            break
        stopped += stop_processes(pids, grace=RESET_GRACE)
    if stopped:
        log.info("[reset] Stopped processes of this node: %s", stopped)
    from pykubeadm.kubelet.builtin.containment import node_cgroups

    cgroups = node_cgroups(data.layout)  # the built-in runtime's Pod cgroups, now empty
    if cgroups is not None:
        cgroups.remove_all()


# --- files ----------------------------------------------------------------------------------------------------------


def _delete_each(
    data: ResetData, what: str, paths: list[str], delete: Callable[[Layout, str], None], failed: str
) -> None:
    """One "[reset] Deleting <what>: [...]" step ("Would delete" in dry-run); a failure is logged with the `failed`
    format (path, error) and the next path is tried, as kubeadm does."""
    if data.dry_run:
        data.out(f"[reset] Would delete {what}: {go_list(paths)}")
        return
    data.out(f"[reset] Deleting {what}: {go_list(paths)}")
    for path in paths:
        try:
            delete(data.layout, path)
        except OSError as err:
            log.warning(failed, path, err)


def _clean_dirs(data: ResetData, dirs: list[str]) -> None:
    _delete_each(
        data, "contents of directories", dirs, clean_dir, '[reset] Failed to delete contents of "%s" directory: %s'
    )


def _delete_files(data: ResetData) -> None:
    files = [str(PurePosixPath(c.KUBERNETES_DIR) / f) for f in KUBECONFIG_FILES]
    _delete_each(data, "files", files, remove_path, '[reset] Failed to remove file: "%s" [%s]')


def _sqlite_files(layout: Layout) -> list[str]:
    """SQLite datastore files named by the kube-apiserver manifest's --etcd-servers (node paths, via hostPaths)."""
    from pykubeadm.kubelet.builtin.runtime import PathMapper

    path = layout.manifest(c.KUBE_APISERVER)
    try:
        pod = yaml.safe_load(path.read_text())
        spec = pod["spec"]
        container = spec["containers"][0]
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return []
    mapper = PathMapper.for_container(spec, container, Layout(Path("/")))
    out: list[str] = []
    for arg in [*(container.get("command") or []), *(container.get("args") or [])]:
        if not (isinstance(arg, str) and arg.startswith("--etcd-servers=")):
            continue
        for url in arg.split("=", 1)[1].split(","):
            if url.startswith("sqlite://"):
                db = url[len("sqlite://") :].split("?", 1)[0]
                node = mapper.map_path(db) or db
                out += [node, f"{node}-wal", f"{node}-shm", f"{node}-journal"]
    return out


def builtin_state_paths(layout: Layout) -> list[str]:
    """The built-in mode's files and dirs under the root (node paths): datastore, pid, log and Pod log dirs."""
    paths = _sqlite_files(layout) + list(BUILTIN_STATE_DIRS)
    if not uses_systemd(layout):
        paths.append(c.POD_LOG_DIR)
    return paths


def _delete_builtin_state(data: ResetData, paths: list[str]) -> None:
    present = [p for p in paths if os.path.lexists(data.layout.host(p))]
    if present:
        _delete_each(
            data, "the built-in control plane's state", present, remove_path, '[reset] Failed to remove "%s": %s'
        )


def _reclean_etcd(data: ResetData) -> None:
    """Empty the etcd data dir again if a restarted etcd wrote to it after remove-etcd-member."""
    data_dir = data.state.get(ETCD_DATA_DIR_KEY)
    if data.dry_run or not data_dir or is_dir_empty(data.layout, data_dir):
        return
    try:
        clean_dir(data.layout, data_dir)
    except OSError as err:
        log.warning('[reset] Failed to delete contents of the etcd directory: "%s", error: %s', data_dir, err)


def _run(data: ResetData) -> None:
    builtin = builtin_state_paths(data.layout)  # read before the manifests go
    dirs = [str(PurePosixPath(c.KUBERNETES_DIR) / c.MANIFESTS_SUBDIR)]
    _stop_kubelet(data)
    if data.dry_run:
        data.out(f'[reset] Would unmount mounted directories in "{c.KUBELET_RUN_DIR}"')
    else:
        data.out(f'[reset] Unmounting mounted directories in "{c.KUBELET_RUN_DIR}"')
        kubelet_dir = _unmount_kubelet_dir(data)
        if kubelet_dir is not None:
            dirs.append(kubelet_dir)
    _remove_containers(data)
    remove_proxy_rules(data)
    if data.cert_dir != c.DEFAULT_CERTIFICATES_DIR:
        log.warning('[reset] WARNING: Cleaning a non-default certificates directory: "%s"', data.cert_dir)
    dirs.append(data.cert_dir)
    if data.cleanup_tmp_dir:
        dirs.append(str(PurePosixPath(c.KUBERNETES_DIR) / c.TEMP_SUBDIR))
    _clean_dirs(data, dirs)
    _delete_files(data)
    _reclean_etcd(data)
    _delete_builtin_state(data, builtin)


PHASE: Phase[ResetData] = Phase(
    name="cleanup-node",
    short="Run cleanup node.",
    run=_run,
    inherit_flags=("cert-dir", "cri-socket", "cleanup-tmp-dir", "dry-run"),
)
