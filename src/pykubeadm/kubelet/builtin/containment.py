"""What confines one API Pod's containers in the built-in runtime: its own root layer, securityContext, cgroups.

The pod worker holds one `PodContainment` per Pod. `setup()` makes the Pod's cgroup (`cgroups`); for each container
start `launch(container_id, spec, image_uid)` checks the securityContext as the kubelet does (`confinement`),
makes the container's cgroup and returns the `Launch` options for `sandbox.sandboxed_argv` (the writable layer under
`<pod dir>/containers/<name>/rootfs`, kept across restarts and removed with the Pod; or a read-only root) and for
`sandbox.enter_argv` (exec and probes run confined as the container). Where containers cannot be isolated (not root,
namespaces refused) or the cgroups cannot be written, a container asking for confinement is refused with a
`ContainmentError` naming the fields: nothing runs pretending to be confined. After an exit, `exited()` says whether
the kernel's OOM killer ended it and removes the instance's cgroup; `teardown()` removes the Pod's cgroup.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubeadm.kubelet.builtin import cgroups, confinement
from pykubeadm.kubelet.podstatus import qos_class
from pykubeadm.kubelet.securitycontext import SecurityContextError
from pykubeadm.layout import Layout

__all__ = ["ContainmentError", "Launch", "PodContainment", "node_cgroups"]

log = logging.getLogger(__name__)

_node_cgroups: dict[Path, cgroups.NodeCgroups | None] = {}
_node_lock = threading.Lock()


class ContainmentError(Exception):
    """The container cannot be confined as it asks (CreateContainerConfigError)."""


def node_cgroups(layout: Layout) -> cgroups.NodeCgroups | None:
    """The node's cgroups (one lookup per node root): `kubepods` directly below the kubelet's cgroup for the node
    root "/", else below a directory named after the node root, so the nodes of a lab never share one."""
    with _node_lock:
        if layout.root not in _node_cgroups:
            name = (
                ""
                if str(layout.root) == "/"
                else f"pykubeadm-{hashlib.sha256(str(layout.root).encode()).hexdigest()[:12]}"
            )
            found = cgroups.NodeCgroups.detect(name)
            if found is None:
                log.warning("no writable cgroup hierarchy: Pods with CPU or memory limits will be refused")
            _node_cgroups[layout.root] = found
        return _node_cgroups[layout.root]


@dataclass
class Launch:
    """How one container instance is started and entered."""

    confine: list[str] = field(default_factory=list)  # launcher options: identity, capabilities, NNP, seccomp
    cgroups: list[str] = field(default_factory=list)  # cgroup.procs files to join
    root_layer: Path | None = None
    read_only_root: bool = False
    unconfined: bool = False  # privileged with nothing more: the lab's zygote may fork it (into its cgroups)


class PodContainment:
    """One Pod's containment: isolated (own namespaces and root) or refused where confinement is asked for."""

    def __init__(self, pod: Mapping[str, Any], pod_dir: Path, layout: Layout, *, isolated: bool) -> None:
        self.pod = pod
        self.pod_dir = pod_dir
        self.layout = layout
        self.isolated = isolated
        spec = pod.get("spec") or {}
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        node = node_cgroups(layout) if isolated else None
        self.cgroup = node.pod(uid, qos_class(spec)) if node is not None else None

    def setup(self) -> None:
        """Make the Pod's cgroup (blocking: writes cgroup files)."""
        if self.cgroup is None:
            return
        try:
            with _node_lock:  # not while another Pod's teardown prunes the QoS cgroups
                self.cgroup.create(self.pod.get("spec") or {})
        except OSError as e:
            log.warning("pod cgroup cannot be made, limits will be refused: %s", e)
            self.cgroup = None

    def launch(self, container_id: str, spec: Mapping[str, Any], image_uid: int, seccomp: bool) -> Launch:
        """The options for a new instance of the container `spec`; ContainmentError when it cannot be confined."""
        if not self.isolated:
            fields = confinement.unconfinable_fields(self.pod, spec)
            if fields:
                raise ContainmentError(
                    f"{', '.join(fields)}: cannot be honoured: containers on this node cannot be isolated "
                    "(the kubelet is not root or mount/PID namespaces are refused)"
                )
            return Launch()
        try:
            conf = confinement.confinement(self.pod, spec, image_uid=image_uid, seccomp_available=seccomp)
        except SecurityContextError as e:
            raise ContainmentError(str(e)) from e
        limits = (spec.get("resources") or {}).get("limits") or {}
        out = Launch(
            confine=conf.launcher_args(),
            read_only_root=conf.read_only_root,
            root_layer=None if conf.read_only_root else self.pod_dir / "containers" / str(spec.get("name")) / "rootfs",
            unconfined=conf.unconfined,
        )
        if out.root_layer is not None:
            out.root_layer.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.cgroup is None:
            asked = [f"containers[{spec.get('name')}].resources.limits.{r}" for r in ("cpu", "memory") if r in limits]
            if asked:
                raise ContainmentError(f"{', '.join(asked)}: cannot be honoured: no writable cgroup hierarchy here")
            return out
        try:
            cg = self.cgroup.create_container(container_id, spec, privileged=conf.privileged)
        except OSError as e:
            raise ContainmentError(f"the container's cgroup cannot be made: {e}") from e
        out.cgroups = cg.procs_files()
        return out

    def exited(self, container_id: str) -> bool:
        """Whether the instance was OOM-killed; its cgroup is removed (blocking)."""
        if self.cgroup is None or not container_id:
            return False
        cg = self.cgroup.container(container_id)
        oom = cg.oom_killed()
        cg.remove()
        return oom

    def usage(self, container_id: str) -> tuple[float, int] | None:
        """The instance's (CPU seconds, working-set bytes) from its cgroup, or None."""
        if self.cgroup is None or not container_id:
            return None
        return self.cgroup.container(container_id).usage()

    def teardown(self) -> None:
        """Remove the Pod's cgroup, and the node's QoS cgroups when it was the last Pod (blocking)."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.remove()
            with _node_lock:
                self.cgroup.node.prune()
