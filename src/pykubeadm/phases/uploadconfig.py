"""What `upload-config` puts into the cluster: kubeadm-config and kubelet-config ConfigMaps and their Roles (§7.4, §7.5).

Pure builders; the phase applies them. The YAML text of the configuration comes from `pykubeadm.api`.
"""

from __future__ import annotations

import hashlib

from pykubeadm import constants as c
from pykubeadm.phases import objects as o
from pykubeadm.phases.objects import Obj

__all__ = ["component_config_hash", "kubeadm_config_objects", "kubelet_config_objects"]


def component_config_hash(data: dict[str, str]) -> str:
    """`sha256:<hex>` over a ConfigMap's data values in key order, as kubeadm annotates generated component configs."""
    h = hashlib.sha256()
    for key in sorted(data):
        h.update(data[key].encode())
    return "sha256:" + h.hexdigest()


def kubeadm_config_objects(cluster_configuration_yaml: str) -> list[Obj]:
    """kube-system/kubeadm-config with the ClusterConfiguration, readable by bootstrappers and nodes."""
    readers = [o.group(c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP), o.group(c.NODES_GROUP)]
    name = c.NODES_KUBEADM_CONFIG_CLUSTER_ROLE_NAME
    return [
        o.config_map(
            c.KUBEADM_CONFIG_CONFIGMAP,
            c.NAMESPACE_SYSTEM,
            {c.CLUSTER_CONFIGURATION_CONFIGMAP_KEY: cluster_configuration_yaml},
        ),
        o.role(
            name,
            c.NAMESPACE_SYSTEM,
            [o.policy_rule(["get"], ["configmaps"], resource_names=[c.KUBEADM_CONFIG_CONFIGMAP])],
        ),
        o.role_binding(name, c.NAMESPACE_SYSTEM, name, readers),
    ]


def kubelet_config_objects(kubelet_configuration_yaml: str, *, generated: bool = True) -> list[Obj]:
    """kube-system/kubelet-config (key `kubelet`), readable by nodes and bootstrappers; hash-annotated if generated."""
    data = {c.KUBELET_BASE_CONFIGMAP_KEY: kubelet_configuration_yaml}
    annotations = {c.ANNOTATION_COMPONENT_CONFIG_HASH: component_config_hash(data)} if generated else None
    name = c.KUBELET_CONFIG_ROLE_NAME
    return [
        o.config_map(c.KUBELET_BASE_CONFIGMAP, c.NAMESPACE_SYSTEM, data, annotations=annotations),
        o.role(
            name,
            c.NAMESPACE_SYSTEM,
            [o.policy_rule(["get"], ["configmaps"], resource_names=[c.KUBELET_BASE_CONFIGMAP])],
        ),
        o.role_binding(
            name, c.NAMESPACE_SYSTEM, name, [o.group(c.NODES_GROUP), o.group(c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP)]
        ),
    ]
