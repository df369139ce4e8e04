"""The default RBAC policy kube-apiserver reconciles at start (bootstrappolicy/policy.go, controller_policy.go,
namespace_policy.go), as data: `default_policy()` returns full API objects; `NODE_RULES` is also the Node authorizer's
static rule list. The aggregated roles (admin/edit/view) are created with the rules of their system:aggregate-to-*
parts, so an apiserver without a controller-manager grants them too; from then on the clusterrole-aggregation
controller owns their rules (the reconciler at start only puts their aggregationRule back, as kube's does).
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.authz.controller_policy import CONTROLLER_ROLES as _CONTROLLER_ROLES
from pykubeadm.apiserver.authz.policy_rules import EVENTS_RULES as _EVENTS
from pykubeadm.apiserver.authz.policy_rules import READ as _READ
from pykubeadm.apiserver.authz.policy_rules import WRITE as _WRITE
from pykubeadm.apiserver.authz.policy_rules import nr, r
from pykubeadm.util import jsoncodec

__all__ = ["NODE_RULES", "default_policy"]

_API = "rbac.authorization.k8s.io/v1"
_GROUP = "rbac.authorization.k8s.io"
_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

#: NodeRules(): the system:node ClusterRole and the Node authorizer's fallback rule list.
NODE_RULES: list[dict[str, Any]] = [
    r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews", "subjectaccessreviews"]),
    r(_READ, [""], ["services"]),
    r(["create", "get", "list", "watch"], [""], ["nodes"]),
    r(["patch", "update"], [""], ["nodes/status"]),
    r(["patch", "update"], [""], ["nodes"]),
    r(["create", "patch", "update"], ["", "events.k8s.io"], ["events"]),
    r(_READ, [""], ["pods"]),
    r(["create", "delete"], [""], ["pods"]),
    r(["patch", "update"], [""], ["pods/status"]),
    r(["create"], [""], ["pods/eviction"]),
    r(_READ, [""], ["configmaps", "secrets"]),
    r(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
    r(["get"], [""], ["endpoints"]),
    r(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"]),
    r(["delete", "get", "create", "update", "patch"], ["coordination.k8s.io"], ["leases"]),
    r(["get"], ["storage.k8s.io"], ["volumeattachments"]),
    r(["create"], [""], ["serviceaccounts/token"]),
    r(["get", "update", "patch"], [""], ["persistentvolumeclaims/status"]),
    r(["get", "watch", "list"], ["storage.k8s.io"], ["csidrivers"]),
    r(["get", "create", "update", "patch", "delete"], ["storage.k8s.io"], ["csinodes"]),
    r(_READ, ["node.k8s.io"], ["runtimeclasses"]),
    r(["get"], ["resource.k8s.io"], ["resourceclaims"]),
]

_VIEW_RULES = [
    r(
        _READ,
        [""],
        [
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "configmaps",
        ],
    ),
    r(
        _READ,
        [""],
        [
            "limitranges",
            "resourcequotas",
            "bindings",
            "events",
            "pods/status",
            "resourcequotas/status",
            "namespaces/status",
            "replicationcontrollers/status",
            "pods/log",
        ],
    ),
    r(_READ, [""], ["namespaces"]),
    r(_READ, ["discovery.k8s.io"], ["endpointslices"]),
    r(
        _READ,
        ["apps"],
        [
            "controllerrevisions",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
        ],
    ),
    r(_READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    r(_READ, ["batch"], ["jobs", "jobs/status", "cronjobs", "cronjobs/status"]),
    r(_READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    r(_READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
    r(_READ, ["coordination.k8s.io"], ["leases"]),
]
_EDIT_RULES = [
    r(
        ["create", "delete", "deletecollection", "patch", "update"],
        [""],
        ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"],
    ),
    r(["create"], [""], ["pods/eviction"]),
    r(
        _WRITE,
        [""],
        [
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/proxy",
            "persistentvolumeclaims",
            "configmaps",
            "secrets",
            "events",
        ],
    ),
    r(["create"], [""], ["serviceaccounts/token"]),
    r(["impersonate"], [""], ["serviceaccounts"]),
    r([*_READ], [""], ["secrets", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "services/proxy"]),
    r(
        _WRITE,
        ["apps"],
        [
            "statefulsets",
            "statefulsets/scale",
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "replicasets",
            "replicasets/scale",
        ],
    ),
    r(_WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    r(_WRITE, ["batch"], ["jobs", "cronjobs"]),
    r(_WRITE, ["policy"], ["poddisruptionbudgets"]),
    r(_WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    r(_WRITE, ["coordination.k8s.io"], ["leases"]),
    r(_WRITE, ["discovery.k8s.io"], ["endpointslices"]),
]
_ADMIN_RULES = [
    r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    r([*_READ, *_WRITE], [_GROUP], ["rolebindings", "roles"]),
]

_CLUSTER_ROLES: dict[str, list[dict[str, Any]]] = {
    "cluster-admin": [r(["*"], ["*"], ["*"]), nr(["*"], ["*"])],
    "system:discovery": [
        nr(
            ["get"],
            [
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
        )
    ],
    "system:monitoring": [
        nr(
            ["get"],
            ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
        )
    ],
    "system:basic-user": [
        r(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
        r(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
    ],
    "system:public-info-viewer": [nr(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])],
    "admin": _VIEW_RULES + _EDIT_RULES + _ADMIN_RULES,
    "edit": _VIEW_RULES + _EDIT_RULES,
    "view": _VIEW_RULES,
    "system:aggregate-to-admin": _ADMIN_RULES,
    "system:aggregate-to-edit": _EDIT_RULES,
    "system:aggregate-to-view": _VIEW_RULES,
    "system:heapster": [
        r(_READ, [""], ["events", "pods", "nodes", "namespaces"]),
        r(_READ, ["extensions", "apps"], ["deployments"]),
    ],
    "system:node": NODE_RULES,
    "system:node-problem-detector": [r(["get"], [""], ["nodes"]), r(["patch"], [""], ["nodes/status"]), *_EVENTS],
    "system:kubelet-api-admin": [
        r(["get", "list", "watch", "proxy"], [""], ["nodes"]),
        r(["*"], [""], ["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"]),
    ],
    "system:node-bootstrapper": [
        r(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"])
    ],
    "system:auth-delegator": [
        r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    ],
    "system:kube-aggregator": [r(_READ, [""], ["endpoints", "services"])],
    "system:kube-controller-manager": [
        *_EVENTS,
        r(["create"], ["coordination.k8s.io"], ["leases"]),
        r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
        r(["create"], [""], ["endpoints"]),
        r(["get", "update"], [""], ["endpoints"], ["kube-controller-manager"]),
        r(["create"], [""], ["secrets", "serviceaccounts"]),
        r(["delete"], [""], ["secrets"]),
        r(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
        r(["update"], [""], ["secrets", "serviceaccounts"]),
        r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        r(["list", "watch"], ["*"], ["*"]),
        r(["create"], [""], ["serviceaccounts/token"]),
    ],
    "system:kube-dns": [r(["list", "watch"], [""], ["endpoints", "services"])],
    "system:persistent-volume-provisioner": [
        r(["create", "delete", "get", "list", "watch"], [""], ["persistentvolumes"]),
        r(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        r(_READ, ["storage.k8s.io"], ["storageclasses"]),
        r(["watch"], [""], ["events"]),
        *_EVENTS,
    ],
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient": [
        r(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/nodeclient"])
    ],
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient": [
        r(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/selfnodeclient"])
    ],
    "system:volume-scheduler": [
        r(["get", "list", "watch", "update", "patch"], [""], ["persistentvolumes"]),
        r(_READ, ["storage.k8s.io"], ["storageclasses"]),
        r(["get", "list", "watch", "update", "patch"], [""], ["persistentvolumeclaims"]),
    ],
    "system:certificates.k8s.io:legacy-unknown-approver": [
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/legacy-unknown"])
    ],
    "system:certificates.k8s.io:kubelet-serving-approver": [
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kubelet-serving"])
    ],
    "system:certificates.k8s.io:kube-apiserver-client-approver": [
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kube-apiserver-client"])
    ],
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver": [
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kube-apiserver-client-kubelet"])
    ],
    "system:service-account-issuer-discovery": [
        nr(
            ["get"],
            [
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ],
        )
    ],
    "system:node-proxier": [
        r(["list", "watch"], [""], ["services", "endpoints"]),
        r(_READ, [""], ["nodes"]),
        *_EVENTS,
        r(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
    ],
    "system:kube-scheduler": [
        *_EVENTS,
        r(["create"], ["coordination.k8s.io"], ["leases"]),
        r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
        r(["create"], [""], ["endpoints"]),
        r(["get", "update"], [""], ["endpoints"], ["kube-scheduler"]),
        r(_READ, [""], ["nodes"]),
        r(["get", "list", "watch", "delete"], [""], ["pods"]),
        r(["create"], [""], ["bindings", "pods/binding"]),
        r(["patch", "update"], [""], ["pods/status"]),
        r(_READ, [""], ["replicationcontrollers", "services"]),
        r(_READ, ["apps", "extensions"], ["replicasets"]),
        r(_READ, ["apps"], ["statefulsets"]),
        r(_READ, ["policy"], ["poddisruptionbudgets"]),
        r(_READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
        r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        r(_READ, ["storage.k8s.io"], ["csinodes", "csidrivers", "csistoragecapacities"]),
        r(_READ, [""], ["namespaces"]),
    ],
}


def _user(name: str) -> dict[str, Any]:
    return {"kind": "User", "apiGroup": _GROUP, "name": name}


def _group(name: str) -> dict[str, Any]:
    return {"kind": "Group", "apiGroup": _GROUP, "name": name}


def _sa(namespace: str, name: str) -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


_BINDINGS: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("cluster-admin", "cluster-admin", [_group("system:masters")]),
    ("system:monitoring", "system:monitoring", [_group("system:monitoring")]),
    ("system:discovery", "system:discovery", [_group("system:authenticated")]),
    ("system:basic-user", "system:basic-user", [_group("system:authenticated")]),
    (
        "system:public-info-viewer",
        "system:public-info-viewer",
        [_group("system:authenticated"), _group("system:unauthenticated")],
    ),
    ("system:node-proxier", "system:node-proxier", [_user("system:kube-proxy")]),
    ("system:kube-controller-manager", "system:kube-controller-manager", [_user("system:kube-controller-manager")]),
    ("system:kube-dns", "system:kube-dns", [_sa("kube-system", "kube-dns")]),
    ("system:kube-scheduler", "system:kube-scheduler", [_user("system:kube-scheduler")]),
    ("system:volume-scheduler", "system:volume-scheduler", [_user("system:kube-scheduler")]),
    ("system:node", "system:node", []),
    (
        "system:service-account-issuer-discovery",
        "system:service-account-issuer-discovery",
        [_group("system:serviceaccounts")],
    ),
]

# Namespaced Roles: (namespace, name, rules) and RoleBindings: (namespace, name, role, subjects).
_ROLES: list[tuple[str, str, list[dict[str, Any]]]] = [
    (
        "kube-system",
        "extension-apiserver-authentication-reader",
        [r(_READ, [""], ["configmaps"], ["extension-apiserver-authentication"])],
    ),
    (
        "kube-system",
        "system::leader-locking-kube-controller-manager",
        [r(["watch"], [""], ["configmaps"]), r(["get", "update"], [""], ["configmaps"], ["kube-controller-manager"])],
    ),
    (
        "kube-system",
        "system::leader-locking-kube-scheduler",
        [r(["watch"], [""], ["configmaps"]), r(["get", "update"], [""], ["configmaps"], ["kube-scheduler"])],
    ),
    ("kube-system", "system:controller:bootstrap-signer", [r(_READ, [""], ["secrets"])]),
    ("kube-system", "system:controller:cloud-provider", [r(["create", "get", "list", "watch"], [""], ["configmaps"])]),
    (
        "kube-system",
        "system:controller:token-cleaner",
        [r(["delete", "get", "list", "watch"], [""], ["secrets"]), *_EVENTS],
    ),
    (
        "kube-public",
        "system:controller:bootstrap-signer",
        [r(_READ, [""], ["configmaps"]), r(["update"], [""], ["configmaps"], ["cluster-info"]), *_EVENTS],
    ),
]
_ROLE_BINDINGS: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    (
        "kube-system",
        "system::extension-apiserver-authentication-reader",
        "extension-apiserver-authentication-reader",
        [_user("system:kube-controller-manager"), _user("system:kube-scheduler")],
    ),
    (
        "kube-system",
        "system::leader-locking-kube-controller-manager",
        "system::leader-locking-kube-controller-manager",
        [_user("system:kube-controller-manager"), _sa("kube-system", "kube-controller-manager")],
    ),
    (
        "kube-system",
        "system::leader-locking-kube-scheduler",
        "system::leader-locking-kube-scheduler",
        [_user("system:kube-scheduler"), _sa("kube-system", "kube-scheduler")],
    ),
    (
        "kube-system",
        "system:controller:bootstrap-signer",
        "system:controller:bootstrap-signer",
        [_sa("kube-system", "bootstrap-signer")],
    ),
    (
        "kube-system",
        "system:controller:cloud-provider",
        "system:controller:cloud-provider",
        [_sa("kube-system", "cloud-provider")],
    ),
    (
        "kube-system",
        "system:controller:token-cleaner",
        "system:controller:token-cleaner",
        [_sa("kube-system", "token-cleaner")],
    ),
    (
        "kube-public",
        "system:controller:bootstrap-signer",
        "system:controller:bootstrap-signer",
        [_sa("kube-system", "bootstrap-signer")],
    ),
]


def _meta(name: str, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS), "annotations": dict(_ANNOTATIONS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _role_ref(kind: str, name: str) -> dict[str, Any]:
    return {"apiGroup": _GROUP, "kind": kind, "name": name}


def default_policy() -> list[dict[str, Any]]:
    """ClusterRoles, ClusterRoleBindings, Roles and RoleBindings (fresh copies) in that order."""
    out: list[dict[str, Any]] = []
    roles = dict(_CLUSTER_ROLES)
    roles.update({f"system:controller:{n}": rules for n, rules in _CONTROLLER_ROLES.items()})
    for name, rules in roles.items():
        obj: dict[str, Any] = {"apiVersion": _API, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}
        if name in ("admin", "edit", "view"):
            obj["aggregationRule"] = {
                "clusterRoleSelectors": [{"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{name}": "true"}}]
            }
            parent = {"view": "edit", "edit": "admin"}.get(name)
            if parent:
                obj["metadata"]["labels"][f"rbac.authorization.k8s.io/aggregate-to-{parent}"] = "true"
        elif name.startswith("system:aggregate-to-"):
            target = name.removeprefix("system:aggregate-to-")
            obj["metadata"]["labels"][f"rbac.authorization.k8s.io/aggregate-to-{target}"] = "true"
        out.append(obj)
    bindings = list(_BINDINGS) + [
        (f"system:controller:{n}", f"system:controller:{n}", [_sa("kube-system", n)]) for n in _CONTROLLER_ROLES
    ]
    for name, role, subjects in bindings:
        obj = {
            "apiVersion": _API,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name),
            "roleRef": _role_ref("ClusterRole", role),
        }
        if subjects:
            obj["subjects"] = subjects
        out.append(obj)
    for ns, name, rules in _ROLES:
        out.append({"apiVersion": _API, "kind": "Role", "metadata": _meta(name, ns), "rules": rules})
    for ns, name, role, subjects in _ROLE_BINDINGS:
        out.append(
            {
                "apiVersion": _API,
                "kind": "RoleBinding",
                "metadata": _meta(name, ns),
                "roleRef": _role_ref("Role", role),
                "subjects": subjects,
            }
        )
    return jsoncodec.loads(jsoncodec.dumps(out))  # fresh copies, a few times faster than copy.deepcopy
