"""`lab upgrade` in the network-namespace topology: a lab made at v1.32.4 (1 control plane + 1 worker) upgraded to
v1.33.0, every node's `upgrade` run inside its namespaces, the Nodes Ready at the new version through the host's
kubeconfig; `lab status` reads the lab from the host."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_lab import pykubeadm
from tests.e2e.test_lab_netns import netns_lab_up

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lab_dir = tmp_path_factory.mktemp("netns-upgrade") / "lab"
    with netns_lab_up(lab_dir, "--workers", "1", "--kubernetes-version", "v1.32.4"):
        yield lab_dir


def test_lab_status_and_upgrade_in_the_netns_topology(lab: Path) -> None:
    status = pykubeadm("lab", "status", "--dir", str(lab))
    rows = {line.split()[0]: line.split() for line in status.stdout.splitlines()[1:] if line.strip()}
    assert rows["lab-control-plane"][2] == "172.18.1.1" and rows["lab-worker"][2] == "172.18.1.2", status.stdout
    assert rows["lab-worker"][-1] == "Ready", status.stdout
    res = pykubeadm("lab", "upgrade", "--dir", str(lab), "v1.33.0", timeout=420)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    nodes = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab / "kubeconfig"), "get", "nodes", "--no-headers"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    versions = {line.split()[0]: (line.split()[1], line.split()[4]) for line in nodes.stdout.splitlines()}
    assert versions == {"lab-control-plane": ("Ready", "v1.33.0"), "lab-worker": ("Ready", "v1.33.0")}, nodes
