"""The kubelet's files written by kubeadm on every node (init and join): kubeadm-flags.env, config.yaml,
instance-config.yaml."""

from pykubeadm.phases.kubelet.files import (
    KubeletFiles,
    kubelet_config_yaml,
    write_kubelet_config,
    write_kubelet_env_file,
    write_kubelet_files,
)
from pykubeadm.phases.kubelet.flags import build_kubelet_args, env_file_content, node_hostname

__all__ = [
    "KubeletFiles",
    "build_kubelet_args",
    "env_file_content",
    "kubelet_config_yaml",
    "node_hostname",
    "write_kubelet_config",
    "write_kubelet_env_file",
    "write_kubelet_files",
]
