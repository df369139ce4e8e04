"""Node patches kubeadm makes outside mark-control-plane: the CRI socket annotation (patchnode.AnnotateCRISocket).

Before NodeLocalCRISocket (off in 1.33) kubeadm records the node's CRI socket as the annotation
`kubeadm.alpha.kubernetes.io/cri-socket`; init does it after uploading the kubelet config, join after the TLS bootstrap
(with the kubelet's own credentials). The Node may not exist yet, so it is waited for up to the API call timeout.
"""

from __future__ import annotations

from lightkube import Client
from lightkube.resources.core_v1 import Node

from pykubeadm import constants as c
from pykubeadm.client import wait_for_sync
from pykubeadm.phases.apply import retry_api_call

__all__ = ["annotate_cri_socket"]


def annotate_cri_socket(client: Client, node_name: str, cri_socket: str, timeout: float) -> None:
    wait_for_sync(client, Node, node_name, lambda _n: True, timeout=timeout, interval=0.05)
    patch = {"metadata": {"annotations": {c.ANNOTATION_CRI_SOCKET: cri_socket}}}
    retry_api_call(lambda: client.patch(Node, node_name, patch), f"annotate node {node_name} with its CRI socket")
