"""`lab up --config`: the kind-like Cluster file, its patches merged into the lab's kubeadm documents per node, and its
extraMounts placed in the node roots."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.lab.clusterconfig import apply_cluster_config, load_cluster_config, merge, save_cluster_config
from pykubeadm.lab.nodes import init_config, join_config, lab_node

CLUSTER = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  apiServer:
    extraArgs:
    - {name: encryption-provider-config, value: /etc/kubernetes/enc/enc.yaml}
    extraVolumes:
    - {name: enc, hostPath: /etc/kubernetes/enc, mountPath: /etc/kubernetes/enc, readOnly: true}
nodes:
- role: control-plane
  extraMounts:
  - {hostPath: ./enc.yaml, containerPath: /etc/kubernetes/enc/enc.yaml}
  kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    maxPods: 50
- role: worker
- role: worker
  kubeadmConfigPatches:
  - |
    kind: JoinConfiguration
    nodeRegistration:
      taints: [{key: dedicated, value: db, effect: NoSchedule}]
"""


def test_merge_maps_named_lists_and_plain_lists() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "args": [{"name": "p", "value": "1"}, {"name": "q", "value": "2"}]}
    patch = {"a": {"y": [3]}, "args": [{"name": "q", "value": "9"}, {"name": "r", "value": "3"}]}
    assert merge(base, patch) == {
        "a": {"x": 1, "y": [3]},
        "args": [{"name": "p", "value": "1"}, {"name": "q", "value": "9"}, {"name": "r", "value": "3"}],
    }
    assert base["args"][1]["value"] == "2"  # unchanged


def test_nodes_patches_and_mounts(tmp_path: Path) -> None:
    (tmp_path / "enc.yaml").write_text("kind: EncryptionConfiguration\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    cfg = load_cluster_config(tmp_path / "cluster.yaml")
    assert (cfg.count("control-plane"), cfg.count("worker")) == (1, 2)
    lab = tmp_path / "lab"
    state = lab / ".lab"
    save_cluster_config(state, cfg)
    cp, w1, w2 = lab_node(lab, 0), lab_node(lab, 1), lab_node(lab, 2)
    docs = apply_cluster_config(state, cp.name, True, cp.root, init_config(cp, "abcdef.0123456789abcdef", "sqlite"))
    cluster = next(d for d in docs if d["kind"] == "ClusterConfiguration")
    assert {"name": "encryption-provider-config", "value": "/etc/kubernetes/enc/enc.yaml"} in cluster["apiServer"][
        "extraArgs"
    ]
    volumes = {v["name"] for v in cluster["apiServer"]["extraVolumes"]}
    assert volumes == {"pykubeadm-state", "enc"}  # the lab's own SQLite volume is kept
    kubelet = next(d for d in docs if d["kind"] == "KubeletConfiguration")
    # The patch is merged into the KubeletConfiguration the lab generates (serverTLSBootstrap for its serving CSRs).
    assert kubelet == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "serverTLSBootstrap": True,
        "maxPods": 50,
    }
    assert (cp.root / "etc/kubernetes/enc/enc.yaml").read_text() == "kind: EncryptionConfiguration\n"

    j1 = apply_cluster_config(state, w1.name, False, w1.root, join_config(w1, "127.0.10.1:6443", "t", "sha256:x"))
    j2 = apply_cluster_config(state, w2.name, False, w2.root, join_config(w2, "127.0.10.1:6443", "t", "sha256:x"))
    assert "taints" not in j1[0]["nodeRegistration"] and len(j1) == 1
    assert j2[0]["nodeRegistration"]["taints"] == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    assert j2[0]["nodeRegistration"]["name"] == w2.name  # merged, not replaced
    assert not (w1.root / "etc/kubernetes/enc").exists()


def test_without_a_lab_config_documents_are_unchanged(tmp_path: Path) -> None:
    node = lab_node(tmp_path, 0)
    docs = init_config(node, "abcdef.0123456789abcdef", "sqlite")
    assert apply_cluster_config(tmp_path / ".lab", node.name, True, node.root, docs) == docs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Cluster\napiVersion: v1\n", "want kind Cluster and apiVersion"),
        ("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking: {}\n", 'unknown field "networking"'),
        (
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes: [{role: bastion}]\n",
            'nodes[0].role: Unsupported value: "bastion"',
        ),
        (
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes: [{role: worker}]\n",
            "at least one node has role control-plane",
        ),
        (
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes: [{role: control-plane, extraMounts: [{hostPath: ./nope, containerPath: /x}]}]\n",
            "nodes[0].extraMounts[0].hostPath",
        ),
        (
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nkubeadmConfigPatches: ['apiServer: {}']\n",
            "kubeadmConfigPatches[0]: a patch is a YAML object with the kind",
        ),
    ],
)
def test_bad_lab_configs_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "cluster.yaml").write_text(text)
    with pytest.raises(KubeadmError) as e:
        load_cluster_config(tmp_path / "cluster.yaml")
    assert message in str(e.value) and str(tmp_path / "cluster.yaml") in str(e.value)


def test_a_patch_for_an_unknown_kind_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nkubeadmConfigPatches:\n- 'kind: Kubeconfig'\n"
    )
    save_cluster_config(tmp_path / ".lab", load_cluster_config(tmp_path / "cluster.yaml"))
    node = lab_node(tmp_path, 0)
    with pytest.raises(KubeadmError, match="kind 'Kubeconfig' matches no document"):
        apply_cluster_config(tmp_path / ".lab", node.name, True, node.root, init_config(node, "a.b", "sqlite"))
    assert yaml.safe_load((tmp_path / ".lab" / "cluster-config.yaml").read_text())["patches"] == [
        {"kind": "Kubeconfig"}
    ]
