"""The local-path storage addon the lab installs, shaped like kind's: namespace `local-path-storage`, its RBAC, the
ConfigMap `local-path-config`, the Deployment `local-path-provisioner` and the default StorageClass `standard`
(`rancher.io/local-path`, WaitForFirstConsumer, reclaim Delete)."""

from __future__ import annotations

import json
from typing import Any, Final

from pykubeadm import constants as c
from pykubeadm.localpath.config import DEFAULT_NODE, DEFAULT_PATH, DEFAULT_SETUP, DEFAULT_TEARDOWN
from pykubeadm.localpath.provisioner import PROVISIONER_NAME

__all__ = ["DEFAULT_CLASS", "HELPER_IMAGE", "IMAGE", "NAMESPACE", "addon_objects"]

NAMESPACE: Final = "local-path-storage"
IMAGE: Final = "docker.io/rancher/local-path-provisioner:v0.0.31"
HELPER_IMAGE: Final = "docker.io/library/busybox:1.36"
DEFAULT_CLASS: Final = "standard"
_SA: Final = "local-path-provisioner-service-account"
_ROLE: Final = "local-path-provisioner-role"
_BIND: Final = "local-path-provisioner-bind"
_LABELS: Final = {"app": "local-path-provisioner"}

Obj = dict[str, Any]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _binding(kind: str, namespace: str | None) -> Obj:
    meta: Obj = {"name": _BIND}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": _ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": _SA, "namespace": NAMESPACE}],
    }


def _config_map() -> Obj:
    config = {"nodePathMap": [{"node": DEFAULT_NODE, "paths": [DEFAULT_PATH]}]}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "local-path-config", "namespace": NAMESPACE},
        "data": {"config.json": json.dumps(config, indent=2), "setup": DEFAULT_SETUP, "teardown": DEFAULT_TEARDOWN},
    }


def _deployment(image: str, helper_image: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "local-path-provisioner", "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(_LABELS)},
            "template": {
                "metadata": {"labels": dict(_LABELS)},
                "spec": {
                    "serviceAccountName": _SA,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": c.TAINT_CONTROL_PLANE_KEY, "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "containers": [
                        {
                            "name": "local-path-provisioner",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": [
                                "local-path-provisioner",
                                "--debug",
                                "start",
                                "--helper-image",
                                helper_image,
                                "--config",
                                "/etc/config/config.json",
                            ],
                            "env": [
                                {
                                    "name": "POD_NAMESPACE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                },
                            ],
                            "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/config/"}],
                        }
                    ],
                    "volumes": [{"name": "config-volume", "configMap": {"name": "local-path-config"}}],
                },
            },
        },
    }


def addon_objects(image: str = IMAGE, helper_image: str = HELPER_IMAGE) -> list[Obj]:
    """Every object of the addon, in the order they can be created."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": _SA, "namespace": NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": _ROLE, "namespace": NAMESPACE},
            "rules": [
                _rule([""], ["pods"], ["get", "list", "watch", "create", "patch", "update", "delete"]),
                _rule(["coordination.k8s.io"], ["leases"], ["get", "list", "watch", "create", "update", "patch"]),
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": _ROLE},
            "rules": [
                _rule(
                    [""],
                    ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
                    ["get", "list", "watch"],
                ),
                _rule([""], ["persistentvolumes"], ["get", "list", "watch", "create", "patch", "update", "delete"]),
                _rule([""], ["events"], ["create", "patch"]),
                _rule(["storage.k8s.io"], ["storageclasses"], ["get", "list", "watch"]),
            ],
        },
        _binding("Role", NAMESPACE),
        _binding("ClusterRole", None),
        _config_map(),
        _deployment(image, helper_image),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS, "annotations": {c.ANN_DEFAULT_STORAGE_CLASS: "true"}},
            "provisioner": PROVISIONER_NAME,
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        },
    ]
