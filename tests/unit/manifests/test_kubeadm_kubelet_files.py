"""The kubelet files kubeadm writes (§9.5, §4.2/§4.6): kubeadm-flags.env and config.yaml, modes, patches, messages."""

from __future__ import annotations

import stat
from pathlib import Path
from types import SimpleNamespace

import yaml

from pykubeadm.api.componentconfigs import default_kubelet_config
from pykubeadm.layout import Layout
from pykubeadm.phases.kubelet import build_kubelet_args, env_file_content, write_kubelet_files
from pykubeadm.util.patches import PatchManager

SOCK = "unix:///var/run/containerd/containerd.sock"
PAUSE = "registry.k8s.io/pause:3.10"


def kubelet_cfg() -> dict:
    return default_kubelet_config(cluster_dns="10.96.0.10", systemd_resolved=False)


def test_default_flags_line() -> None:
    args = build_kubelet_args(cri_socket=SOCK, pause_image=PAUSE, node_name="node1", hostname="node1")
    assert env_file_content(args) == (
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
        '--pod-infra-container-image=registry.k8s.io/pause:3.10"\n'
    )


def test_hostname_override_extra_args_taints_and_quoting() -> None:
    taints = [
        SimpleNamespace(key="dedicated", value="infra", effect="NoSchedule"),
        SimpleNamespace(key="gpu", value="", effect="NoExecute"),
    ]
    args = build_kubelet_args(
        cri_socket=SOCK,
        pause_image=PAUSE,
        node_name="node-a",
        hostname="vm",
        kubelet_extra_args=[
            {"name": "node-ip", "value": "127.0.10.2"},
            {"name": "pod-infra-container-image", "value": "my/pause:1"},
            {"name": "node-labels", "value": 'a="b"'},
        ],
        taints=taints,
        register_taints=True,
    )
    assert args == [
        "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
        "--hostname-override=node-a",
        "--node-ip=127.0.10.2",
        '--node-labels=a="b"',
        "--pod-infra-container-image=my/pause:1",
        "--register-with-taints=dedicated=infra:NoSchedule,gpu:NoExecute",
    ]
    assert '--node-labels=a=\\"b\\"' in env_file_content(args)
    # taints are only passed on worker joins; the hostname-override extra arg decides the node name
    args = build_kubelet_args(
        cri_socket=SOCK,
        pause_image=PAUSE,
        node_name="x",
        hostname="vm",
        taints=taints,
        kubelet_extra_args=[("hostname-override", "vm")],
    )
    assert not any(a.startswith("--register-with-taints") for a in args)
    assert args.count("--hostname-override=vm") == 1


def test_write_files_modes_content_and_messages(tmp_path: Path) -> None:
    layout = Layout(root=tmp_path)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "kubeletconfiguration+merge.yaml").write_text("maxPods: 50\nclusterDNS: [10.96.0.53]\n")
    lines: list[str] = []
    files = write_kubelet_files(
        layout,
        kubelet_config=kubelet_cfg(),
        cri_socket=SOCK,
        pause_image=PAUSE,
        node_name="vm",
        hostname="vm",
        patches=PatchManager.load(patches, out=lines.append),
        out=lines.append,
    )
    assert lines == [
        '[kubelet-start] Writing kubelet environment file with flags to file "/var/lib/kubelet/kubeadm-flags.env"',
        '[patches] Applied patch of type "application/merge-patch+json" to target "kubeletconfiguration"',
        '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"',
    ]
    assert files.env_file == tmp_path / "var/lib/kubelet/kubeadm-flags.env"
    for f in (files.env_file, files.config):
        assert stat.S_IMODE(f.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "var/lib/kubelet").stat().st_mode) == 0o700
    text = files.config.read_text()
    cfg = yaml.safe_load(text)
    assert cfg["apiVersion"] == "kubelet.config.k8s.io/v1beta1" and cfg["kind"] == "KubeletConfiguration"
    want = {
        "staticPodPath": "/etc/kubernetes/manifests",
        "clusterDomain": "cluster.local",
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "rotateCertificates": True,
        "cgroupDriver": "systemd",
        "clusterDNS": ["10.96.0.53"],
        "maxPods": 50,
    }
    assert {k: cfg[k] for k in want} == want
    assert cfg["authentication"]["x509"]["clientCAFile"] == "/etc/kubernetes/pki/ca.crt"
    assert cfg["authentication"]["anonymous"]["enabled"] is False
    assert cfg["authentication"]["webhook"]["enabled"] is True
    assert cfg["authorization"]["mode"] == "Webhook"
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith((" ", "-"))]
    assert keys == sorted(keys)
    assert 'containerRuntimeEndpoint: ""' in text
    assert files.instance_config is None


def test_node_local_cri_socket_gate(tmp_path: Path) -> None:
    lines: list[str] = []
    files = write_kubelet_files(
        Layout(root=tmp_path),
        kubelet_config=kubelet_cfg(),
        cri_socket=SOCK,
        pause_image=PAUSE,
        node_name="vm",
        hostname="vm",
        feature_gates={"NodeLocalCRISocket": True},
        out=lines.append,
    )
    assert (
        files.env_file.read_text() == 'KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10"\n'
    )
    assert files.instance_config is not None
    assert yaml.safe_load(files.instance_config.read_text())["containerRuntimeEndpoint"] == SOCK
    assert yaml.safe_load(files.config.read_text())["containerRuntimeEndpoint"] == SOCK
    assert lines[1:] == [
        '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/instance-config.yaml"',
        '[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kubeletconfiguration"',
        '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"',
    ]
