"""`--patches` directories: kubeadm's file-name convention, the three patch types, order, reporting, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.manifests import ClusterInputs, build_control_plane_pod
from pykubeadm.util.patches import (
    PatchError,
    PatchManager,
    merge_patch,
    parse_file_name,
    strategic_merge_patch,
)


def pod() -> dict:
    return build_control_plane_pod("kube-apiserver", ClusterInputs(advertise_address="10.0.0.1", node_name="n"))


@pytest.mark.parametrize(
    ("name", "target", "ptype"),
    [
        ("kube-apiserver.yaml", "kube-apiserver", "application/strategic-merge-patch+json"),
        ("kube-apiserver0+merge.json", "kube-apiserver", "application/merge-patch+json"),
        ("etcd-foo+json.yaml", "etcd", "application/json-patch+json"),
        ("kubeletconfiguration+strategic.json", "kubeletconfiguration", "application/strategic-merge-patch+json"),
        ("corednsdeployment.yaml", "corednsdeployment", "application/strategic-merge-patch+json"),
        ("kube-controller-manager_x.yaml", "kube-controller-manager", "application/strategic-merge-patch+json"),
    ],
)
def test_file_names(name: str, target: str, ptype: str) -> None:
    assert parse_file_name(name) == (target, ptype)


@pytest.mark.parametrize("name", ["kube-apiserver.yml", "README.md", "kube-proxy.yaml", "foo+json.yaml"])
def test_ignored_names(name: str) -> None:
    with pytest.raises(LookupError):
        parse_file_name(name)


def test_plus_without_type_is_an_error() -> None:
    with pytest.raises(PatchError, match=r"unknown or missing patch type after '\+'"):
        parse_file_name("kube-apiserver+bogus.yaml")


def write(d: Path, name: str, text: str) -> None:
    (d / name).write_text(text)


def test_three_types_in_alphabetical_order_with_report(tmp_path: Path) -> None:
    # strategic: merge into the container by name, add a volume, add an env var
    write(
        tmp_path,
        "kube-apiserver0.yaml",
        """
spec:
  containers:
  - name: kube-apiserver
    env:
    - name: FOO
      value: bar
    volumeMounts:
    - mountPath: /etc/ssl/certs
      readOnly: false
  volumes:
  - name: extra
    hostPath:
      path: /srv
""",
    )
    # merge: replace resources.requests.cpu, drop an annotation map key via null
    write(tmp_path, "kube-apiserver1+merge.json", json.dumps({"metadata": {"labels": {"tier": None, "extra": "yes"}}}))
    # json: replace the image (documents apply in order inside a file)
    write(
        tmp_path,
        "kube-apiserver2+json.yaml",
        """
- op: replace
  path: /spec/containers/0/image
  value: example.com/kube-apiserver:v1.33.9
---
- op: add
  path: /spec/containers/0/command/-
  value: --v=4
""",
    )
    write(tmp_path, "etcd.yaml", "metadata:\n  labels:\n    x: y\n")
    write(tmp_path, "notes.txt", "ignored")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "kube-apiserver.yaml", "spec: {hostNetwork: false}")
    lines: list[str] = []
    pm = PatchManager.load(tmp_path, out=lines.append)
    out = pm.apply("kube-apiserver", pod())
    assert lines == [
        '[patches] Ignoring file "notes.txt": the file extension must be one of [json yaml]',
        '[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-apiserver"',
        '[patches] Applied patch of type "application/merge-patch+json" to target "kube-apiserver"',
        '[patches] Applied patch of type "application/json-patch+json" to target "kube-apiserver"',
        '[patches] Applied patch of type "application/json-patch+json" to target "kube-apiserver"',
    ]
    c = out["spec"]["containers"][0]
    assert c["env"] == [{"name": "FOO", "value": "bar"}]
    assert {"mountPath": "/etc/ssl/certs", "name": "ca-certs", "readOnly": False} in c["volumeMounts"]
    assert len(c["volumeMounts"]) == 2
    assert [v["name"] for v in out["spec"]["volumes"]] == ["ca-certs", "k8s-certs", "extra"]
    assert out["metadata"]["labels"] == {"component": "kube-apiserver", "extra": "yes"}
    assert c["image"] == "example.com/kube-apiserver:v1.33.9"
    assert c["command"][-1] == "--v=4" and c["command"][0] == "kube-apiserver"
    assert out["spec"]["hostNetwork"] is True  # the sub-directory is not read
    assert pm.apply("kube-scheduler", {"a": 1}) == {"a": 1}


def test_strategic_directives() -> None:
    base = pod()
    out = strategic_merge_patch(
        base,
        {
            "spec": {
                "containers": [
                    {
                        "name": "kube-apiserver",
                        "volumeMounts": [{"mountPath": "/etc/ssl/certs", "$patch": "delete"}],
                        "command": ["kube-apiserver", "--secure-port=1"],
                    }
                ],
                "volumes": [{"name": "only", "hostPath": {"path": "/x"}}, {"$patch": "replace"}],
                "securityContext": {"$patch": "delete"},
            }
        },
        {"containers": "name", "volumes": "name", "volumeMounts": "mountPath"},
    )
    c = out["spec"]["containers"][0]
    assert [m["mountPath"] for m in c["volumeMounts"]] == ["/etc/kubernetes/pki"]
    assert c["command"] == ["kube-apiserver", "--secure-port=1"]  # primitive lists are replaced
    assert out["spec"]["volumes"] == [{"name": "only", "hostPath": {"path": "/x"}}]
    assert "securityContext" not in out["spec"]
    assert base["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/etc/ssl/certs"  # input untouched


def test_strategic_without_merge_keys_replaces_lists() -> None:
    cfg = {"clusterDNS": ["10.96.0.10"], "authentication": {"anonymous": {"enabled": False}}}
    out = strategic_merge_patch(cfg, {"clusterDNS": ["10.0.0.10"], "authentication": {"anonymous": {"enabled": True}}})
    assert out == {"clusterDNS": ["10.0.0.10"], "authentication": {"anonymous": {"enabled": True}}}


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"c": 2}, "l": [2]}


def test_bad_json_patch_names_target(tmp_path: Path) -> None:
    write(tmp_path, "kube-apiserver+json.json", '[{"op": "remove", "path": "/spec/nope"}]')
    pm = PatchManager.load(tmp_path, out=lambda _: None)
    with pytest.raises(
        PatchError,
        match='could not apply the following patch of type "application/json-patch\\+json" to target "kube-apiserver"',
    ):
        pm.apply("kube-apiserver", pod())


def test_missing_dir_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(PatchError, match="could not list patch files"):
        PatchManager.load(tmp_path / "nope")
    write(tmp_path, "etcd.yaml", "  \n")
    with pytest.raises(PatchError, match="is empty"):
        PatchManager.load(tmp_path)
