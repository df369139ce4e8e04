"""What kubeadm's addon Pods need from the kubelet: kube-proxy's untyped hostPath (/lib/modules) is created when
missing, as containerd's CRI does for a bind-mount source (replicas sharing ports: test_ports.py)."""

from __future__ import annotations

from pykubeadm.kubelet import hostpath
from pykubeadm.layout import Layout


def test_an_untyped_host_path_that_is_missing_is_created_as_a_directory(tmp_path):
    layout = Layout(root=tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run/xtables.lock").write_text("")
    spec = {
        "volumes": [
            {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
            {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": ""}},
        ]
    }
    hostpath.prepare_host_paths(spec, layout)
    assert (tmp_path / "lib/modules").is_dir()
    assert (tmp_path / "run/xtables.lock").is_file()  # an existing file stays what it is
