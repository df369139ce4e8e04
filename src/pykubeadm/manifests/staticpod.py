"""Create static Pod manifest files: build → patch (`--patches`) → marshal as kubeadm does → write 0600 in a 0700 dir.

`STATIC_PODS` is the table of the control-plane components (name, phase name, help text); the init and join phases and
`upgrade` use `create_static_pod_files` / `create_local_etcd_file`, which report what they write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.api.yamlio import dump_yaml
from pykubeadm.manifests.controlplane import build_control_plane_pod
from pykubeadm.manifests.etcd import build_etcd_pod
from pykubeadm.manifests.inputs import ClusterInputs
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.patches import PatchManager
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "STATIC_PODS",
    "StaticPodSpec",
    "create_local_etcd_file",
    "create_static_pod_files",
    "load_static_pod",
    "marshal_pod",
    "write_static_pod",
]

Reporter = Callable[[str], None]


@dataclass(frozen=True)
class StaticPodSpec:
    """One control-plane static Pod: component name, its sub-phase name and help text."""

    component: str
    phase: str
    short: str


STATIC_PODS: tuple[StaticPodSpec, ...] = (
    StaticPodSpec(c.KUBE_APISERVER, "apiserver", "Generates the kube-apiserver static Pod manifest"),
    StaticPodSpec(
        c.KUBE_CONTROLLER_MANAGER, "controller-manager", "Generates the kube-controller-manager static Pod manifest"
    ),
    StaticPodSpec(c.KUBE_SCHEDULER, "scheduler", "Generates the kube-scheduler static Pod manifest"),
)


def marshal_pod(pod: dict[str, Any]) -> str:
    """The manifest text: JSON-shaped dict → YAML with sorted keys, go-yaml style (kubeadm's MarshalToYaml)."""
    return dump_yaml(pod)


def write_static_pod(manifests_dir: Path, component: str, pod: dict[str, Any]) -> Path:
    """Write `<manifests_dir>/<component>.yaml` (mode 0600; the directory is created 0700)."""
    path = manifests_dir / f"{component}.yaml"
    write_file_atomic(path, marshal_pod(pod), c.PRIVATE_FILE_MODE, dir_mode=c.PRIVATE_DIR_MODE)
    return path


def load_static_pod(path: Path) -> dict[str, Any]:
    """Read a static Pod manifest back (for upgrade comparisons, the kubelet and tests)."""
    with path.open() as f:
        pod = load_yaml(f)
    if not isinstance(pod, dict):
        raise ValueError(f"{path}: not a Pod manifest")
    return pod


def _patched(pod: dict[str, Any], component: str, patches: PatchManager | None) -> dict[str, Any]:
    return patches.apply(component, pod) if patches is not None else pod


def create_static_pod_files(
    manifests_dir: Path,
    inputs: ClusterInputs,
    components: Iterable[str],
    patches: PatchManager | None = None,
    out: Reporter = print,
) -> list[Path]:
    """Build, patch and write the manifests of `components`, printing `Creating static Pod manifest for "<name>"`."""
    written = []
    for component in components:
        out(f'[control-plane] Creating static Pod manifest for "{component}"')
        pod = _patched(build_control_plane_pod(component, inputs), component, patches)
        written.append(write_static_pod(manifests_dir, component, pod))
    return written


def create_local_etcd_file(
    manifests_dir: Path,
    inputs: ClusterInputs,
    patches: PatchManager | None = None,
    initial_cluster: Sequence[tuple[str, str]] = (),
) -> Path:
    """Build, patch and write etcd.yaml for local etcd (`initial_cluster` non-empty for a joining member)."""
    pod = _patched(build_etcd_pod(inputs, initial_cluster), c.ETCD, patches)
    return write_static_pod(manifests_dir, c.ETCD, pod)
