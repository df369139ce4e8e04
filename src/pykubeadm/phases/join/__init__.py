"""The `join` workflow: the phase tree of kubeadm 1.33's `kubeadm join --help` (one module per concern)."""

from __future__ import annotations

from pykubeadm.phases.join import control_plane, kubelet_start, kubelet_wait_bootstrap, preflight
from pykubeadm.phases.join.data import JoinData
from pykubeadm.workflow import Phase

__all__ = ["WORKER_RUN_MODULES", "JoinData", "join_phases"]

#: What a worker join's phases (preflight, kubelet-start, kubelet-wait-bootstrap) import when they run; the phase
#: modules import them in their run functions, so importing this package does not. A process that forks joins (the
#: lab) imports these too beforehand, so that its children start with them.
WORKER_RUN_MODULES = (
    "pykubeadm.preflight",
    "pykubeadm.discovery.file",
    "pykubeadm.discovery.token",
    "pykubeadm.client",
    "lightkube.resources.core_v1",
    "pykubeadm.phases.apply",
    "pykubeadm.phases.clusterconfig",
    "pykubeadm.kubeconfig",
    "pykubeadm.phases.kubelet",
    "pykubeadm.phases.kubeletservice",
    "pykubeadm.kubelet.package",
    "pykubeadm.phases.patchnode",
    "pykubeadm.phases.waitcontrolplane",
    "pykubeadm.api.images",
    "pykubeadm.util.patches",
    # what a blocking client's first request imports: its transport (util.httpclienttransport: http.client) and the
    # IDNA codec for the server's name
    "pykubeadm.util.httpclienttransport",
    "http.client",
    "encodings.idna",
)


def join_phases() -> list[Phase[JoinData]]:
    return [
        preflight.PHASE,
        control_plane.CONTROL_PLANE_PREPARE,
        kubelet_start.PHASE,
        control_plane.ETCD_JOIN,
        kubelet_wait_bootstrap.PHASE,
        control_plane.CONTROL_PLANE_JOIN,
        control_plane.WAIT_CONTROL_PLANE,
    ]
