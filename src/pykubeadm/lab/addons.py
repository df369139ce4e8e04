"""The addons a lab gets beyond kubeadm's (CoreDNS and kube-proxy come with `init`): local-path storage, as kind
installs it, so PersistentVolumeClaims bind on a fresh lab (default StorageClass `standard`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pykubeadm.client import create_or_update_sync, sync_client
from pykubeadm.localpath.addon import DEFAULT_CLASS, addon_objects

__all__ = ["install_addons"]


def install_addons(kubeconfig: Path, out: Callable[[str], None]) -> None:
    """Create (or update) the local-path storage addon's objects with the admin credentials."""
    from lightkube.codecs import from_dict

    client = sync_client(kubeconfig)
    try:
        for obj in addon_objects():
            create_or_update_sync(client, from_dict(obj))
    finally:
        client.close()
    out(f"[lab] Installed the local-path storage addon (default StorageClass {DEFAULT_CLASS!r})")
