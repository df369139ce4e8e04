"""The system:controller:* ClusterRoles of kube-controller-manager's controllers (controller_policy.go), as data.

Used by `bootstrap_policy.default_policy()`, which adds a `system:controller:<name>` ClusterRole and a binding to
ServiceAccount kube-system/<name> for each entry.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.authz.policy_rules import EVENTS_RULES as _EVENTS
from pykubeadm.apiserver.authz.policy_rules import READ as _READ
from pykubeadm.apiserver.authz.policy_rules import r

__all__ = ["CONTROLLER_ROLES"]

_GROUP = "rbac.authorization.k8s.io"
_CSR = "certificatesigningrequests"
CONTROLLER_ROLES: dict[str, list[dict[str, Any]]] = {
    "attachdetach-controller": [
        r(["list", "watch"], [""], ["persistentvolumes", "persistentvolumeclaims"]),
        r(["get", "list", "watch"], [""], ["nodes"]),
        r(["patch", "update"], [""], ["nodes/status"]),
        r(["list", "watch"], [""], ["pods"]),
        *_EVENTS,
        r(["get", "create", "delete", "list", "watch"], ["storage.k8s.io"], ["volumeattachments"]),
        r(_READ, ["storage.k8s.io"], ["csidrivers", "csinodes"]),
    ],
    "certificate-controller": [
        r(["get", "list", "watch", "delete"], ["certificates.k8s.io"], [_CSR]),
        r(["update"], ["certificates.k8s.io"], [f"{_CSR}/status", f"{_CSR}/approval"]),
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kube-apiserver-client-kubelet"]),
        r(
            ["sign"],
            ["certificates.k8s.io"],
            ["signers"],
            [
                "kubernetes.io/legacy-unknown",
                "kubernetes.io/kube-apiserver-client",
                "kubernetes.io/kube-apiserver-client-kubelet",
                "kubernetes.io/kubelet-serving",
            ],
        ),
        r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        *_EVENTS,
    ],
    # not in kube: kube-controller-manager's opt-in csrservingapproving controller (kubelet serving CSRs)
    "kubelet-serving-csr-approver": [
        r(["get", "list", "watch"], ["certificates.k8s.io"], [_CSR]),
        r(["update"], ["certificates.k8s.io"], [f"{_CSR}/approval"]),
        r(["approve"], ["certificates.k8s.io"], ["signers"], ["kubernetes.io/kubelet-serving"]),
        r(["get", "list", "watch"], [""], ["nodes"]),
        *_EVENTS,
    ],
    "clusterrole-aggregation-controller": [
        r(["escalate", "get", "list", "watch", "update", "patch"], [_GROUP], ["clusterroles"])
    ],
    "cronjob-controller": [
        r(["get", "list", "watch", "update"], ["batch"], ["cronjobs"]),
        r(["get", "list", "watch", "create", "update", "delete", "patch"], ["batch"], ["jobs"]),
        r(["update"], ["batch"], ["cronjobs/status"]),
        r(["update"], ["batch"], ["cronjobs/finalizers"]),
        r(["list", "delete"], [""], ["pods"]),
        *_EVENTS,
    ],
    "daemon-set-controller": [
        r(_READ, ["apps", "extensions"], ["daemonsets"]),
        r(["update"], ["apps", "extensions"], ["daemonsets/status", "daemonsets/finalizers"]),
        r(["list", "watch"], [""], ["nodes"]),
        r(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        r(["create"], [""], ["pods/binding"]),
        r(["get", "list", "watch", "create", "delete", "update", "patch"], ["apps"], ["controllerrevisions"]),
        *_EVENTS,
    ],
    "deployment-controller": [
        r(["get", "list", "watch", "update"], ["apps", "extensions"], ["deployments"]),
        r(["update"], ["apps", "extensions"], ["deployments/status", "deployments/finalizers"]),
        r(["get", "list", "watch", "create", "update", "patch", "delete"], ["apps", "extensions"], ["replicasets"]),
        r(["get", "list", "watch", "update"], [""], ["pods"]),
        *_EVENTS,
    ],
    "disruption-controller": [
        r(_READ, ["apps", "extensions"], ["deployments", "replicasets"]),
        r(_READ, [""], ["replicationcontrollers", "pods"]),
        r(_READ, ["apps"], ["statefulsets"]),
        r(_READ, ["policy"], ["poddisruptionbudgets"]),
        r(["update"], ["policy"], ["poddisruptionbudgets/status"]),
        r(["patch", "update"], [""], ["pods/status"]),
        r(["get"], ["*"], ["*/scale"]),
        *_EVENTS,
    ],
    "endpoint-controller": [
        r(_READ, [""], ["services", "pods"]),
        r(["get", "list", "create", "update", "delete"], [""], ["endpoints"]),
        r(["create"], [""], ["endpoints/restricted"]),
        *_EVENTS,
    ],
    "endpointslice-controller": [
        r(_READ, [""], ["services", "pods", "nodes"]),
        r(["update"], [""], ["services/finalizers"]),
        r(["get", "list", "create", "update", "delete"], ["discovery.k8s.io"], ["endpointslices"]),
        *_EVENTS,
    ],
    "ephemeral-volume-controller": [
        r(["get", "list", "watch"], [""], ["pods"]),
        r(["update"], [""], ["pods/finalizers"]),
        r(["get", "list", "watch", "create"], [""], ["persistentvolumeclaims"]),
        *_EVENTS,
    ],
    "expand-controller": [
        r(["get", "list", "watch", "update", "patch"], [""], ["persistentvolumes"]),
        r(["update", "patch"], [""], ["persistentvolumeclaims/status"]),
        r(_READ, [""], ["persistentvolumeclaims"]),
        r(_READ, ["storage.k8s.io"], ["storageclasses"]),
        *_EVENTS,
    ],
    "generic-garbage-collector": [r(["get", "list", "watch", "patch", "update", "delete"], ["*"], ["*"])],
    "horizontal-pod-autoscaler": [
        r(_READ, ["autoscaling"], ["horizontalpodautoscalers"]),
        r(["update"], ["autoscaling"], ["horizontalpodautoscalers/status"]),
        r(["get", "update"], ["*"], ["*/scale"]),
        r(["list"], [""], ["pods"]),
        r(["list"], ["metrics.k8s.io"], ["pods"]),
        r(["get", "list"], ["custom.metrics.k8s.io"], ["*"]),
        r(["get", "list"], ["external.metrics.k8s.io"], ["*"]),
        *_EVENTS,
    ],
    "job-controller": [
        r(["get", "list", "watch", "update", "patch"], ["batch"], ["jobs"]),
        r(["update"], ["batch"], ["jobs/status", "jobs/finalizers"]),
        r(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        *_EVENTS,
    ],
    "namespace-controller": [
        r(["get", "list", "watch", "delete"], [""], ["namespaces"]),
        r(["update"], [""], ["namespaces/finalize", "namespaces/status"]),
        r(["get", "list", "delete", "deletecollection"], ["*"], ["*"]),
    ],
    "node-controller": [
        r(["get", "list", "update", "delete", "patch"], [""], ["nodes"]),
        r(["patch", "update"], [""], ["nodes/status"]),
        r(["patch", "update"], [""], ["pods/status"]),
        r(["list", "delete"], [""], ["pods"]),
        *_EVENTS,
    ],
    "persistent-volume-binder": [
        r(["get", "list", "watch", "update", "create", "delete"], [""], ["persistentvolumes"]),
        r(["update"], [""], ["persistentvolumes/status"]),
        r(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        r(["update"], [""], ["persistentvolumeclaims/status"]),
        r(["list", "watch", "get", "create", "delete"], [""], ["pods"]),
        r(_READ, ["storage.k8s.io"], ["storageclasses"]),
        *_EVENTS,
    ],
    "pod-garbage-collector": [
        r(["list", "watch", "delete"], [""], ["pods"]),
        r(["get", "list"], [""], ["nodes"]),
        r(["patch"], [""], ["pods/status"]),
    ],
    "pv-protection-controller": [r(["get", "list", "watch", "update"], [""], ["persistentvolumes"])],
    "pvc-protection-controller": [
        r(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        r(["list", "watch", "get"], [""], ["pods"]),
    ],
    "replicaset-controller": [
        r(["get", "list", "watch", "update"], ["apps", "extensions"], ["replicasets"]),
        r(["update"], ["apps", "extensions"], ["replicasets/status", "replicasets/finalizers"]),
        r(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        *_EVENTS,
    ],
    "replication-controller": [
        r(["get", "list", "watch", "update"], [""], ["replicationcontrollers"]),
        r(["update"], [""], ["replicationcontrollers/status", "replicationcontrollers/finalizers"]),
        r(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        *_EVENTS,
    ],
    "resourcequota-controller": [
        r(["list", "watch"], ["*"], ["*"]),
        r(["update"], [""], ["resourcequotas/status"]),
        *_EVENTS,
    ],
    "root-ca-cert-publisher": [r(["create", "update"], [""], ["configmaps"]), *_EVENTS],
    "route-controller": [r(["list", "watch"], [""], ["nodes"]), r(["patch"], [""], ["nodes/status"]), *_EVENTS],
    "service-account-controller": [r(["create"], [""], ["serviceaccounts"]), *_EVENTS],
    "service-controller": [
        r(_READ, [""], ["services"]),
        r(["patch", "update"], [""], ["services/status"]),
        r(["list", "watch"], [""], ["nodes"]),
        *_EVENTS,
    ],
    "statefulset-controller": [
        r(["list", "watch"], [""], ["pods"]),
        r(_READ, ["apps"], ["statefulsets"]),
        r(["update"], ["apps"], ["statefulsets/status", "statefulsets/finalizers"]),
        r(["get", "create", "delete", "update", "patch"], [""], ["pods"]),
        r(["get", "create", "delete", "update", "patch", "list", "watch"], ["apps"], ["controllerrevisions"]),
        r(["get", "create"], [""], ["persistentvolumeclaims"]),
        r(["update", "patch", "delete"], [""], ["persistentvolumeclaims"]),  # the StatefulSetAutoDeletePVC rule
        *_EVENTS,
    ],
    "taint-eviction-controller": [
        r(["patch", "update"], [""], ["pods/status"]),
        r(["list", "get", "delete"], [""], ["pods"]),
        *_EVENTS,
    ],
    "ttl-controller": [r(["update", "patch", "list", "watch"], [""], ["nodes"]), *_EVENTS],
    "ttl-after-finished-controller": [r(["get", "list", "watch", "delete"], ["batch"], ["jobs"]), *_EVENTS],
    "legacy-service-account-token-cleaner": [
        r(["get"], [""], ["configmaps"], ["kube-apiserver-legacy-service-account-token-tracking"]),
        r(["patch", "delete"], [""], ["secrets"]),
    ],
}
