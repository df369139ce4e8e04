"""The network addon's objects, applied after `init` (as kind applies its default CNI manifest): ServiceAccount,
ClusterRole (get/list/watch nodes), ClusterRoleBinding and the hostNetwork DaemonSet `kindnet` on every node.

The DaemonSet mounts the node's CNI configuration directory (hostPath /etc/cni/net.d) where the agent writes the
conflist, runs privileged in the node's network namespace (routes, the bridge's rules) and tolerates every taint
(a NotReady node, a control plane), and passes the node's name, and optionally the control-plane endpoint and the
cluster's pod subnet, through the environment as kind does.
"""

from __future__ import annotations

import yaml

from pykubeadm import constants as c
from pykubeadm.phases import objects as o
from pykubeadm.phases.objects import Obj

__all__ = ["KINDNET", "KINDNET_IMAGE", "kindnet_manifest", "kindnet_objects"]

#: The addon's name (objects and labels).
KINDNET = "kindnet"
#: kind's kindnetd image for Kubernetes v1.33 (kind v0.29); the built-in runtime runs it as `component kindnetd`.
KINDNET_IMAGE = "docker.io/kindest/kindnetd:v20250512-df8de77b"


def _daemonset(image: str, pod_subnet: str, control_plane_endpoint: str) -> Obj:
    labels = {"app": KINDNET, "k8s-app": KINDNET, "tier": "node"}
    env: list[Obj] = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
    ]
    if pod_subnet:
        env.append({"name": "POD_SUBNET", "value": pod_subnet})
    if control_plane_endpoint:
        env.append({"name": "CONTROL_PLANE_ENDPOINT", "value": control_plane_endpoint})
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": KINDNET, "namespace": c.NAMESPACE_SYSTEM, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": {"app": KINDNET}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "hostNetwork": True,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"operator": "Exists"}],
                    "serviceAccountName": KINDNET,
                    "containers": [
                        {
                            "name": "kindnet-cni",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/bin/kindnetd", f"--cni-conf-dir={c.DEFAULT_CNI_CONF_DIR}"],
                            "env": env,
                            "securityContext": {"privileged": True},
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "50Mi"},
                                "limits": {"cpu": "100m", "memory": "50Mi"},
                            },
                            "volumeMounts": [
                                {"name": "cni-cfg", "mountPath": c.DEFAULT_CNI_CONF_DIR},
                                {"name": "xtables-lock", "mountPath": "/run/xtables.lock", "readOnly": False},
                                {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "cni-cfg", "hostPath": {"path": c.DEFAULT_CNI_CONF_DIR, "type": "DirectoryOrCreate"}},
                        {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                        {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
                    ],
                },
            },
        },
    }


def kindnet_objects(*, image: str = KINDNET_IMAGE, pod_subnet: str = "", control_plane_endpoint: str = "") -> list[Obj]:
    """The addon's objects in the order they are created."""
    return [
        o.service_account(KINDNET, c.NAMESPACE_SYSTEM),
        o.cluster_role(KINDNET, [o.policy_rule(["get", "list", "watch"], ["nodes"])]),
        o.cluster_role_binding(KINDNET, KINDNET, [o.service_account_subject(KINDNET, c.NAMESPACE_SYSTEM)]),
        _daemonset(image, pod_subnet, control_plane_endpoint),
    ]


def kindnet_manifest(*, image: str = KINDNET_IMAGE, pod_subnet: str = "", control_plane_endpoint: str = "") -> str:
    """The objects as one multi-document YAML, for `kubectl apply -f -` (kind's default CNI manifest, rendered)."""
    objects = kindnet_objects(image=image, pod_subnet=pod_subnet, control_plane_endpoint=control_plane_endpoint)
    return yaml.safe_dump_all(objects, sort_keys=False)
