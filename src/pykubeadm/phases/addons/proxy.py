"""The kube-proxy addon kubeadm installs (§7.8): ServiceAccount, RBAC, ConfigMap kube-proxy, DaemonSet."""

from __future__ import annotations

import yaml

from pykubeadm import constants as c
from pykubeadm.phases import objects as o
from pykubeadm.phases.objects import Obj

__all__ = ["proxy_kubeconfig", "proxy_objects"]

_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def proxy_kubeconfig(server: str) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"cluster": {"certificate-authority": f"{_SA_DIR}/ca.crt", "server": server}, "name": "default"}],
        "contexts": [{"context": {"cluster": "default", "namespace": "default", "user": "default"}, "name": "default"}],
        "current-context": "default",
        "users": [{"name": "default", "user": {"tokenFile": f"{_SA_DIR}/token"}}],
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _daemonset(image: str) -> Obj:
    labels = {"k8s-app": c.KUBE_PROXY}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": c.KUBE_PROXY, "namespace": c.NAMESPACE_SYSTEM, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "hostNetwork": True,
                    "serviceAccountName": c.KUBE_PROXY,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": c.KUBE_PROXY,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": [
                                "/usr/local/bin/kube-proxy",
                                f"--config={c.KUBE_PROXY_CONFIG_MOUNT}/{c.KUBE_PROXY_CONFIGMAP_KEY}",
                                "--hostname-override=$(NODE_NAME)",
                            ],
                            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": "kube-proxy", "mountPath": c.KUBE_PROXY_CONFIG_MOUNT},
                                {"name": "xtables-lock", "mountPath": "/run/xtables.lock", "readOnly": False},
                                {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "kube-proxy", "configMap": {"name": c.KUBE_PROXY_CONFIGMAP}},
                        {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                        {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
                    ],
                },
            },
        },
    }


def proxy_objects(*, kube_proxy_configuration_yaml: str, server: str, image: str) -> list[Obj]:
    """kube-proxy's objects in kubeadm's creation order."""
    return [
        o.service_account(c.KUBE_PROXY, c.NAMESPACE_SYSTEM),
        o.cluster_role_binding(
            c.KUBE_PROXY_CLUSTER_ROLE_BINDING_NAME,
            c.NODE_PROXIER_CLUSTER_ROLE,
            [o.service_account_subject(c.KUBE_PROXY, c.NAMESPACE_SYSTEM)],
        ),
        o.role(
            c.KUBE_PROXY,
            c.NAMESPACE_SYSTEM,
            [o.policy_rule(["get"], ["configmaps"], resource_names=[c.KUBE_PROXY_CONFIGMAP])],
        ),
        o.role_binding(c.KUBE_PROXY, c.NAMESPACE_SYSTEM, c.KUBE_PROXY, [o.group(c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP)]),
        o.config_map(
            c.KUBE_PROXY_CONFIGMAP,
            c.NAMESPACE_SYSTEM,
            {
                c.KUBE_PROXY_CONFIGMAP_KEY: kube_proxy_configuration_yaml,
                c.KUBE_PROXY_KUBECONFIG_KEY: proxy_kubeconfig(server),
            },
            labels={"app": c.KUBE_PROXY},
        ),
        _daemonset(image),
    ]
