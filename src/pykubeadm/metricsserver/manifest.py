"""The metrics-server addon as users deploy it: the objects of metrics-server v0.7's components.yaml.

ServiceAccount kube-system/metrics-server; ClusterRoles system:aggregated-metrics-reader (aggregated into view, edit
and admin) and system:metrics-server (nodes/metrics get; pods and nodes get/list/watch); the RoleBinding
metrics-server-auth-reader (extension-apiserver-authentication-reader) and the ClusterRoleBindings
metrics-server:system:auth-delegator and system:metrics-server; Service metrics-server 443 → `https`; the Deployment;
APIService v1beta1.metrics.k8s.io with insecureSkipTLSVerify. The container's args are upstream's plus
`--kubelet-insecure-tls` (what kind users add: kubelet serving certificates are self-signed). Pods share their node's
network here, where the kubelet holds 10250, so the server listens on 4443 (metrics-server's port before v0.6).
`apply(client)` creates or updates them all.
"""

from __future__ import annotations

from typing import Any

from pykubeadm import constants as c

__all__ = ["SECURE_PORT", "apply", "objects"]

SECURE_PORT = 4443
_NS = c.NAMESPACE_SYSTEM
_NAME = c.METRICS_SERVER
_LABELS = {"k8s-app": _NAME}
_RBAC = "rbac.authorization.k8s.io/v1"
_SUBJECTS = [{"kind": "ServiceAccount", "name": _NAME, "namespace": _NS}]


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**_LABELS, **labels}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _probe(path: str, **extra: int) -> dict[str, Any]:
    return {"failureThreshold": 3, "httpGet": {"path": path, "port": "https", "scheme": "HTTPS"}, "periodSeconds": 10,
            **extra}  # fmt: skip


def objects(
    image: str = f"registry.k8s.io/metrics-server/metrics-server:{c.METRICS_SERVER_VERSION}",
    resolution: str = "15s",
) -> list[dict[str, Any]]:
    """The addon's objects, in the order components.yaml lists them."""
    aggregate = {f"rbac.authorization.k8s.io/aggregate-to-{r}": "true" for r in ("admin", "edit", "view")}
    args = [
        "--cert-dir=/tmp",
        f"--secure-port={SECURE_PORT}",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        "--kubelet-use-node-status-port",
        f"--metric-resolution={resolution}",
        "--kubelet-insecure-tls",
    ]
    container = {
        "name": _NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": [{"containerPort": SECURE_PORT, "name": "https", "protocol": "TCP"}],
        "livenessProbe": _probe("/livez"),
        "readinessProbe": _probe("/readyz", initialDelaySeconds=20),
        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            # Upstream also sets runAsNonRoot and runAsUser 1000. The image is a built-in program, run by this
            # node's Python interpreter, which need not be readable by uid 1000 (a virtualenv under /root): the
            # container keeps the rest of upstream's confinement (no capabilities, no_new_privs, seccomp, a
            # read-only root) and runs as the interpreter's owner.
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"mountPath": "/tmp", "name": "tmp-dir"}],
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(_NAME, _NS)},
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRole",
            "metadata": _meta("system:aggregated-metrics-reader", **aggregate),
            "rules": [
                {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRole",
            "metadata": _meta("system:metrics-server"),
            "rules": [
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
            ],
        },
        {
            "apiVersion": _RBAC,
            "kind": "RoleBinding",
            "metadata": _meta("metrics-server-auth-reader", _NS),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": _SUBJECTS,
        },
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta("metrics-server:system:auth-delegator"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": _SUBJECTS,
        },
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta("system:metrics-server"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:metrics-server",
            },
            "subjects": _SUBJECTS,
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(_NAME, _NS),
            "spec": {
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "https"}],
                "selector": dict(_LABELS),
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(_NAME, _NS),
            "spec": {
                "selector": {"matchLabels": dict(_LABELS)},
                "strategy": {"rollingUpdate": {"maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": dict(_LABELS)},
                    "spec": {
                        "containers": [container],
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": _NAME,
                        "volumes": [{"emptyDir": {}, "name": "tmp-dir"}],
                    },
                },
            },
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": _meta("v1beta1.metrics.k8s.io"),
            "spec": {
                "group": "metrics.k8s.io",
                "groupPriorityMinimum": 100,
                "insecureSkipTLSVerify": True,
                "service": {"name": _NAME, "namespace": _NS},
                "version": "v1beta1",
                "versionPriority": 100,
            },
        },
    ]


def apply(client: Any, docs: list[dict[str, Any]] | None = None) -> None:
    """Create or update every object with a sync lightkube client (what `kubectl apply -f components.yaml` does)."""
    from lightkube import codecs

    from pykubeadm.client import create_or_update_sync

    for doc in docs if docs is not None else objects():
        create_or_update_sync(client, codecs.from_dict(doc))
