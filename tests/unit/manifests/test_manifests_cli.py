"""`pykubeadm --root-dir <tmp> init phase control-plane|etcd|kubelet-start --config <file>` as a real process."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

BIN = shutil.which("pykubeadm", path=str(Path(sys.executable).parent))
CMD = [BIN] if BIN else [sys.executable, "-m", "pykubeadm"]

DEFAULT_CFG = """
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.10.1
nodeRegistration:
  name: node1
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
"""

VARIANT_CFG = """
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.10.1
  bindPort: 6443
nodeRegistration:
  name: node1
  criSocket: unix:///var/run/containerd/containerd.sock
patches:
  directory: {patches}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
clusterName: lab
networking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.112.0.0/12
etcd:
  external:
    endpoints: [https://127.0.0.1:2379]
    caFile: /etc/etcd-ext/ca.crt
    certFile: /etc/etcd-ext/client.crt
    keyFile: /etc/etcd-ext/client.key
apiServer:
  extraArgs:
  - name: bind-address
    value: 127.0.10.1
  - name: enable-admission-plugins
    value: NodeRestriction,AlwaysPullImages
  extraVolumes:
  - name: audit
    hostPath: /var/log/audit
    mountPath: /var/log/audit
    pathType: DirectoryOrCreate
  extraEnvs:
  - name: GOMAXPROCS
    value: "2"
controllerManager:
  extraArgs:
  - name: bind-address
    value: 127.0.10.1
scheduler:
  extraArgs:
  - name: bind-address
    value: 127.0.10.1
"""


def run(root: Path, *args: str, cfg: Path, netns: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.run(
        [*(netns or []), *CMD, "--root-dir", str(root), "init", "phase", *args, "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def load(root: Path, component: str) -> dict:
    return yaml.safe_load((root / "etc/kubernetes/manifests" / f"{component}.yaml").read_text())


def command(root: Path, component: str) -> list[str]:
    return load(root, component)["spec"]["containers"][0]["command"]


@pytest.fixture
def default_cfg(tmp_path: Path) -> Path:
    p = tmp_path / "kubeadm.yaml"
    p.write_text(DEFAULT_CFG)
    return p


def test_control_plane_all_writes_three_manifests(tmp_path: Path, default_cfg: Path) -> None:
    root = tmp_path / "root"
    r = run(root, "control-plane", "all", cfg=default_cfg)
    assert r.returncode == 0, r.stderr
    for comp in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert f'[control-plane] Creating static Pod manifest for "{comp}"' in r.stdout
        path = root / "etc/kubernetes/manifests" / f"{comp}.yaml"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "etc/kubernetes/manifests").stat().st_mode) == 0o700
    api = command(root, "kube-apiserver")
    assert "--advertise-address=127.0.10.1" in api and "--etcd-servers=https://127.0.0.1:2379" in api
    assert load(root, "kube-apiserver")["spec"]["containers"][0]["livenessProbe"]["httpGet"]["host"] == "127.0.10.1"
    text = (root / "etc/kubernetes/manifests/kube-apiserver.yaml").read_text()
    assert text.startswith("apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n")
    assert "  - command:\n    - kube-apiserver\n    - --advertise-address=127.0.10.1\n" in text
    assert text.endswith("status: {}\n")
    assert not (root / "etc/kubernetes/manifests/etcd.yaml").exists()


def test_parent_phase_prints_manifest_folder(tmp_path: Path, default_cfg: Path) -> None:
    r = run(tmp_path / "root", "control-plane", cfg=default_cfg)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == '[control-plane] Using manifest folder "/etc/kubernetes/manifests"'


def test_etcd_local_and_external_ca(tmp_path: Path, default_cfg: Path) -> None:
    root = tmp_path / "root"
    r = run(root, "etcd", "local", cfg=default_cfg)
    assert r.returncode == 0, r.stderr
    assert '[etcd] Creating static Pod manifest for local etcd in "/etc/kubernetes/manifests"' in r.stdout
    assert stat.S_IMODE((root / "var/lib/etcd").stat().st_mode) == 0o700
    assert "--initial-cluster=node1=https://127.0.10.1:2380" in command(root, "etcd")
    # external CA: a valid ca.crt (and the leaves it signed) present, ca.key missing → empty signing flags
    r = subprocess.run(
        [*CMD, "--root-dir", str(root), "init", "phase", "certs", "all", "--config", str(default_cfg)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    (root / "etc/kubernetes/pki/ca.key").unlink()
    r = run(root, "control-plane", "controller-manager", cfg=default_cfg)
    assert r.returncode == 0, r.stderr
    kcm = command(root, "kube-controller-manager")
    assert "--cluster-signing-cert-file=" in kcm and "--cluster-signing-key-file=" in kcm


def test_variant_config_with_patch(tmp_path: Path) -> None:
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "kube-apiserver+json.yaml").write_text("- op: add\n  path: /metadata/labels/patched\n  value: 'yes'\n")
    (patches / "kube-scheduler.yaml").write_text(
        "spec:\n  containers:\n  - name: kube-scheduler\n    resources:\n      requests:\n        cpu: 50m\n"
    )
    cfg = tmp_path / "kubeadm.yaml"
    cfg.write_text(VARIANT_CFG.format(patches=patches))
    root = tmp_path / "root"
    r = run(root, "control-plane", "all", cfg=cfg)
    assert r.returncode == 0, r.stderr
    assert '[patches] Applied patch of type "application/json-patch+json" to target "kube-apiserver"' in r.stdout
    assert (
        '[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-scheduler"'
        in r.stdout
    )
    api = load(root, "kube-apiserver")
    assert api["metadata"]["labels"]["patched"] == "yes"
    ctr = api["spec"]["containers"][0]
    cmd = ctr["command"]
    assert "--etcd-servers=https://127.0.0.1:2379" in cmd
    assert {
        "--etcd-cafile=/etc/etcd-ext/ca.crt",
        "--etcd-certfile=/etc/etcd-ext/client.crt",
        "--etcd-keyfile=/etc/etcd-ext/client.key",
    } <= set(cmd)
    assert "--bind-address=127.0.10.1" in cmd
    assert "--enable-admission-plugins=NodeRestriction,AlwaysPullImages" in cmd
    assert "--enable-admission-plugins=NodeRestriction" not in cmd
    assert "--service-cluster-ip-range=10.112.0.0/12" in cmd
    vols = {v["name"]: v["hostPath"] for v in api["spec"]["volumes"]}
    assert vols["etcd-certs-0"] == {"path": "/etc/etcd-ext", "type": "DirectoryOrCreate"}
    assert vols["audit"] == {"path": "/var/log/audit", "type": "DirectoryOrCreate"}
    assert {"mountPath": "/var/log/audit", "name": "audit"} in ctr["volumeMounts"]
    assert ctr["env"] == [{"name": "GOMAXPROCS", "value": "2"}]
    kcm = command(root, "kube-controller-manager")
    assert {
        "--allocate-node-cidrs=true",
        "--cluster-cidr=10.244.0.0/16",
        "--cluster-name=lab",
        "--service-cluster-ip-range=10.112.0.0/12",
        "--bind-address=127.0.10.1",
    } <= set(kcm)
    kcm_probe = load(root, "kube-controller-manager")["spec"]["containers"][0]["livenessProbe"]["httpGet"]
    assert kcm_probe["host"] == "127.0.10.1"
    sched = load(root, "kube-scheduler")["spec"]["containers"][0]
    assert sched["resources"] == {"requests": {"cpu": "50m"}}
    assert sched["readinessProbe"]["httpGet"]["host"] == "127.0.10.1"
    # external etcd: the etcd phase writes nothing
    r = run(root, "etcd", "local", cfg=cfg)
    assert r.returncode == 0, r.stderr
    assert not (root / "etc/kubernetes/manifests/etcd.yaml").exists()


def test_kubelet_start_writes_files(tmp_path: Path, default_cfg: Path, own_netns: list[str]) -> None:
    root = tmp_path / "root"  # its kubelet runs in a network namespace of the test's own
    r = run(root, "kubelet-start", cfg=default_cfg, netns=own_netns)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == [
        '[kubelet-start] Writing kubelet environment file with flags to file "/var/lib/kubelet/kubeadm-flags.env"',
        '[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"',
    ]
    env = (root / "var/lib/kubelet/kubeadm-flags.env").read_text()
    assert env.startswith(
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
    )
    assert "--pod-infra-container-image=registry.k8s.io/pause:3.10" in env
    cfg = yaml.safe_load((root / "var/lib/kubelet/config.yaml").read_text())
    assert cfg["kind"] == "KubeletConfiguration" and cfg["staticPodPath"] == "/etc/kubernetes/manifests"
    # then the built-in kubelet is started as a daemon of this root (stopped by the conftest fixture)
    assert "[kubelet-start] Starting the kubelet" in r.stdout
    assert (root / "var/run/pykubeadm/kubelet.pid").exists()


def test_dry_run_leaves_root_untouched(tmp_path: Path, default_cfg: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for phase in (["control-plane", "all"], ["etcd", "local"], ["kubelet-start"]):
        r = run(root, *phase, "--dry-run", cfg=default_cfg)
        assert r.returncode == 0, r.stderr
    assert list(root.iterdir()) == []
