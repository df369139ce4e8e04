"""The addons a lab gets beyond kubeadm's (CoreDNS and kube-proxy come with `init`): local-path storage, as kind
installs it, so PersistentVolumeClaims bind on a fresh lab (default StorageClass `standard`); and in a
network-namespace lab the Pod network addon, kindnet (kindnet.manifests), applied after `init` as kind applies its
default CNI manifest. Before applying it the lab says what the first control plane's Node reports (NotReady with the
kubelet's network-not-ready message, as on any kubeadm node before a Pod network is deployed). Each function takes
the admin client (lab.cluster makes one for all of them) or an admin kubeconfig."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubeadm.client import create_or_update_sync, sync_client
from pykubeadm.localpath.addon import DEFAULT_CLASS, addon_objects

__all__ = ["apply_objects", "install_addons", "install_network_addon", "ready_condition"]

if TYPE_CHECKING:
    from lightkube import Client

Out = Callable[[str], None]


@contextlib.contextmanager
def _client(admin: Client | Path) -> Iterator[Client]:
    """`admin` itself, or a client of that admin kubeconfig closed at the end."""
    if not isinstance(admin, Path):
        yield admin
        return
    client = sync_client(admin)
    try:
        yield client
    finally:
        client.close()


def apply_objects(admin: Client | Path, objects: list[dict[str, Any]]) -> None:
    """Create (or update) each object with the admin credentials."""
    from lightkube.codecs import from_dict

    with _client(admin) as client:
        for obj in objects:
            create_or_update_sync(client, from_dict(obj))


def install_addons(admin: Client | Path, out: Out) -> None:
    """Create (or update) the local-path storage addon's objects with the admin credentials."""
    apply_objects(admin, addon_objects())
    out(f"[lab] Installed the local-path storage addon (default StorageClass {DEFAULT_CLASS!r})")


def ready_condition(admin: Client | Path, node: str, timeout: float = 10.0) -> str:
    """Node `node`'s Ready condition as `Ready=STATUS (REASON): MESSAGE`, once its kubelet has posted one (within
    `timeout`; else what is known)."""
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.core_v1 import Node

    deadline = time.monotonic() + timeout
    with _client(admin) as client:
        while True:
            try:
                obj = client.get(Node, node)
                ready = [cd for cd in (obj.status.conditions or []) if cd.type == "Ready"] if obj.status else []
            except ApiError:
                ready = []
            if ready:
                cd = ready[0]
                return f"Ready={cd.status} ({cd.reason}): {cd.message}"
            if time.monotonic() > deadline:
                return "no Ready condition posted yet"
            time.sleep(0.05)


def install_network_addon(admin: Client | Path, pod_subnet: str, control_plane_endpoint: str, out: Out) -> None:
    """Create (or update) kindnet's objects: its DaemonSet writes each node's CNI conflist from the node's podCIDR
    and routes the other nodes' pod CIDRs; it reaches the API server at `control_plane_endpoint` (HOST:PORT), as
    kind points kindnet at its control plane."""
    from pykubeadm.kindnet.manifests import KINDNET_IMAGE, kindnet_objects

    apply_objects(admin, kindnet_objects(pod_subnet=pod_subnet, control_plane_endpoint=control_plane_endpoint))
    out(f"[lab] Installed the Pod network addon kindnet ({KINDNET_IMAGE}, podSubnet {pod_subnet})")
