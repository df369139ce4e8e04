"""Write the kubelet's files on a node (init and join `kubelet-start`): kubeadm-flags.env, instance-config.yaml (with the
NodeLocalCRISocket gate) and config.yaml (the KubeletConfiguration, with `kubeletconfiguration` patches).

Both files are 0644 in /var/lib/kubelet (created 0700). `write_kubelet_files` is what the init and join phases call
before (re)starting a kubelet; it never starts or stops anything.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.api.yamlio import dump_yaml
from pykubeadm.layout import Layout
from pykubeadm.manifests.args import ArgLike
from pykubeadm.phases.kubelet.flags import build_kubelet_args, env_file_content, node_hostname
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.patches import PatchManager

__all__ = [
    "KubeletFiles",
    "instance_config",
    "kubelet_config_yaml",
    "write_kubelet_config",
    "write_kubelet_env_file",
    "write_kubelet_files",
    "write_kubelet_instance_config",
]

Reporter = Callable[[str], None]
#: The kubeadm feature gate that moves the CRI socket from the flags file to instance-config.yaml (alpha in 1.33).
NODE_LOCAL_CRI_SOCKET = "NodeLocalCRISocket"


@dataclass(frozen=True)
class KubeletFiles:
    """Paths written on this machine."""

    env_file: Path
    config: Path
    instance_config: Path | None = None


def _shown(layout: Layout, node_path: str, shown_root: bool) -> str:
    return str(layout.host(node_path)) if shown_root else node_path


def write_kubelet_env_file(
    layout: Layout, args: Sequence[str], out: Reporter = print, shown_root: bool = False
) -> Path:
    path = layout.kubelet_env_file
    node_path = f"{c.KUBELET_RUN_DIR}/{c.KUBELET_ENV_FILE}"
    out(
        f'[kubelet-start] Writing kubelet environment file with flags to file "{_shown(layout, node_path, shown_root)}"'
    )
    write_file_atomic(path, env_file_content(args, c.KUBELET_ENV_VARIABLE), c.PUBLIC_FILE_MODE, c.PRIVATE_DIR_MODE)
    return path


def instance_config(cri_socket: str) -> dict[str, Any]:
    """The node-local KubeletConfiguration (NodeLocalCRISocket): only the CRI endpoint."""
    return {
        "apiVersion": c.KUBELET_CONFIG_API_VERSION,
        "kind": "KubeletConfiguration",
        "containerRuntimeEndpoint": cri_socket,
    }


def write_kubelet_instance_config(
    layout: Layout, cfg: Mapping[str, Any], out: Reporter = print, shown_root: bool = False
) -> Path:
    node_path = f"{c.KUBELET_RUN_DIR}/{c.KUBELET_INSTANCE_CONFIG_FILE}"
    out(f'[kubelet-start] Writing kubelet configuration to file "{_shown(layout, node_path, shown_root)}"')
    path = layout.kubelet_instance_config
    write_file_atomic(path, dump_yaml(dict(cfg)), c.PUBLIC_FILE_MODE, c.PRIVATE_DIR_MODE)
    return path


def kubelet_config_yaml(
    kubelet_config: Mapping[str, Any],
    patches: PatchManager | None = None,
    instance: Mapping[str, Any] | None = None,
    out: Reporter = print,
) -> str:
    """config.yaml's text: the KubeletConfiguration, patched (user patches, then the instance config as kubeadm's
    own strategic patch), as sorted YAML."""
    data: Any = copy.deepcopy(dict(kubelet_config))
    if patches is not None:
        data = patches.apply("kubeletconfiguration", data)
    if instance is not None:
        data = PatchManager([], out).apply_one("kubeletconfiguration", data, dict(instance))
    return dump_yaml(data)


def write_kubelet_config(layout: Layout, text: str, out: Reporter = print, shown_root: bool = False) -> Path:
    node_path = f"{c.KUBELET_RUN_DIR}/{c.KUBELET_CONFIG_FILE}"
    out(f'[kubelet-start] Writing kubelet configuration to file "{_shown(layout, node_path, shown_root)}"')
    path = layout.kubelet_config
    write_file_atomic(path, text, c.PUBLIC_FILE_MODE, c.PRIVATE_DIR_MODE)
    return path


def write_kubelet_files(
    layout: Layout,
    *,
    kubelet_config: Mapping[str, Any],
    cri_socket: str,
    pause_image: str,
    node_name: str,
    kubelet_extra_args: Sequence[ArgLike] = (),
    taints: Iterable[Any] | None = None,
    register_taints: bool = False,
    feature_gates: Mapping[str, bool] | None = None,
    patches: PatchManager | None = None,
    hostname: str | None = None,
    out: Reporter = print,
    shown_root: bool = False,
) -> KubeletFiles:
    """kubeadm-flags.env, then (NodeLocalCRISocket) instance-config.yaml, then config.yaml — kubeadm's order.

    `register_taints` is true only for worker joins (control-plane taints are set by mark-control-plane)."""
    local_cri = bool((feature_gates or {}).get(NODE_LOCAL_CRI_SOCKET, False))
    args = build_kubelet_args(
        cri_socket=cri_socket,
        pause_image=pause_image,
        node_name=node_name,
        hostname=node_hostname() if hostname is None else hostname,
        kubelet_extra_args=kubelet_extra_args,
        taints=taints,
        register_taints=register_taints,
        node_local_cri_socket=local_cri,
    )
    env = write_kubelet_env_file(layout, args, out, shown_root)
    instance = None
    instance_path = None
    if local_cri:
        instance = instance_config(cri_socket)
        instance_path = write_kubelet_instance_config(layout, instance, out, shown_root)
    text = kubelet_config_yaml(kubelet_config, patches, instance, out)
    cfg = write_kubelet_config(layout, text, out, shown_root)
    return KubeletFiles(env, cfg, instance_path)
