"""The archives pykubeadm writes are images other tools accept: skopeo (offline) reads the busybox and pause
images' configs from them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pykubeadm.containerd.images import build_pause_image
from pykubeadm.testing.images import BUSYBOX, write_busybox_image

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo is not installed (Debian: skopeo)"),
]


def _inspect(archive: Path) -> dict:
    out = subprocess.run(
        ["skopeo", "inspect", "--config", f"oci-archive:{archive}"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not BUSYBOX.is_file(), reason="Debian's busybox-static is not installed")
def test_skopeo_reads_the_busybox_image(tmp_path: Path) -> None:
    config = _inspect(write_busybox_image(tmp_path / "busybox.tar", "localhost:5001/busybox:latest"))
    assert config["config"]["Cmd"] == ["sh"]
    assert config["os"] == "linux"


def test_skopeo_reads_the_pause_image(tmp_path: Path) -> None:
    config = _inspect(build_pause_image(tmp_path / "pause.tar", tmp_path / "cache"))
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert config["config"]["User"] == "65535:65535"
