"""OCI archives written from local files: a valid image layout, named for containerd, reproducible."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from pykubeadm.containerd.ociimage import ImageConfig, LayerFile, oci_architecture, write_oci_archive


def _write(tmp_path: Path, name: str) -> tuple[Path, str]:
    program = tmp_path / "prog"
    program.write_bytes(b"#!/bin/sh\necho hi\n")
    archive = tmp_path / name
    digest = write_oci_archive(
        archive,
        "registry.k8s.io/pause:3.10",
        ImageConfig(entrypoint=["/pause"]),
        files=[LayerFile("/usr/bin/pause", program)],
        symlinks={"/pause": "/usr/bin/pause"},
    )
    return archive, digest


def test_the_archive_is_an_oci_layout_naming_the_image(tmp_path: Path) -> None:
    archive, digest = _write(tmp_path, "a.tar")
    with tarfile.open(archive) as tar:
        blobs = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert json.loads(blobs["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, blob in blobs.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(blob).hexdigest() == name.rsplit("/", 1)[1]
    (entry,) = json.loads(blobs["index.json"])["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"] == {
        "io.containerd.image.name": "registry.k8s.io/pause:3.10",
        "org.opencontainers.image.ref.name": "3.10",
    }
    manifest = json.loads(blobs[f"blobs/sha256/{digest.removeprefix('sha256:')}"])
    config = json.loads(blobs["blobs/sha256/" + manifest["config"]["digest"].removeprefix("sha256:")])
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert config["architecture"] == oci_architecture()
    layer = blobs["blobs/sha256/" + manifest["layers"][0]["digest"].removeprefix("sha256:")]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]


def test_the_layer_holds_files_symlinks_and_parents(tmp_path: Path) -> None:
    archive, digest = _write(tmp_path, "a.tar")
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}"))  # type: ignore[arg-type]
        layer_name = "blobs/sha256/" + manifest["layers"][0]["digest"].removeprefix("sha256:")
        (tmp_path / "layer.tar").write_bytes(tar.extractfile(layer_name).read())  # type: ignore[union-attr]
    with tarfile.open(tmp_path / "layer.tar") as layer:
        members = {m.name: m for m in layer.getmembers()}
    assert members["usr"].isdir() and members["usr/bin"].isdir()
    assert members["usr/bin/pause"].isfile() and members["usr/bin/pause"].mode == 0o755
    assert members["pause"].issym() and members["pause"].linkname == "/usr/bin/pause"


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    a, da = _write(tmp_path, "a.tar")
    b, db = _write(tmp_path, "b.tar")
    assert da == db
    assert a.read_bytes() == b.read_bytes()
