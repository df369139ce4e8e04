"""Image → program mapping and container path → host path mapping of the built-in runtime."""

from __future__ import annotations

import sys

import pytest

from pykubeadm.kubelet import hostpath, imageref
from pykubeadm.kubelet.builtin import runtime
from pykubeadm.layout import Layout

APISERVER_SPEC = {
    "volumes": [
        {"name": "k8s-certs", "hostPath": {"path": "/etc/kubernetes/pki", "type": "DirectoryOrCreate"}},
        {"name": "ca-certs", "hostPath": {"path": "/etc/ssl/certs", "type": "DirectoryOrCreate"}},
        {"name": "kubeconfig", "hostPath": {"path": "/etc/kubernetes/scheduler.conf", "type": "FileOrCreate"}},
        {"name": "data", "hostPath": {"path": "/srv/data", "type": "DirectoryOrCreate"}},
        {"name": "cfg", "configMap": {"name": "x"}},
    ]
}
CONTAINER = {
    "volumeMounts": [
        {"name": "k8s-certs", "mountPath": "/etc/kubernetes/pki", "readOnly": True},
        {"name": "ca-certs", "mountPath": "/etc/ssl/certs"},
        {"name": "kubeconfig", "mountPath": "/etc/kubernetes/scheduler.conf"},
        {"name": "data", "mountPath": "/var/lib/pykubeadm", "subPath": "state"},
        {"name": "cfg", "mountPath": "/etc/cfg"},
    ]
}


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("registry.k8s.io/kube-apiserver:v1.33.0", ("registry.k8s.io/kube-apiserver", "kube-apiserver", "v1.33.0")),
        ("localhost:5000/etcd:3.5.21-0", ("localhost:5000/etcd", "etcd", "3.5.21-0")),
        ("kube-scheduler", ("kube-scheduler", "kube-scheduler", "")),
        (
            "r.io/kube-controller-manager:v1.32.1@sha256:abc",
            ("r.io/kube-controller-manager", "kube-controller-manager", "v1.32.1"),
        ),
    ],
)
def test_parse_image(image, expected):
    assert imageref.parse_image(image) == expected


def test_component_images_map_to_pykubeadm_component():
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        p = runtime.resolve_program(f"registry.k8s.io/{name}:v1.33.2")
        assert p.entrypoint == (sys.executable, "-m", "pykubeadm", "component", name)
        assert p.version == "v1.33.2"


def test_etcd_image_maps_to_etcd_binary():
    p = runtime.resolve_program("registry.k8s.io/etcd:3.5.21-0", etcd_binary="/opt/etcd")
    assert p.entrypoint == ("/opt/etcd",) and p.version == "3.5.21-0"


def test_unknown_image_is_an_image_error_not_a_crash():
    with pytest.raises(runtime.ImageError) as e:
        runtime.resolve_program("registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0")
    assert e.value.reason == "ErrImagePull"
    assert "kube-state-metrics" in e.value.message


def test_metrics_server_image_runs_the_built_in_metrics_server():
    p = runtime.resolve_program("registry.k8s.io/metrics-server/metrics-server:v0.7.2")
    assert p.entrypoint[-2:] == ("component", "metrics-server") and p.version == "v0.7.2"


def test_build_argv_replaces_binary_name_with_entrypoint():
    p = runtime.Program(("/usr/bin/etcd",), "etcd", "3.5")
    assert runtime.build_argv(p, ["etcd", "--name=a"], ["--x=1"]) == ["/usr/bin/etcd", "--name=a", "--x=1"]
    assert runtime.build_argv(p, [], ["--y"]) == ["/usr/bin/etcd", "--y"]


def test_path_mapping_through_hostpath_mounts(tmp_path):
    m = runtime.PathMapper.for_container(APISERVER_SPEC, CONTAINER, Layout(root=tmp_path))
    r = str(tmp_path)
    assert m.map_arg("--client-ca-file=/etc/kubernetes/pki/ca.crt") == f"--client-ca-file={r}/etc/kubernetes/pki/ca.crt"
    assert m.map_arg("--kubeconfig=/etc/kubernetes/scheduler.conf") == f"--kubeconfig={r}/etc/kubernetes/scheduler.conf"
    assert m.map_arg("--etcd-servers=sqlite:///var/lib/pykubeadm/state.db") == (
        f"--etcd-servers=sqlite://{r}/srv/data/state/state.db"
    )
    # not under a hostPath mount (or not a path): unchanged
    assert m.map_arg("--config=/etc/cfg/a.yaml") == "--config=/etc/cfg/a.yaml"
    assert m.map_arg("--etcd-servers=https://127.0.0.1:2379") == "--etcd-servers=https://127.0.0.1:2379"
    assert m.map_arg("--tls-cipher-suites=A,B") == "--tls-cipher-suites=A,B"
    assert m.map_arg("/etc/kubernetes/pki") == f"{r}/etc/kubernetes/pki"
    assert m.map_arg("--paths=/etc/ssl/certs/a.pem,/etc/other") == f"--paths={r}/etc/ssl/certs/a.pem,/etc/other"
    # prefix must match a whole path component
    assert m.map_arg("--x=/etc/kubernetes/pkiX") == "--x=/etc/kubernetes/pkiX"


def test_path_mapping_with_slash_root_is_identity():
    m = runtime.PathMapper.for_container(APISERVER_SPEC, CONTAINER, Layout())
    assert m.map_arg("--client-ca-file=/etc/kubernetes/pki/ca.crt") == "--client-ca-file=/etc/kubernetes/pki/ca.crt"


def test_prepare_host_paths_creates_directory_and_file(tmp_path):
    layout = Layout(root=tmp_path)
    hostpath.prepare_host_paths(APISERVER_SPEC, layout)
    assert (tmp_path / "etc/kubernetes/pki").is_dir()
    assert (tmp_path / "etc/kubernetes/scheduler.conf").is_file()
    with pytest.raises(hostpath.MountError):
        hostpath.prepare_host_paths(
            {"volumes": [{"name": "x", "hostPath": {"path": "/nope", "type": "Directory"}}]}, layout
        )


def test_container_env_carries_version_and_maps_values(tmp_path):
    m = runtime.PathMapper.for_container(APISERVER_SPEC, CONTAINER, Layout(root=tmp_path))
    p = runtime.Program(("x",), "kube-apiserver", "v1.33.1")
    ct = {"env": [{"name": "SSL_CERT_DIR", "value": "/etc/ssl/certs"}, {"name": "HTTP_PROXY", "value": "http://p"}]}
    env = runtime.container_env(ct, m, p, base={"PATH": "/bin", "PYKUBEADM_ROOT_DIR": "/x"})
    assert env == {
        "PATH": "/bin",
        "SSL_CERT_DIR": f"{tmp_path}/etc/ssl/certs",
        "HTTP_PROXY": "http://p",
        "PYKUBEADM_COMPONENT_VERSION": "v1.33.1",
    }
