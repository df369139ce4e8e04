"""Puts images into a node's containerd without a registry: kubeadm's pause image built from pykubeadm's own pause
binary (so sandboxes start offline), and `import_archive` for any oci-archive or docker-archive (`ctr images import`
into the CRI plugin's `k8s.io` namespace); used by the lab and the tests.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.containerd.config import ContainerdConfig, kubeadm_pause_image
from pykubeadm.containerd.ociimage import ImageConfig, LayerFile, write_oci_archive
from pykubeadm.kubelet.builtin.native import native_binary

__all__ = ["build_pause_image", "import_archive", "preload_pause_image"]


def build_pause_image(archive: Path, cache_dir: Path, reference: str = "") -> Path:
    """Write kubeadm's pause image (default `registry.k8s.io/pause:3.10`) as an oci-archive: pykubeadm's static
    pause program at /pause, run as the image's entrypoint (what the upstream image does)."""
    pause = native_binary(c.PAUSE, cache_dir)
    write_oci_archive(
        archive,
        reference or kubeadm_pause_image(),
        ImageConfig(entrypoint=["/pause"], env=(), user="65535:65535"),
        files=[LayerFile("/pause", pause)],
    )
    return archive


def import_archive(cfg: ContainerdConfig, archive: Path, *, timeout: float = 120.0) -> str:
    """Import an oci-archive or docker-archive into the node's containerd (namespace k8s.io, unpacked into its
    snapshotter) so CRI sees its images; returns ctr's report."""
    from pykubeadm.containerd.daemon import ContainerdError  # with the CRI client: not for building an image

    ctr = shutil.which("ctr")
    if ctr is None:
        raise ContainerdError("ctr not found in $PATH: it comes with containerd (Debian: apt-get install containerd)")
    res = subprocess.run(
        [
            ctr,
            "--address",
            str(cfg.layout.containerd_socket),
            "--namespace",
            c.CONTAINERD_K8S_NAMESPACE,
            "images",
            "import",
            "--snapshotter",
            cfg.snapshotter,
            str(archive),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if res.returncode != 0:
        raise ContainerdError(f"importing {archive} into containerd failed: {(res.stderr or res.stdout).strip()}")
    return res.stdout


def preload_pause_image(cfg: ContainerdConfig, cache_dir: Path) -> str:
    """Build and import the sandbox image this containerd is configured with; returns its reference."""
    reference = cfg.sandbox_image or kubeadm_pause_image()
    archive = build_pause_image(cfg.layout.containerd_state / "pause.oci.tar", cache_dir, reference)
    try:
        import_archive(cfg, archive)
    finally:
        archive.unlink(missing_ok=True)
    return reference
