"""Small constructors of the API objects kubeadm creates (RBAC, ConfigMaps, Secrets, ServiceAccounts), as JSON dicts.

The cluster phases build their objects with these and hand them to `apply.py`; keeping them plain dicts makes the
builders testable without a server and keeps the wire shape obvious.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "Obj",
    "cluster_role",
    "cluster_role_binding",
    "config_map",
    "group",
    "policy_rule",
    "role",
    "role_binding",
    "secret",
    "service_account",
    "service_account_subject",
    "user",
]

Obj = dict[str, Any]
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_V1 = f"{RBAC_GROUP}/v1"


def _meta(name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def policy_rule(
    verbs: Iterable[str],
    resources: Iterable[str] = (),
    api_groups: Iterable[str] = ("",),
    resource_names: Iterable[str] = (),
) -> Obj:
    rule: Obj = {"verbs": list(verbs), "apiGroups": list(api_groups), "resources": list(resources)}
    if resource_names:
        rule["resourceNames"] = list(resource_names)
    return rule


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": RBAC_GROUP, "name": name}


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": RBAC_GROUP, "name": name}


def service_account_subject(name: str, namespace: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": RBAC_V1, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}


def role(name: str, namespace: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": RBAC_V1, "kind": "Role", "metadata": _meta(name, namespace), "rules": rules}


def cluster_role_binding(name: str, cluster_role_name: str, subjects: list[Obj]) -> Obj:
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": cluster_role_name},
        "subjects": subjects,
    }


def role_binding(name: str, namespace: str, role_name: str, subjects: list[Obj]) -> Obj:
    return {
        "apiVersion": RBAC_V1,
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name},
        "subjects": subjects,
    }


def config_map(
    name: str,
    namespace: str,
    data: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    meta = _meta(name, namespace, labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def secret(name: str, namespace: str, data: Mapping[str, bytes], type_: str = "Opaque") -> Obj:
    """A Secret with `data` base64-encoded as the API stores it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace),
        "type": type_,
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def service_account(name: str, namespace: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)}
