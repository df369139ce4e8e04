"""`pykubeadm lab load ARCHIVE...`: images from OCI or docker archives into every node of a containerd lab, as kind's
`load image-archive` does: each archive imported into each node's containerd (namespace k8s.io, where the CRI plugin
keeps Kubernetes' images), all nodes at once, with `ctr images import` (Debian's containerd package); the kubelet
finds them through CRI like any pulled image (`imagePullPolicy: Never` or IfNotPresent runs them).

An archive is checked before any node is touched: it must exist and be a tar holding an OCI image layout
(`oci-layout` and `index.json`, what `skopeo copy ... oci-archive:` writes) or a docker archive (`manifest.json`,
what `docker save` and `skopeo copy ... docker-archive:` write).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.cluster import lab_nodes
from pykubeadm.lab.nodes import LabNode
from pykubeadm.lab.runtime import running_pid
from pykubeadm.lab.settings import lab_settings
from pykubeadm.layout import Layout

__all__ = ["archive_format", "lab_load"]

Out = Callable[[str], None]
_IMPORT_TIMEOUT = 600.0


def archive_format(path: Path) -> str:
    """ "oci-archive" or "docker-archive", or a KubeadmError saying what the file is not."""
    if not path.is_file():
        raise KubeadmError(f"lab load: {path}: no such file")
    try:
        with tarfile.open(path) as tar:
            names = {name.removeprefix("./") for name in tar.getnames()}
    except (tarfile.TarError, OSError) as err:
        raise KubeadmError(
            f"lab load: {path} is not an image archive (not a tar file: {err}); write one with "
            "'skopeo copy ... oci-archive:FILE' or 'docker save -o FILE IMAGE'"
        ) from err
    if {"oci-layout", "index.json"} <= names:
        return "oci-archive"
    if "manifest.json" in names:
        return "docker-archive"
    raise KubeadmError(
        f"lab load: {path} is a tar file but not an image archive (neither an OCI layout with oci-layout and "
        "index.json nor a docker archive with manifest.json)"
    )


def _import(node: LabNode, archive: Path) -> subprocess.Popen[str]:
    ctr = shutil.which("ctr") or "/usr/sbin/ctr"
    socket = Layout(node.root).containerd_socket
    return subprocess.Popen(
        [ctr, "--address", str(socket), "--namespace", c.CONTAINERD_K8S_NAMESPACE, "images", "import", str(archive)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _imported(report: str) -> list[str]:
    """The image names in ctr's report (`unpacking NAME (sha256:...)...done`)."""
    return [line.split()[1] for line in report.splitlines() if line.startswith("unpacking ") and len(line.split()) > 1]


def lab_load(lab_dir: Path, archives: list[Path], out: Out = print) -> dict[str, list[str]]:
    """Import every archive into every node's containerd; returns node name → the images imported into it."""
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    if not nodes:
        raise KubeadmError(f"lab load: no lab in {lab_dir}: run 'pykubeadm lab up --dir {lab_dir}' first")
    if not lab_settings(lab_dir).containerd:
        raise KubeadmError(
            f"lab load: the lab in {lab_dir} runs the built-in runtime, which has no images to load into: create it "
            "with 'pykubeadm lab up --runtime containerd'"
        )
    if not archives:
        raise KubeadmError("lab load: name at least one image archive (an OCI or docker archive file)")
    for archive in archives:
        archive_format(archive)
    down = [n.name for n in nodes if running_pid(n) is None]
    if down:
        raise KubeadmError(
            f"lab load: the containerd of {', '.join(down)} is not running (node stopped or reset?): "
            "'pykubeadm lab start NODE' or 'lab join --node NODE' first"
        )
    loaded: dict[str, list[str]] = {n.name: [] for n in nodes}
    for archive in archives:
        procs = [(node, _import(node, archive.absolute())) for node in nodes]
        failed = []
        for node, proc in procs:
            report, _ = proc.communicate(timeout=_IMPORT_TIMEOUT)
            if proc.returncode != 0:
                failed.append(f"{node.name}: {report.strip()}")
                continue
            images = _imported(report)
            loaded[node.name] += images
            out(f"[lab] {node.name}: loaded {', '.join(images) or 'no image'} from {archive}")
        if failed:
            raise KubeadmError(f"lab load: importing {archive} failed on " + "; ".join(failed))
    return loaded
