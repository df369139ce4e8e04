"""The CoreDNS addon kubeadm installs (§7.9): ConfigMap coredns, RBAC, ServiceAccount, Deployment, Service kube-dns."""

from __future__ import annotations

from pykubeadm import constants as c
from pykubeadm.phases import objects as o
from pykubeadm.phases.objects import Obj

__all__ = ["corefile", "dns_objects"]

_K8S_APP = {"k8s-app": "kube-dns"}


def corefile(dns_domain: str) -> str:
    return f""".:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
    kubernetes {dns_domain} in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success {dns_domain}
       disable denial {dns_domain}
    }}
    loop
    reload
    loadbalance
}}
"""


def _deployment(image: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": c.COREDNS, "namespace": c.NAMESPACE_SYSTEM, "labels": dict(_K8S_APP)},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "selector": {"matchLabels": dict(_K8S_APP)},
            "template": {
                "metadata": {"labels": dict(_K8S_APP)},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": c.COREDNS,
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {
                                            "matchExpressions": [
                                                {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}
                                            ]
                                        },
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": c.TAINT_CONTROL_PLANE_KEY, "effect": "NoSchedule"},
                    ],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [
                        {
                            "name": c.COREDNS,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "resources": {
                                "limits": {"memory": "170Mi"},
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                            },
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
                            "ports": [
                                {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                                {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                            ],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                            },
                            "livenessProbe": {
                                "httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                                "initialDelaySeconds": 60,
                                "timeoutSeconds": 5,
                                "successThreshold": 1,
                                "failureThreshold": 5,
                            },
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"}},
                        }
                    ],
                    "dnsPolicy": "Default",
                    "volumes": [
                        {
                            "name": "config-volume",
                            "configMap": {"name": c.COREDNS, "items": [{"key": "Corefile", "path": "Corefile"}]},
                        }
                    ],
                },
            },
        },
    }


def _service(cluster_ip: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": c.KUBE_DNS_SERVICE,
            "namespace": c.NAMESPACE_SYSTEM,
            "labels": {**_K8S_APP, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
            "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
        },
        "spec": {
            "selector": dict(_K8S_APP),
            "clusterIP": cluster_ip,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    }


def dns_objects(*, dns_domain: str, cluster_ip: str, image: str) -> tuple[Obj, list[Obj]]:
    """(the coredns ConfigMap, created only if absent) and the other objects, in kubeadm's order."""
    cm = o.config_map(c.COREDNS_CONFIGMAP, c.NAMESPACE_SYSTEM, {"Corefile": corefile(dns_domain)})
    rest = [
        o.cluster_role(
            "system:coredns",
            [
                o.policy_rule(["list", "watch"], ["endpoints", "services", "pods", "namespaces"]),
                o.policy_rule(["list", "watch"], ["endpointslices"], api_groups=["discovery.k8s.io"]),
            ],
        ),
        o.cluster_role_binding(
            "system:coredns", "system:coredns", [o.service_account_subject(c.COREDNS, c.NAMESPACE_SYSTEM)]
        ),
        o.service_account(c.COREDNS, c.NAMESPACE_SYSTEM),
        _deployment(image),
        _service(cluster_ip),
    ]
    return cm, rest
