"""`upgrade plan|diff|apply|node` against a real built-in cluster: a v1.32.4 control plane with a local etcd (the real
etcd binary, with the lab's probe patches) and a worker on 127.0.30.x, upgraded to v1.33.0; checked with the files, the
API and the real kubectl."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from tests.conftest import run_pykubeadm

from pykubeadm.bootstrap.token import generate_token
from pykubeadm.lab.nodes import LabNode, init_config, join_config, lab_node, write_node_files
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import stop_kubelet
from pykubeadm.pki.certs import try_load_cert
from pykubeadm.pki.keys import public_key_pin

pytestmark = pytest.mark.integration

PREFIX = "127.0.30."
OLD, NEW = "v1.32.4", "v1.33.0"
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
ETCD_OLD, ETCD_NEW = "3.5.16-0", "3.5.21-0"


@dataclass
class Cluster:
    cp: LabNode
    worker: LabNode

    @property
    def admin(self) -> Path:
        return Layout(self.cp.root).admin_kubeconfig

    def kubectl(self, *args: str) -> str:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.admin), *args], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, res.stderr
        return res.stdout

    def upgrade(self, node: LabNode, *args: str, input: str = "") -> subprocess.CompletedProcess[str]:
        return run_pykubeadm("upgrade", *args, root=node.root, input=input)


def _image(path: Path) -> str:
    return str(yaml.safe_load(path.read_text())["spec"]["containers"][0]["image"])


def _client_cert(kubeconfig: Path) -> int:
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    return x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"])).serial_number


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    lab_dir = tmp_path_factory.mktemp("upgrade")
    cp, worker = lab_node(lab_dir, 0, PREFIX), lab_node(lab_dir, 1, PREFIX)
    token = generate_token()
    docs = init_config(cp, token, "etcd")
    docs[1]["kubernetesVersion"] = OLD
    write_node_files(cp, docs, "etcd")
    try:
        run_pykubeadm("init", "--config", str(cp.config_file), root=cp.root, check=True, input="")
        ca_hash = public_key_pin(try_load_cert(Layout(cp.root).pki_dir, "ca").public_key())  # type: ignore[arg-type]
        write_node_files(worker, join_config(worker, f"{cp.address}:6443", token, ca_hash))
        run_pykubeadm("join", "--config", str(worker.config_file), root=worker.root, check=True, input="")
        yield Cluster(cp, worker)
    finally:
        for node in (worker, cp):
            if node.root.exists():
                run_pykubeadm("reset", "-f", root=node.root, input="")
                stop_kubelet(Layout(node.root))


def test_plan_shows_the_upgrade_to_kubeadms_version(cluster: Cluster) -> None:
    res = cluster.upgrade(cluster.cp, "plan")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith(
        "[preflight] Running pre-flight checks.\n"
        '[upgrade/config] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...\n'
    )
    assert "[upgrade/versions] Cluster version: 1.32.4\n[upgrade/versions] kubeadm version: v1.33.0\n" in out
    assert "[upgrade/versions] Target version: v1.33.0\n" in out
    for comp in COMPONENTS:
        assert re.search(rf"^{comp}\s+lab-control-plane\s+v1\.32\.4\s+v1\.33\.0$", out, re.M), out
    for node in ("lab-control-plane", "lab-worker"):  # the kubelets were installed for the cluster's version
        assert re.search(rf"^kubelet\s+{node}\s+v1\.32\.4\s+v1\.33\.0$", out, re.M), out
    assert re.search(r"^kube-proxy\s+1\.32\.4\s+v1\.33\.0$", out, re.M)
    assert re.search(r"^etcd\s+lab-control-plane\s+3\.5\.16-0\s+3\.5\.21-0$", out, re.M)
    assert (
        "You can now apply the upgrade by executing the following command:\n\n\tkubeadm upgrade apply v1.33.0\n" in out
    )
    structured = json.loads(cluster.upgrade(cluster.cp, "plan", "-o", "json").stdout)
    assert structured["availableUpgrades"][0]["description"] == "stable version"


def test_plan_with_an_upgrade_configuration(cluster: Cluster, tmp_path: Path) -> None:
    cfg = tmp_path / "upgrade.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n"
        "plan:\n  kubernetesVersion: v1.32.9\n  printConfig: true\n"
    )
    res = cluster.upgrade(cluster.cp, "plan", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "[upgrade/config] Configuration used:\n" in res.stdout
    assert "\tkubernetesVersion: v1.32.4\n" in res.stdout
    assert "Upgrade to the latest version in the v1.32 series:" in res.stdout
    assert re.search(r"^kube-apiserver\s+lab-control-plane\s+v1\.32\.4\s+v1\.32\.9$", res.stdout, re.M)
    assert "Note: Before you can perform this upgrade" not in res.stdout  # v1.32.9 is older than kubeadm


def test_diff_shows_the_new_images(cluster: Cluster, tmp_path: Path) -> None:
    cfg = tmp_path / "upgrade.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n"
        "diff:\n  kubernetesVersion: v1.33.0\n  contextLines: 0\n"
    )
    res = cluster.upgrade(cluster.cp, "diff", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("+++ new manifest") == 3
    assert (
        "-    image: registry.k8s.io/kube-apiserver:v1.32.4\n+    image: registry.k8s.io/kube-apiserver:v1.33.0\n"
        in (res.stdout)
    )


def test_apply_refuses_bad_versions_and_a_missing_confirmation(cluster: Cluster) -> None:
    res = cluster.upgrade(cluster.cp, "apply", "v1.34.0", "-y")
    assert res.returncode != 0
    assert 'Specified version to upgrade to "v1.34.0" is too high' in res.stderr
    res = cluster.upgrade(cluster.cp, "apply", NEW)  # stdin at EOF: "no", never a hang
    assert res.returncode != 0
    assert "[upgrade] Are you sure you want to proceed? [y/N]: " in res.stdout
    assert "won't proceed" in res.stderr
    res = cluster.upgrade(cluster.cp, "apply")
    assert res.returncode != 0 and "Required arguments: [version]" in res.stderr
    res = cluster.upgrade(cluster.cp, "apply", NEW, "--config", "/nonexistent.yaml", "--force")
    assert res.returncode != 0 and "can not mix '--config' with arguments [force]" in res.stderr
    assert _image(Layout(cluster.cp.root).manifest("kube-apiserver")).endswith(":v1.32.4")


def test_apply_dry_run_changes_nothing(cluster: Cluster) -> None:
    layout = Layout(cluster.cp.root)
    before = {p.name: p.read_text() for p in layout.manifests_dir.iterdir()}
    res = cluster.upgrade(cluster.cp, "apply", NEW, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert '[dryrun] Would upgrade your static Pod-hosted control plane to version "v1.33.0"' in res.stdout
    assert '[dryrun] Would write file "/etc/kubernetes/manifests/kube-apiserver.yaml" with content:' in res.stdout
    assert "\t    image: registry.k8s.io/kube-apiserver:v1.33.0\n" in res.stdout
    assert res.stdout.endswith("[upgrade/successful] Finished dryrunning successfully!\n")
    assert {p.name: p.read_text() for p in layout.manifests_dir.iterdir()} == before
    assert not layout.tmp_dir.exists() or not list(layout.tmp_dir.iterdir())
    stored = cluster.kubectl(
        "-n", "kube-system", "get", "cm", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}"
    )
    assert yaml.safe_load(stored)["kubernetesVersion"] == OLD


def test_apply_upgrades_the_control_plane(cluster: Cluster) -> None:
    layout = Layout(cluster.cp.root)
    serial_before = try_load_cert(layout.pki_dir, "apiserver").serial_number
    admin_before = _client_cert(layout.admin_kubeconfig)
    res = cluster.upgrade(cluster.cp, "apply", NEW, "-y", "--patches", str(cluster.cp.patches_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert '[upgrade/control-plane] Upgrading your static Pod-hosted control plane to version "v1.33.0"' in out
    assert "[upgrade/staticpods] Renewing apiserver certificate" in out
    assert "[upgrade/staticpods] Renewing etcd-server certificate" in out
    for comp in COMPONENTS:
        assert f'[upgrade/staticpods] Component "{comp}" upgraded successfully!' in out
        assert _image(layout.manifest(comp)).endswith(":v1.33.0")
    assert '[upgrade/staticpods] Component "etcd" upgraded successfully!\n[upgrade/etcd] Waiting for etcd' in out
    assert _image(layout.manifest("etcd")) == f"registry.k8s.io/etcd:{ETCD_NEW}"
    etcd_pod = yaml.safe_load(layout.manifest("etcd").read_text())
    assert etcd_pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["path"] == "/health"  # --patches kept
    assert out.endswith(
        '[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "v1.33.0".\n\n'
        "[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.\n"
    )
    backups = list(layout.tmp_dir.glob("kubeadm-backup-manifests-*"))
    assert len(backups) == 1
    assert sorted(p.name for p in backups[0].iterdir()) == sorted(f"{comp}.yaml" for comp in (*COMPONENTS, "etcd"))
    assert _image(backups[0] / "kube-apiserver.yaml").endswith(":v1.32.4")
    assert _image(backups[0] / "etcd.yaml").endswith(f":{ETCD_OLD}")
    etcd_backups = list(layout.tmp_dir.glob("kubeadm-backup-etcd-*"))
    assert len(etcd_backups) == 1 and (etcd_backups[0] / "etcd" / "member").is_dir()
    shutil.rmtree(etcd_backups[0])  # a copy of the whole etcd data dir: do not keep it in pytest's tmp
    assert not list(layout.tmp_dir.glob("kubeadm-upgraded-manifests*"))
    assert try_load_cert(layout.pki_dir, "apiserver").serial_number != serial_before
    assert _client_cert(layout.admin_kubeconfig) != admin_before  # admin.conf is renewed too
    version = json.loads(cluster.kubectl("version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == NEW
    stored = cluster.kubectl(
        "-n", "kube-system", "get", "cm", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}"
    )
    assert yaml.safe_load(stored)["kubernetesVersion"] == NEW
    ds_image = cluster.kubectl(
        "-n", "kube-system", "get", "ds", "kube-proxy", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert ds_image == "registry.k8s.io/kube-proxy:v1.33.0"
    kubelet_cfg = yaml.safe_load(layout.kubelet_config.read_text())
    assert kubelet_cfg["address"] == cluster.cp.address  # --patches applied to the rewritten config.yaml
    plan = cluster.upgrade(cluster.cp, "plan", NEW)
    assert plan.returncode == 0 and plan.stdout.endswith("Awesome, you're up-to-date! Enjoy!\n")
    phase = cluster.upgrade(cluster.cp, "apply", "phase", "addon", "kube-proxy")
    assert phase.returncode == 0, phase.stderr
    assert phase.stdout.endswith("[addons] Applied essential addon: kube-proxy\n")


def test_upgrade_node_on_the_control_plane_finds_nothing_to_change(cluster: Cluster) -> None:
    res = cluster.upgrade(cluster.cp, "node", "--patches", str(cluster.cp.patches_dir))
    assert res.returncode == 0, res.stderr
    for comp in (*COMPONENTS, "etcd"):
        assert f"[upgrade/staticpods] Current and new manifests of {comp} are equal, skipping upgrade" in res.stdout
    assert "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!" in res.stdout


def test_upgrade_node_on_a_worker_rewrites_the_kubelet_config(cluster: Cluster) -> None:
    layout = Layout(cluster.worker.root)
    cfg = yaml.safe_load(layout.kubelet_config.read_text())
    cfg["maxPods"] = 7  # a local edit that the cluster's kubelet-config does not have
    layout.kubelet_config.write_text(yaml.safe_dump(cfg))
    dry = cluster.upgrade(cluster.worker, "node", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert '[dryrun] Would write file "/var/lib/kubelet/config.yaml" with content:' in dry.stdout
    assert yaml.safe_load(layout.kubelet_config.read_text())["maxPods"] == 7
    res = cluster.upgrade(cluster.worker, "node", "--patches", str(cluster.worker.patches_dir))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[2:6] == [
        "[upgrade/preflight] Running pre-flight checks",
        "[upgrade/preflight] Skipping prepull. Not a control plane node.",
        "[upgrade/control-plane] Skipping phase. Not a control plane node.",
        "[upgrade/kubeconfig] Skipping phase. Not a control plane node.",
    ]
    assert lines[-3:] == [
        "[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!",
        "[upgrade/addon] Skipping the addon/coredns phase. Not a control plane node.",
        "[upgrade/addon] Skipping the addon/kube-proxy phase. Not a control plane node.",
    ]
    backup_line = next(line for line in lines if line.startswith("[upgrade] Backing up kubelet config file to "))
    backup = layout.host(backup_line.rsplit(" ", 1)[1])
    assert re.fullmatch(r"kubeadm-kubelet-config\d+", backup.parent.name)
    assert yaml.safe_load(backup.read_text())["maxPods"] == 7
    new = yaml.safe_load(layout.kubelet_config.read_text())
    assert "maxPods" not in new and new["address"] == cluster.worker.address


def test_a_component_that_never_gets_healthy_is_rolled_back(cluster: Cluster, tmp_path: Path) -> None:
    layout = Layout(cluster.cp.root)
    before = layout.manifest("kube-scheduler").read_text()
    patches = tmp_path / "patches"
    shutil.copytree(cluster.cp.patches_dir, patches)  # etcd keeps its probe patch: only kube-scheduler changes
    probe = {"httpGet": {"port": 1}}  # nothing answers there: the health check cannot succeed
    (patches / "kube-scheduler.yaml").write_text(
        yaml.safe_dump(
            {"spec": {"containers": [{"name": "kube-scheduler", "livenessProbe": probe, "startupProbe": probe}]}}
        )
    )
    cfg = tmp_path / "upgrade.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n"
        f"apply:\n  kubernetesVersion: {NEW}\n  patches:\n    directory: {patches}\n"
        "timeouts:\n  upgradeManifests: 6s\n"
    )
    res = cluster.upgrade(cluster.cp, "apply", "--config", str(cfg), "--yes")
    assert res.returncode == 1
    assert "[upgrade/staticpods] Current and new manifests of kube-apiserver are equal, skipping upgrade" in res.stdout
    assert "[upgrade/staticpods] This can take up to 6s" in res.stdout
    assert res.stderr.startswith(
        "error execution phase control-plane: couldn't upgrade control plane. kubeadm has tried to recover everything "
        "into the earlier state. Errors faced: [kube-scheduler check failed at https://"
    )
    assert layout.manifest("kube-scheduler").read_text() == before
