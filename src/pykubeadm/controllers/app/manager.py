"""Which controllers kube-controller-manager runs (--controllers) and running them with shared informers.

`--controllers` follows kube-controller-manager: `*` enables every controller that is on by default, `name` enables one,
`-name` disables one; names may be the classic short ones (`csrapproving`) or the ≥1.28 long ones
(`certificatesigningrequest-approving-controller`); an unknown name is an error. `bootstrapsigner` and `tokencleaner`
are off by default (kubeadm passes `*,bootstrapsigner,tokencleaner`); so is our `csrservingapproving` (kubelet
serving CSRs checked against their Node, not in kube: enable it with `--controllers=*,...,csrservingapproving`). Upstream controllers we do not implement are
accepted and reported as not running.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Final

from pykubeadm.controllers.bootstrap import BootstrapSignerController, TokenCleanerController
from pykubeadm.controllers.certificates.approver import CSRApprovingController
from pykubeadm.controllers.certificates.cleaner import CSRCleanerController
from pykubeadm.controllers.certificates.csrservingapproving import CSRServingApprovingController
from pykubeadm.controllers.certificates.rootcacertpublisher import RootCACertPublisher
from pykubeadm.controllers.certificates.signer import CSRSigningController
from pykubeadm.controllers.clusterroleaggregation import ClusterRoleAggregationController
from pykubeadm.controllers.cronjob import CronJobController
from pykubeadm.controllers.daemon import DaemonSetController
from pykubeadm.controllers.deployment import DeploymentController
from pykubeadm.controllers.disruption import DisruptionController
from pykubeadm.controllers.endpoint import EndpointController
from pykubeadm.controllers.endpointslice import EndpointSliceController
from pykubeadm.controllers.ephemeral import EphemeralVolumeController
from pykubeadm.controllers.garbagecollector import GarbageCollectorController
from pykubeadm.controllers.job import JobController
from pykubeadm.controllers.namespace import NamespaceController
from pykubeadm.controllers.nodeipam import NodeIPAMController
from pykubeadm.controllers.nodelifecycle import NodeLifecycleController
from pykubeadm.controllers.persistentvolume import (
    PersistentVolumeController,
    PVCProtectionController,
    PVProtectionController,
)
from pykubeadm.controllers.podautoscaler import HorizontalController
from pykubeadm.controllers.podgc import PodGCController
from pykubeadm.controllers.replicaset import ReplicaSetController
from pykubeadm.controllers.runtime import Controller, ControllerContext, run_with_informers
from pykubeadm.controllers.serviceaccount import ServiceAccountsController
from pykubeadm.controllers.statefulset import StatefulSetController
from pykubeadm.controllers.tainteviction import TaintEvictionController
from pykubeadm.controllers.ttlafterfinished import TTLAfterFinishedController

__all__ = [
    "ALIASES",
    "CONTROLLERS",
    "DISABLED_BY_DEFAULT",
    "KNOWN_CONTROLLERS",
    "ControllerSelectionError",
    "enabled_controllers",
    "run_controllers",
]

log = logging.getLogger(__name__)

#: The controllers implemented here, by their classic --controllers name.
CONTROLLERS: Final[dict[str, type[Controller]]] = {
    "csrapproving": CSRApprovingController,
    "csrsigning": CSRSigningController,
    "csrcleaner": CSRCleanerController,
    "csrservingapproving": CSRServingApprovingController,
    "bootstrapsigner": BootstrapSignerController,
    "tokencleaner": TokenCleanerController,
    "root-ca-cert-publisher": RootCACertPublisher,
    "serviceaccount": ServiceAccountsController,
    "nodeipam": NodeIPAMController,
    "nodelifecycle": NodeLifecycleController,
    "replicaset": ReplicaSetController,
    "deployment": DeploymentController,
    "daemonset": DaemonSetController,
    "taint-eviction-controller": TaintEvictionController,
    "disruption": DisruptionController,
    "endpoint": EndpointController,
    "endpointslice": EndpointSliceController,
    "podgc": PodGCController,
    "garbagecollector": GarbageCollectorController,
    "namespace": NamespaceController,
    "cronjob": CronJobController,
    "job": JobController,
    "ttl-after-finished": TTLAfterFinishedController,
    "persistentvolume-binder": PersistentVolumeController,
    "pvc-protection": PVCProtectionController,
    "pv-protection": PVProtectionController,
    "ephemeral-volume": EphemeralVolumeController,
    "statefulset": StatefulSetController,
    "horizontalpodautoscaling": HorizontalController,
    "clusterrole-aggregation": ClusterRoleAggregationController,
}

#: ≥1.28 long names → classic names.
ALIASES: Final[dict[str, str]] = {
    "certificatesigningrequest-approving-controller": "csrapproving",
    "certificatesigningrequest-signing-controller": "csrsigning",
    "certificatesigningrequest-cleaner-controller": "csrcleaner",
    "certificatesigningrequest-serving-approving-controller": "csrservingapproving",
    "bootstrap-signer-controller": "bootstrapsigner",
    "token-cleaner-controller": "tokencleaner",
    "root-ca-certificate-publisher-controller": "root-ca-cert-publisher",
    "serviceaccount-controller": "serviceaccount",
    "node-ipam-controller": "nodeipam",
    "node-lifecycle-controller": "nodelifecycle",
    "replicaset-controller": "replicaset",
    "deployment-controller": "deployment",
    "daemonset-controller": "daemonset",
    "disruption-controller": "disruption",
    "endpoints-controller": "endpoint",
    "endpointslice-controller": "endpointslice",
    "pod-garbage-collector-controller": "podgc",
    "garbage-collector-controller": "garbagecollector",
    "namespace-controller": "namespace",
    "cronjob-controller": "cronjob",
    "job-controller": "job",
    "ttl-after-finished-controller": "ttl-after-finished",
    "persistentvolume-binder-controller": "persistentvolume-binder",
    "persistentvolumeclaim-protection-controller": "pvc-protection",
    "persistentvolume-protection-controller": "pv-protection",
    "ephemeral-volume-controller": "ephemeral-volume",
    "statefulset-controller": "statefulset",
    "horizontal-pod-autoscaler-controller": "horizontalpodautoscaling",
    "clusterrole-aggregation-controller": "clusterrole-aggregation",
}

#: Every controller name kube-controller-manager knows (accepted in --controllers even if not implemented here).
KNOWN_CONTROLLERS: Final[frozenset[str]] = frozenset(CONTROLLERS) | frozenset(
    {
        "attachdetach",
        "clusterrole-aggregation",
        "cronjob",
        "daemonset",
        "deployment",
        "disruption",
        "endpoint",
        "endpointslice",
        "endpointslicemirroring",
        "ephemeral-volume",
        "garbagecollector",
        "horizontalpodautoscaling",
        "job",
        "legacy-serviceaccount-token-cleaner",
        "namespace",
        "persistentvolume-binder",
        "persistentvolume-expander",
        "podgc",
        "pv-protection",
        "pvc-protection",
        "replicaset",
        "replicationcontroller",
        "resource-claim-controller",
        "resourcequota",
        "serviceaccount-token",
        "statefulset",
        "ttl",
        "ttl-after-finished",
        "cloud-node-lifecycle",
        "route",
        "service",
        "storage-version-gc",
        "validatingadmissionpolicy-status-controller",
        "service-cidr-controller",
        "taint-eviction-controller",
        "storage-version-migrator-controller",
        "selinux-warning-controller",
        "volumeattributesclass-protection-controller",
        "kube-apiserver-serving-clustertrustbundle-publisher-controller",
        "device-taint-eviction-controller",
    }
)

#: Controllers `*` does not enable.
DISABLED_BY_DEFAULT: Final[frozenset[str]] = frozenset(
    {"bootstrapsigner", "tokencleaner", "selinux-warning-controller", "csrservingapproving"}
)


class ControllerSelectionError(ValueError):
    pass


def _canonical(name: str) -> str:
    return ALIASES.get(name, name)


def enabled_controllers(selection: Sequence[str], known: Iterable[str] = KNOWN_CONTROLLERS) -> set[str]:
    """The known controllers enabled by a --controllers list (kube-controller-manager's IsControllerEnabled)."""
    known = set(known)
    items = [s.strip() for s in selection if s.strip()]
    for item in items:
        name = _canonical(item.removeprefix("-"))
        if item != "*" and name not in known:
            raise ControllerSelectionError(f'"{item.removeprefix("-")}" is not in the list of known controllers')
    enabled: set[str] = set()
    for name in known:
        if name in {_canonical(i) for i in items if not i.startswith("-")}:
            enabled.add(name)
        elif name in {_canonical(i[1:]) for i in items if i.startswith("-")}:
            continue
        elif "*" in items and name not in DISABLED_BY_DEFAULT:
            enabled.add(name)
    return enabled


async def run_controllers(ctx: ControllerContext, names: Iterable[str]) -> None:
    """Start the shared informers and every named controller we implement; run until cancelled."""
    controllers = [CONTROLLERS[n](ctx) for n in sorted(names) if n in CONTROLLERS]
    log.info("starting controllers: %s", ", ".join(c.name for c in controllers))
    await run_with_informers(ctx, controllers)
