"""`pykubeadm reset` on a node root written by an offline `init` (no daemons): prompt, dry-run, messages, confinement."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from tests.conftest import OFFLINE_SKIP, run_pykubeadm

BASE = ["--node-name", "node1", "--apiserver-advertise-address", "127.0.10.1", "--ignore-preflight-errors=all"]

CLOSING = (
    "\nThe reset process does not perform cleanup of CNI plugin configuration,\n"
    "network filtering rules and kubeconfig files.\n\n"
    "For information on how to perform this cleanup manually, please see:\n"
    "    https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/\n\n"
)
FILES_LINE = (
    "[reset] Deleting files: [/etc/kubernetes/admin.conf /etc/kubernetes/super-admin.conf "
    "/etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/controller-manager.conf "
    "/etc/kubernetes/scheduler.conf]"
)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node root after an offline init without the kubelet (so nothing runs); copied per test."""
    root = tmp_path_factory.mktemp("tmpl") / "node1"
    res = run_pykubeadm("init", *BASE, f"--skip-phases={OFFLINE_SKIP},kubelet-start", root=root)
    assert res.returncode == 0, res.stderr
    return root


@pytest.fixture
def node(template: Path, tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "node1"
    shutil.copytree(template, root, symlinks=True)
    (root / "var/lib/kubelet").mkdir(parents=True, exist_ok=True)
    (root / "var/lib/kubelet/config.yaml").write_text("kind: KubeletConfiguration\n")
    (root / "var/lib/etcd/member").mkdir(parents=True)
    (root / "var/lib/etcd/member/db").write_text("x")
    (root / "var/lib/pykubeadm").mkdir(parents=True)
    (root / "var/lib/pykubeadm/state.db").write_text("sqlite")
    (root / "var/log/pykubeadm").mkdir(parents=True)
    (root / "var/log/pykubeadm/kubelet.log").write_text("log")
    return root


def test_force_removes_every_kubeadm_file(node: Path) -> None:
    assert "etc/kubernetes/pki/ca.key" in _files(node)
    res = run_pykubeadm("reset", "-f", root=node)
    assert res.returncode == 0, res.stderr
    assert _files(node) == set()
    out = res.stdout
    assert "[preflight] Running pre-flight checks" in out
    assert "Are you sure" not in out
    # no admin.conf server reachable: kubeadm's warning, then the etcd data dir from the manifest
    assert "[reset] Unable to fetch the kubeadm-config ConfigMap from cluster: failed to get config map:" in res.stderr
    assert "[reset] No kubeadm config, using etcd pod spec to get data directory" in res.stderr
    assert "[reset] Deleted contents of the etcd data directory: /var/lib/etcd" in out
    assert "[reset] Stopping the kubelet service" in out
    assert '[reset] Unmounting mounted directories in "/var/lib/kubelet"' in out
    assert (
        "[reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]"
        in out
    )
    assert FILES_LINE in out
    assert "[reset] Deleting the built-in control plane's state: [/var/lib/pykubeadm /var/log/pykubeadm]" in out
    assert out.endswith(CLOSING)
    assert str(node) not in out  # node paths only
    # the directories themselves stay, empty (kubeadm deletes contents)
    assert (node / "etc/kubernetes/pki").is_dir() and (node / "var/lib/etcd").is_dir()


def test_unreachable_apiserver_does_not_stall(node: Path) -> None:
    t0 = time.monotonic()
    res = run_pykubeadm("reset", "-f", "--dry-run", root=node)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 < 20
    assert (
        '[reset] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...' in res.stdout
    )
    assert "[reset] Use 'kubeadm init phase upload-config --config your-config-file' to re-upload it." in res.stdout


def test_dry_run_deletes_nothing(node: Path) -> None:
    before = _files(node)
    res = run_pykubeadm("reset", "--force", "--dry-run", "--cleanup-tmp-dir", root=node)
    assert res.returncode == 0, res.stderr
    assert _files(node) == before
    out = res.stdout
    for line in [
        "[reset] Would remove the etcd member on this node from the etcd cluster",
        "[reset] Would delete contents of the etcd data directory: /var/lib/etcd",
        "[reset] Would stop the kubelet service",
        '[reset] Would unmount mounted directories in "/var/lib/kubelet"',
        "[reset] Would remove Kubernetes-managed containers",
        "[reset] Would delete contents of directories: [/etc/kubernetes/manifests /etc/kubernetes/pki "
        "/etc/kubernetes/tmp]",
        FILES_LINE.replace("[reset] Deleting files", "[reset] Would delete files"),
        "[reset] Would delete the built-in control plane's state: [/var/lib/pykubeadm /var/log/pykubeadm]",
    ]:
        assert line in out, f"{line!r} not in\n{out}"


@pytest.mark.parametrize("answer", ["n\n", "\n", "yes\n", ""])
def test_prompt_aborts_unless_y(node: Path, answer: str) -> None:
    (node / "etc/kubernetes/admin.conf").unlink()  # no cluster to ask: keeps the test fast
    before = _files(node)
    res = run_pykubeadm("reset", root=node, input=answer)
    assert res.returncode == 1
    assert (
        "[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted.\n"
        "[reset] Are you sure you want to proceed? [y/N]: " in res.stdout
    )
    assert "aborted reset operation" in res.stderr
    assert "[preflight] Running pre-flight checks" not in res.stdout
    assert _files(node) == before


@pytest.mark.parametrize("answer", ["y\n", "Y\n"])
def test_prompt_proceeds_on_y(node: Path, answer: str) -> None:
    (node / "etc/kubernetes/admin.conf").unlink()
    res = run_pykubeadm("reset", root=node, input=answer)
    assert res.returncode == 0, res.stderr
    assert "[reset] Are you sure you want to proceed? [y/N]: [preflight] Running pre-flight checks" in res.stdout
    assert _files(node) == set()


def test_worker_without_etcd_manifest(node: Path) -> None:
    (node / "etc/kubernetes/admin.conf").unlink()  # a worker has no admin.conf
    (node / "etc/kubernetes/manifests/etcd.yaml").unlink()
    res = run_pykubeadm("reset", "-f", root=node)
    assert res.returncode == 0, res.stderr
    assert (
        "[reset] No etcd config found. Assuming external etcd\n"
        "[reset] Please, manually reset etcd to prevent further issues\n" in res.stdout
    )
    assert "etcd data directory" not in res.stdout
    assert "kubeadm-config" not in res.stdout + res.stderr  # no admin.conf: nothing to read, nothing said
    assert (node / "var/lib/etcd/member/db").exists()  # not ours to delete


def test_config_file_cert_dir_and_tmp_dir(node: Path, tmp_path: Path) -> None:
    (node / "etc/kubernetes/tmp/kubeadm-backup").mkdir(parents=True)
    (node / "etc/kubernetes/tmp/kubeadm-backup/x").write_text("x")
    (node / "srv/pki").mkdir(parents=True)
    (node / "srv/pki/ca.crt").write_text("x")
    cfg = tmp_path / "reset.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "ResetConfiguration",
                "certificatesDir": "/srv/pki",
                "cleanupTmpDir": True,
                "force": True,
            }
        )
    )
    res = run_pykubeadm("reset", "--config", str(cfg), root=node)
    assert res.returncode == 0, res.stderr
    assert '[reset] WARNING: Cleaning a non-default certificates directory: "/srv/pki"' in res.stderr
    assert "[/etc/kubernetes/manifests /var/lib/kubelet /srv/pki /etc/kubernetes/tmp]" in res.stdout
    assert not (node / "srv/pki/ca.crt").exists()
    assert not (node / "etc/kubernetes/tmp/kubeadm-backup").exists()
    assert (node / "etc/kubernetes/pki/ca.crt").exists()  # not the configured certificates dir


def test_never_touches_anything_outside_the_root(node: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (outside / "admin.conf").write_text("keep")
    import shutil

    shutil.rmtree(node / "etc/kubernetes/pki")
    (node / "etc/kubernetes/pki").symlink_to(outside)
    (node / "etc/kubernetes/manifests/link").symlink_to(outside)
    (node / "etc/kubernetes/admin.conf").unlink()
    (node / "etc/kubernetes/admin.conf").symlink_to(outside / "admin.conf")
    res = run_pykubeadm("reset", "-f", "--cert-dir", "/../../outside", root=node)
    assert res.returncode == 0, res.stderr
    assert (outside / "precious").read_text() == "keep"
    assert (outside / "admin.conf").read_text() == "keep"
    assert "outside the node's root directory" in res.stderr
    assert not (node / "etc/kubernetes/manifests/link").is_symlink()  # the link itself is removed, not followed
    assert not (node / "etc/kubernetes/admin.conf").is_symlink()


def test_skip_phases_and_single_phase(node: Path) -> None:
    (node / "etc/kubernetes/admin.conf").unlink()
    res = run_pykubeadm("reset", "-f", "--skip-phases", "cleanup-node", root=node)
    assert res.returncode == 0, res.stderr
    assert "Deleting files" not in res.stdout
    assert (node / "etc/kubernetes/kubelet.conf").exists()
    assert not (node / "var/lib/etcd/member").exists()
    res = run_pykubeadm("reset", "phase", "cleanup-node", root=node)
    assert res.returncode == 0, res.stderr
    assert FILES_LINE in res.stdout
    assert "[reset] Would" not in res.stdout
    assert "The reset process does not perform cleanup" not in res.stdout
    assert _files(node) == set()
    res = run_pykubeadm("reset", "-f", "--skip-phases", "bogus", root=node)
    assert res.returncode == 3
    assert "bogus" in res.stderr


def test_help_lists_phases_and_flags() -> None:
    res = run_pykubeadm("reset", "--help")
    assert res.returncode == 0
    for text in ["preflight", "remove-etcd-member", "cleanup-node", "-f, --force", "--cleanup-tmp-dir", "--cri-socket"]:
        assert text in res.stdout
