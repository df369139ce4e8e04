"""KubeletVersion in built-in mode: the installed built-in kubelet's version against the control plane's."""

from __future__ import annotations

from pathlib import Path

from pykubeadm.kubelet.package import install_kubelet
from pykubeadm.layout import Layout
from pykubeadm.preflight import FakeHost, InitCheckParams, init_node_checks
from pykubeadm.preflight.checks import InstalledKubeletVersionCheck

SKEW = (
    "the kubelet version is higher than the control plane version. This is not a supported version skew and may lead "
    'to a malfunctional cluster. Kubelet version: "1.33.0" Control plane version: "1.32.4"'
)


def test_a_newer_installed_kubelet_than_the_control_plane_is_refused(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    install_kubelet(layout, "v1.33.0")
    assert InstalledKubeletVersionCheck(layout, "v1.32.4").check() == ([], [SKEW])
    assert InstalledKubeletVersionCheck(layout, "v1.33.2").check() == ([], [])
    assert InstalledKubeletVersionCheck(layout, "v1.34.0").check() == ([], [])  # an older kubelet is within the skew


def test_a_kubelet_below_kubeadms_minimum_is_refused(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    install_kubelet(layout, "v1.29.9")
    assert InstalledKubeletVersionCheck(layout, "v1.33.0").check() == (
        [],
        ['Kubelet version "1.29.9" is lower than kubeadm can support. Please upgrade kubelet'],
    )


def test_a_node_without_an_installed_kubelet_passes(tmp_path: Path) -> None:
    """kubelet-start installs the cluster's version there."""
    assert InstalledKubeletVersionCheck(Layout(root=tmp_path), "v1.32.4").check() == ([], [])


def test_builtin_init_checks_read_the_installed_kubelet(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    install_kubelet(layout, "v1.33.0")
    params = InitCheckParams(
        layout=layout, advertise_address="127.0.10.1", node_name="n1", kubernetes_version="v1.32.4", host_runtime=False
    )
    checks = [ch for ch in init_node_checks(FakeHost(), params) if ch.name() == "KubeletVersion"]
    assert [ch.check() for ch in checks] == [([], [SKEW])]
