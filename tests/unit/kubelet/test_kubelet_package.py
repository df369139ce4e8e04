"""The built-in kubelet's installed version (kubelet.package) and the version the kubelet reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.kubelet.builtin import runtime
from pykubeadm.kubelet.kubelet import kubelet_version
from pykubeadm.kubelet.node import initial_node
from pykubeadm.kubelet.package import KUBELET_VERSION_FILE, ensure_installed, install_kubelet, installed_version
from pykubeadm.layout import Layout


def test_kubelet_start_installs_the_clusters_version_once(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    assert installed_version(layout) is None
    assert ensure_installed(layout, "v1.32.4") == "v1.32.4"
    assert (tmp_path / KUBELET_VERSION_FILE.lstrip("/")).read_text() == "v1.32.4\n"
    # a later join or init (after reset) finds the package installed: it is not changed behind the operator's back
    assert ensure_installed(layout, "v1.33.0") == "v1.32.4"
    assert installed_version(layout) == "v1.32.4"


def test_upgrading_the_package_changes_the_version(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    install_kubelet(layout, "v1.32.4")
    install_kubelet(layout, "v1.33.0")
    assert installed_version(layout) == "v1.33.0"


def test_a_bad_version_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    with pytest.raises(KubeadmError, match=r'invalid kubelet version "1\.33"'):
        install_kubelet(layout, "1.33")
    assert installed_version(layout) is None
    assert ensure_installed(layout, "stable") == c.KUBERNETES_VERSION  # not a release: nothing installed
    assert installed_version(layout) is None


def test_the_kubelet_reports_the_installed_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runtime.COMPONENT_VERSION_ENV, raising=False)
    layout = Layout(root=tmp_path)
    assert kubelet_version(layout) == c.KUBERNETES_VERSION  # nothing installed: the built-in components' own
    install_kubelet(layout, "v1.32.4")
    assert kubelet_version(layout) == "v1.32.4"
    node = initial_node("n1", hostname="n1", node_ip="127.0.0.1", version=kubelet_version(layout), root=tmp_path)
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.4"
