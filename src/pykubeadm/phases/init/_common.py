"""Helpers shared by the init phases that write node files: shown paths, the patch manager, external-CA detection,
and the manifest builders' inputs from the init configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykubeadm.manifests import ClusterInputs
    from pykubeadm.phases.init.data import InitData
    from pykubeadm.util.patches import PatchManager

# The manifest builders and the patch manager are imported by the functions that use them: the certs and kubeconfig
# phases import this module for `shown` alone.

__all__ = ["cluster_inputs", "external_ca", "patch_manager", "shown"]


def shown(data: InitData, node_path: str) -> str:
    """A node path as printed: itself, or where it really goes in dry-run (the temporary directory)."""
    return str(data.layout.host(node_path)) if data.dry_run else node_path


def patch_manager(data: InitData) -> PatchManager | None:
    """The `--patches` / `patches.directory` patch sets, loaded once per run."""
    from pykubeadm.util.patches import PatchManager

    if data.patches_dir is None:
        return None
    cached = data.state.get("patch_manager")
    if isinstance(cached, PatchManager):
        return cached
    pm = PatchManager.load(data.patches_dir, out=data.out)
    data.state["patch_manager"] = pm
    return pm


def external_ca(data: InitData) -> bool:
    """External-CA mode: set by the certs phase, else detected from files (ca.crt present, ca.key missing)."""
    if "external_ca" in data.state:
        return bool(data.state["external_ca"])
    for layout in (data.layout, data.real_layout):
        crt, key = layout.cert_path("ca"), layout.key_path("ca")
        if crt.exists():
            return not key.exists()
    return False


def cluster_inputs(data: InitData) -> ClusterInputs:
    from pykubeadm.manifests import inputs_from_config

    cfg = data.cfg
    return inputs_from_config(
        cfg.cluster,
        cfg.init.local_api_endpoint,
        cfg.init.node_registration.name,
        external_ca=external_ca(data),
        timeouts=cfg.init.timeouts,
        dir_exists=lambda p: data.real_layout.host(p).is_dir(),
    )
