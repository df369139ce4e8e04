"""`pykubeadm init`: offline phases under --root-dir, dry-run touching nothing, phase sub-commands, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import OFFLINE_SKIP, run_pykubeadm

BASE = ["--node-name", "node1", "--apiserver-advertise-address", "127.0.10.1", "--ignore-preflight-errors=all"]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_offline_init_writes_kubeadms_files_without_root(tmp_path: Path, own_netns: list[str]) -> None:
    root = tmp_path / "node1"  # its kubelet and control plane run in a network namespace of the test's own
    res = run_pykubeadm("init", *BASE, f"--skip-phases={OFFLINE_SKIP}", root=root, netns=own_netns)
    assert res.returncode == 0, res.stderr
    files = _files(root)
    for f in [
        "etc/kubernetes/pki/ca.crt",
        "etc/kubernetes/pki/ca.key",
        "etc/kubernetes/pki/apiserver.crt",
        "etc/kubernetes/pki/etcd/ca.crt",
        "etc/kubernetes/pki/sa.key",
        "etc/kubernetes/pki/sa.pub",
        "etc/kubernetes/admin.conf",
        "etc/kubernetes/super-admin.conf",
        "etc/kubernetes/kubelet.conf",
        "etc/kubernetes/controller-manager.conf",
        "etc/kubernetes/scheduler.conf",
        "etc/kubernetes/manifests/etcd.yaml",
        "etc/kubernetes/manifests/kube-apiserver.yaml",
        "etc/kubernetes/manifests/kube-controller-manager.yaml",
        "etc/kubernetes/manifests/kube-scheduler.yaml",
        "var/lib/kubelet/config.yaml",
        "var/lib/kubelet/kubeadm-flags.env",
    ]:
        assert f in files, f"{f} missing; have {sorted(files)}"
    for key in ["etc/kubernetes/pki/ca.key", "etc/kubernetes/pki/sa.key", "etc/kubernetes/admin.conf"]:
        assert (root / key).stat().st_mode & 0o777 == 0o600, key
    assert "[init] Using Kubernetes version: v1.33.0" in res.stdout
    assert '[certs] Generating "ca" certificate and key' in res.stdout


def test_dry_run_leaves_root_untouched_and_prints_join_command(tmp_path: Path) -> None:
    root = tmp_path / "node1"
    dry = tmp_path / "dry"
    res = run_pykubeadm("init", *BASE, "--dry-run", root=root, env={"KUBEADM_INIT_DRYRUN_DIR": str(dry)})
    assert res.returncode == 0, res.stderr
    assert not root.exists()
    assert (dry / "etc/kubernetes/pki/ca.crt").exists()
    assert "[dryrun] Would create Secret 'bootstrap-token-" in res.stdout
    assert "kubeadm join 127.0.10.1:6443 --token " in res.stdout
    assert "--discovery-token-ca-cert-hash sha256:" in res.stdout


def test_single_phase_and_all_subphase(tmp_path: Path) -> None:
    root = tmp_path / "n"
    res = run_pykubeadm("init", "phase", "certs", "ca", root=root)
    assert res.returncode == 0, res.stderr
    assert _files(root) == {"etc/kubernetes/pki/ca.crt", "etc/kubernetes/pki/ca.key"}
    res = run_pykubeadm(
        "init",
        "phase",
        "kubeconfig",
        "all",
        "--apiserver-advertise-address",
        "127.0.10.1",
        "--node-name",
        "n",
        root=root,
    )
    assert res.returncode == 0, res.stderr
    assert "etc/kubernetes/admin.conf" in _files(root)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pod-network-cidr", "10.0.0.0/33"], "networking.podSubnet"),
        (["--token", "not-a-token"], "token"),
        (["--service-cidr", "banana"], "networking.serviceSubnet"),
        (["--skip-phases", "certz"], "certz"),
    ],
)
def test_bad_flags_fail_with_the_field_and_leave_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    root = tmp_path / "n"
    res = run_pykubeadm("init", *BASE, *args, root=root)
    assert res.returncode != 0
    assert message in res.stderr
    assert _files(root) == set()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("apiVersion: [unclosed\n", "yaml"),
        ("apiVersion: kubeadm.k8s.io/v1beta9\nkind: ClusterConfiguration\n", "v1beta9"),
        ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfigurationX\n", "ClusterConfigurationX"),
        ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworkin: {}\n", "networkin"),
        ("apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n", "config migrate"),
    ],
)
def test_bad_config_files_fail_clearly_and_leave_nothing(tmp_path: Path, config: str, message: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config)
    root = tmp_path / "n"
    res = run_pykubeadm("init", "--config", str(cfg), "--ignore-preflight-errors=all", root=root)
    assert res.returncode != 0
    assert message.lower() in res.stderr.lower(), res.stderr
    assert _files(root) == set()


def test_config_mixed_with_flags_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
    res = run_pykubeadm("init", "--config", str(cfg), "--pod-network-cidr", "10.244.0.0/16", root=tmp_path / "n")
    assert res.returncode != 0
    assert "can not mix '--config' with arguments [pod-network-cidr]" in res.stderr


def test_bad_algorithm_in_config_names_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: DSA-1024\n"
        "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: n\n"
        "localAPIEndpoint:\n  advertiseAddress: 127.0.10.1\n"
    )
    root = tmp_path / "n"
    res = run_pykubeadm("init", "--config", str(cfg), "--ignore-preflight-errors=all", root=root)
    assert res.returncode != 0
    assert "encryptionAlgorithm" in res.stderr
    assert _files(root) == set()
