"""`pykubeadm upgrade` without a cluster: help texts (phase lists), argument errors, a node with no kubeconfig."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_pykubeadm


def test_apply_help_lists_its_phases() -> None:
    res = run_pykubeadm("upgrade", "apply", "--help")
    assert res.returncode == 0
    assert 'The "upgrade apply" command executes the following phases:' in res.stdout
    for line in ("preflight        Run preflight checks before upgrade", "  /kube-proxy", "post-upgrade"):
        assert line in res.stdout
    assert "kubeconfig" not in res.stdout.split("```")[1]  # the hidden phase
    for flag in ("--certificate-renewal", "--etcd-upgrade", "-y, --yes", "-f, --force", "--skip-phases"):
        assert flag in res.stdout


def test_node_help_and_phase_commands() -> None:
    res = run_pykubeadm("upgrade", "node", "phase", "--help")
    assert res.returncode == 0
    for name in ("preflight", "control-plane", "kubelet-config", "addon", "post-upgrade"):
        assert name in res.stdout


def test_apply_takes_at_most_one_version(tmp_path: Path) -> None:
    res = run_pykubeadm("upgrade", "apply", "v1.33.0", "v1.33.1", root=tmp_path)
    assert res.returncode == 2
    assert "accepts at most 1 arg(s), received 2" in res.stderr


def test_apply_without_admin_conf(tmp_path: Path) -> None:
    res = run_pykubeadm("upgrade", "apply", "v1.33.0", "-y", root=tmp_path)
    assert res.returncode == 1
    assert 'couldn\'t create a Kubernetes client from file "/etc/kubernetes/admin.conf"' in res.stderr


def test_node_on_a_worker_uses_kubelet_conf(tmp_path: Path) -> None:
    res = run_pykubeadm("upgrade", "node", root=tmp_path)
    assert res.returncode == 1
    assert 'couldn\'t create a Kubernetes client from file "/etc/kubernetes/kubelet.conf"' in res.stderr


def test_config_must_not_be_mixed_with_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "upgrade.yaml"
    cfg.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n")
    res = run_pykubeadm("upgrade", "plan", "--config", str(cfg), "--allow-experimental-upgrades", root=tmp_path)
    assert res.returncode == 3
    assert "can not mix '--config' with arguments [allow-experimental-upgrades]" in res.stderr
