"""Writes a single-layer OCI image as an oci-archive (an OCI image layout in a tar) from files on this machine,
offline and byte-for-byte reproducibly; used for kubeadm's pause image (`pauseimage`) and the tests' busybox image.

The archive's index names the image with containerd's `io.containerd.image.name` annotation (the full reference) and
OCI's `org.opencontainers.image.ref.name` (its tag), so `ctr images import` and `skopeo copy oci-archive:` both find it.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ImageConfig", "LayerFile", "oci_architecture", "write_oci_archive"]

_INDEX = "application/vnd.oci.image.index.v1+json"
_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_CONFIG = "application/vnd.oci.image.config.v1+json"
_LAYER = "application/vnd.oci.image.layer.v1.tar"
_ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


def oci_architecture() -> str:
    """This machine's architecture as OCI (GOARCH) names it."""
    machine = platform.machine()
    return _ARCHES.get(machine, machine)


@dataclass(frozen=True)
class LayerFile:
    """A regular file of the layer: `source` on this machine, stored at `path` (absolute, in the image)."""

    path: str
    source: Path
    mode: int = 0o755


@dataclass(frozen=True)
class ImageConfig:
    """The image's run configuration (what a container runs when it sets no command/args)."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Sequence[str] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    working_dir: str = "/"
    user: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)


def _tar_info(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.mode, info.size, info.mtime, info.uid, info.gid = kind, mode, size, 0, 0, 0
    return info


def _layer(files: Sequence[LayerFile], symlinks: Mapping[str, str], dirs: Sequence[str]) -> bytes:
    """An uncompressed layer tar with every parent directory, entries sorted, owners root, mtimes 0."""
    wanted_dirs = set(dirs)
    for p in [f.path for f in files] + list(symlinks):
        parts = p.strip("/").split("/")[:-1]
        wanted_dirs.update("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in sorted(wanted_dirs):
            tar.addfile(_tar_info(d, tarfile.DIRTYPE, 0o755))
        for f in sorted(files, key=lambda f: f.path):
            data = f.source.read_bytes()
            tar.addfile(_tar_info(f.path, tarfile.REGTYPE, f.mode, len(data)), io.BytesIO(data))
        for link, target in sorted(symlinks.items()):
            info = _tar_info(link, tarfile.SYMTYPE, 0o777)
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()


def _descriptor(media_type: str, blob: bytes) -> dict[str, object]:
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(blob).hexdigest(), "size": len(blob)}


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def write_oci_archive(
    archive: Path,
    reference: str,
    config: ImageConfig,
    *,
    files: Sequence[LayerFile] = (),
    symlinks: Mapping[str, str] | None = None,
    dirs: Sequence[str] = (),
) -> str:
    """Write `reference` (e.g. "registry.k8s.io/pause:3.10") as an oci-archive at `archive`; returns the manifest
    digest. `symlinks` maps a link path in the image to its target."""
    layer = _layer(files, symlinks or {}, dirs)
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    run: dict[str, object] = {"Env": list(config.env), "WorkingDir": config.working_dir}
    if config.entrypoint:
        run["Entrypoint"] = list(config.entrypoint)
    if config.cmd:
        run["Cmd"] = list(config.cmd)
    if config.user:
        run["User"] = config.user
    if config.labels:
        run["Labels"] = dict(config.labels)
    image_config = _json(
        {
            "architecture": oci_architecture(),
            "os": "linux",
            "config": run,
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            "history": [{"created_by": "pykubeadm", "comment": "one layer written by pykubeadm"}],
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": _MANIFEST,
            "config": _descriptor(_CONFIG, image_config),
            "layers": [_descriptor(_LAYER, layer)],
        }
    )
    manifest_desc = _descriptor(_MANIFEST, manifest)
    tag = reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else "latest"
    manifest_desc["annotations"] = {"io.containerd.image.name": reference, "org.opencontainers.image.ref.name": tag}
    manifest_desc["platform"] = {"architecture": oci_architecture(), "os": "linux"}
    index = _json({"schemaVersion": 2, "mediaType": _INDEX, "manifests": [manifest_desc]})
    entries = {
        "oci-layout": _json({"imageLayoutVersion": "1.0.0"}),
        "index.json": index,
        **{f"blobs/sha256/{hashlib.sha256(b).hexdigest()}": b for b in (layer, image_config, manifest)},
    }
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("blobs", "blobs/sha256"):
            tar.addfile(_tar_info(d, tarfile.DIRTYPE, 0o755))
        for name, blob in entries.items():
            tar.addfile(_tar_info(name, tarfile.REGTYPE, 0o644, len(blob)), io.BytesIO(blob))
    tmp.replace(archive)
    return str(manifest_desc["digest"])
