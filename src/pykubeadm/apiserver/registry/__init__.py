"""Resource kinds served by the built-in apiserver: one Strategy per kind (registry/<kind>.py), the generic Store, and
the virtual (create-only, never stored) review kinds. `STRATEGIES` is the single list discovery and routing read."""

from __future__ import annotations

from dataclasses import dataclass

from pykubeadm.apiserver.aggregator.apiservice import APIServiceStrategy
from pykubeadm.apiserver.crd.strategy import CRDStrategy
from pykubeadm.apiserver.registry.base import RequestContext, Strategy
from pykubeadm.apiserver.registry.builtin_kinds import generic_strategies
from pykubeadm.apiserver.registry.configmap import ConfigMapStrategy
from pykubeadm.apiserver.registry.controllerrevision import ControllerRevisionStrategy
from pykubeadm.apiserver.registry.cronjob import CronJobStrategy
from pykubeadm.apiserver.registry.csr import CSRStrategy
from pykubeadm.apiserver.registry.daemonset import DaemonSetStrategy
from pykubeadm.apiserver.registry.deployment import DeploymentStrategy
from pykubeadm.apiserver.registry.endpoints import EndpointsStrategy
from pykubeadm.apiserver.registry.endpointslice import EndpointSliceStrategy
from pykubeadm.apiserver.registry.event import EventStrategy
from pykubeadm.apiserver.registry.hpa import HPAV1Strategy
from pykubeadm.apiserver.registry.job import JobStrategy
from pykubeadm.apiserver.registry.lease import LeaseStrategy
from pykubeadm.apiserver.registry.namespace import NamespaceStrategy
from pykubeadm.apiserver.registry.node import NodeStrategy
from pykubeadm.apiserver.registry.pod import PodStrategy
from pykubeadm.apiserver.registry.poddisruptionbudget import PodDisruptionBudgetStrategy
from pykubeadm.apiserver.registry.priorityclass import PriorityClassStrategy
from pykubeadm.apiserver.registry.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from pykubeadm.apiserver.registry.replicaset import ReplicaSetStrategy
from pykubeadm.apiserver.registry.secret import SecretStrategy
from pykubeadm.apiserver.registry.service import ServiceStrategy
from pykubeadm.apiserver.registry.serviceaccount import ServiceAccountStrategy
from pykubeadm.apiserver.registry.store import Store

__all__ = ["STRATEGIES", "VIRTUAL_KINDS", "RequestContext", "Store", "Strategy", "VirtualKind"]

STRATEGIES: tuple[Strategy, ...] = (
    NamespaceStrategy(),
    SecretStrategy(),
    ConfigMapStrategy(),
    ServiceAccountStrategy(),
    NodeStrategy(),
    PodStrategy(),
    ServiceStrategy(),
    EndpointsStrategy(),
    EventStrategy(),
    LeaseStrategy(),
    CSRStrategy(),
    RoleStrategy(),
    RoleBindingStrategy(),
    ClusterRoleStrategy(),
    ClusterRoleBindingStrategy(),
    DeploymentStrategy(),
    DaemonSetStrategy(),
    ReplicaSetStrategy(),
    ControllerRevisionStrategy(),
    JobStrategy(),
    CronJobStrategy(),
    EndpointSliceStrategy(),
    PodDisruptionBudgetStrategy(),
    PriorityClassStrategy(),
    APIServiceStrategy(),
    *generic_strategies(),
    HPAV1Strategy(),  # after autoscaling/v2, the preferred version
    CRDStrategy(),
)


@dataclass(frozen=True)
class VirtualKind:
    """A create-only kind answered by an evaluation function (review APIs)."""

    kind: str
    plural: str
    group: str
    namespaced: bool = False
    version: str = "v1"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


VIRTUAL_KINDS: tuple[VirtualKind, ...] = (
    VirtualKind("LocalSubjectAccessReview", "localsubjectaccessreviews", "authorization.k8s.io", namespaced=True),
    VirtualKind("SelfSubjectAccessReview", "selfsubjectaccessreviews", "authorization.k8s.io"),
    VirtualKind("SelfSubjectRulesReview", "selfsubjectrulesreviews", "authorization.k8s.io"),
    VirtualKind("SubjectAccessReview", "subjectaccessreviews", "authorization.k8s.io"),
    VirtualKind("SelfSubjectReview", "selfsubjectreviews", "authentication.k8s.io"),
    VirtualKind("TokenReview", "tokenreviews", "authentication.k8s.io"),
)
