"""Static Pod manifests of the control plane and local etcd: builders (tables + focused helpers), patching, writing."""

from pykubeadm.manifests.args import Arg, arguments_to_command, get_arg_value
from pykubeadm.manifests.config import inputs_from_config
from pykubeadm.manifests.controlplane import build_control_plane_pod
from pykubeadm.manifests.etcd import build_etcd_pod
from pykubeadm.manifests.inputs import ClusterInputs, ComponentExtras, ExternalEtcdInputs, LocalEtcdInputs
from pykubeadm.manifests.pod import EnvSpec, Mount
from pykubeadm.manifests.staticpod import (
    STATIC_PODS,
    create_local_etcd_file,
    create_static_pod_files,
    load_static_pod,
    marshal_pod,
    write_static_pod,
)

__all__ = [
    "STATIC_PODS",
    "Arg",
    "ClusterInputs",
    "ComponentExtras",
    "EnvSpec",
    "ExternalEtcdInputs",
    "LocalEtcdInputs",
    "Mount",
    "arguments_to_command",
    "build_control_plane_pod",
    "build_etcd_pod",
    "create_local_etcd_file",
    "create_static_pod_files",
    "get_arg_value",
    "inputs_from_config",
    "load_static_pod",
    "marshal_pod",
    "write_static_pod",
]
