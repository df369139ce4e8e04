"""Which runtime runs a Pod: with a CRI runtime, the images only the built-in runtime can run stay built-in and every
other image goes to CRI; without one, everything is built-in. The endpoint is a node path under the node root."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pykubeadm.cri.errors import CRIEndpointError
from pykubeadm.kubelet.runtimeroute import builtin_only, node_endpoint, pod_runtime
from pykubeadm.layout import Layout


@pytest.mark.parametrize(
    "image",
    [
        "registry.k8s.io/kube-apiserver:v1.33.0",
        "registry.k8s.io/kube-proxy:v1.33.0",
        "registry.k8s.io/coredns/coredns:v1.12.0",
        "registry.k8s.io/etcd:3.5.21-0",
        "docker.io/kindest/kindnetd:v20250512-df8de77b",
        "docker.io/rancher/local-path-provisioner:v0.0.31",
        "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
    ],
)
def test_images_only_the_builtin_runtime_runs(image: str) -> None:
    assert builtin_only(image)
    assert pod_runtime({"containers": [{"name": "c", "image": image}]}, cri=True) == "builtin"


@pytest.mark.parametrize(
    "image", ["nginx", "busybox:1.36", "localhost:5001/busybox", "python:3", "registry.k8s.io/pause:3.10"]
)
def test_every_other_image_goes_to_cri(image: str) -> None:
    assert not builtin_only(image)
    assert pod_runtime({"containers": [{"name": "c", "image": image}]}, cri=True) == "cri"
    assert pod_runtime({"containers": [{"name": "c", "image": image}]}, cri=False) == "builtin"


def test_a_pod_with_one_builtin_only_image_runs_builtin() -> None:
    spec = {
        "initContainers": [{"name": "i", "image": "busybox"}],
        "containers": [{"name": "p", "image": "registry.k8s.io/kube-proxy:v1.33.0"}],
    }
    assert pod_runtime(spec, cri=True) == "builtin"


def test_the_endpoint_is_read_under_the_node_root(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    default = "unix:///run/containerd/containerd.sock"
    assert node_endpoint(default, layout) is None  # no socket there: the node has no runtime
    assert node_endpoint("", layout) is None
    path = tmp_path / "run/containerd/containerd.sock"
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert node_endpoint(default, layout) == f"unix://{path}"
        assert node_endpoint(f"unix://{path}", layout) == f"unix://{path}"  # already a path under the root
    with pytest.raises(CRIEndpointError, match="no URL scheme"):
        node_endpoint("/run/containerd/containerd.sock", layout)
