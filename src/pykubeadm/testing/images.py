"""Test images built offline from this machine's files: a busybox image from Debian's busybox-static, written as an
oci-archive (`pykubeadm.containerd.ociimage`) for tests and benchmarks to import or push."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pykubeadm.containerd.ociimage import ImageConfig, LayerFile, write_oci_archive

__all__ = ["BUSYBOX", "write_busybox_image"]

#: Debian's busybox-static binary.
BUSYBOX = Path("/bin/busybox")


def write_busybox_image(archive: Path, reference: str, *, busybox: Path = BUSYBOX) -> Path:
    """A busybox image: the static binary at /bin/busybox and a symlink for each applet (/bin/sh, /bin/echo, ...),
    `sh` as its command (as docker.io/library/busybox). Raises FileNotFoundError when busybox is not installed."""
    if not busybox.is_file():
        raise FileNotFoundError(f"{busybox} not found: install Debian's busybox-static")
    applets = subprocess.run(
        [str(busybox), "--list-full"], capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    links = {"/" + applet: "/bin/busybox" for applet in applets if applet != "bin/busybox"}
    write_oci_archive(
        archive,
        reference,
        ImageConfig(cmd=["sh"]),
        files=[LayerFile("/bin/busybox", busybox)],
        symlinks=links,
        dirs=["/tmp", "/etc", "/root", "/var", "/proc", "/sys", "/dev"],
    )
    return archive
