"""`pykubeadm config …`, `version`, `token generate` through the real CLI entry point (exit codes included)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
import yaml

from pykubeadm import constants as c
from pykubeadm.cli.main import main

# kubeadm v1.31's `config print init-defaults` (fact sheet §4.5) with our version in the placeholder.
INIT_DEFAULTS = """\
apiVersion: kubeadm.k8s.io/v1beta4
bootstrapTokens:
- groups:
  - system:bootstrappers:kubeadm:default-node-token
  token: abcdef.0123456789abcdef
  ttl: 24h0m0s
  usages:
  - signing
  - authentication
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 1.2.3.4
  bindPort: 6443
nodeRegistration:
  criSocket: unix:///var/run/containerd/containerd.sock
  imagePullPolicy: IfNotPresent
  imagePullSerial: true
  name: node
  taints: null
timeouts:
  controlPlaneComponentHealthCheck: 4m0s
  discovery: 5m0s
  etcdAPICall: 2m0s
  kubeletHealthCheck: 4m0s
  kubernetesAPICall: 1m0s
  tlsBootstrap: 5m0s
  upgradeManifests: 5m0s
---
apiServer: {}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controllerManager: {}
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: 1.33.0
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
proxy: {}
scheduler: {}
"""

TIMEOUTS = """\
timeouts:
  controlPlaneComponentHealthCheck: 4m0s
  discovery: 5m0s
  etcdAPICall: 2m0s
  kubeletHealthCheck: 4m0s
  kubernetesAPICall: 1m0s
  tlsBootstrap: 5m0s
  upgradeManifests: 5m0s
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture(autouse=True)
def _no_systemd_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    from pykubeadm.api import componentconfigs, defaults

    monkeypatch.setattr(componentconfigs, "systemd_resolved_active", lambda: False)
    monkeypatch.setattr(defaults, "detect_cri_socket", lambda *a: c.DEFAULT_CRI_SOCKET)


def test_print_init_defaults_equals_kubeadm(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "print", "init-defaults")
    assert code == 0
    assert out == INIT_DEFAULTS


def test_print_init_defaults_with_component_configs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "config", "print", "init-defaults", "--component-configs", "KubeletConfiguration,KubeProxyConfiguration"
    )
    assert code == 0
    assert out.startswith(INIT_DEFAULTS + "---\napiVersion: kubelet.config.k8s.io/v1beta1\n")
    docs = list(yaml.safe_load_all(out))
    kubelet, proxy = docs[2], docs[3]
    assert kubelet["clusterDNS"] == ["10.96.0.10"] and kubelet["staticPodPath"] == "/etc/kubernetes/manifests"
    assert kubelet["authentication"] == {
        "anonymous": {"enabled": False},
        "webhook": {"cacheTTL": "0s", "enabled": True},
        "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
    }
    assert (
        kubelet["cgroupDriver"] == "systemd"
        and kubelet["healthzPort"] == 10248
        and kubelet["rotateCertificates"] is True
    )
    assert proxy["kind"] == "KubeProxyConfiguration" and proxy["bindAddress"] == "0.0.0.0"
    assert proxy["clientConnection"]["kubeconfig"] == "/var/lib/kube-proxy/kubeconfig.conf"
    code, _, err = run(capsys, "config", "print", "init-defaults", "--component-configs", "Bogus")
    assert (
        code == 1
        and "--component-configs needs to contain some of [KubeProxyConfiguration KubeletConfiguration]" in err
    )


def test_print_other_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "print", "join-defaults")
    assert code == 0
    assert out == (
        "apiVersion: kubeadm.k8s.io/v1beta4\ncaCertPath: /etc/kubernetes/pki/ca.crt\ndiscovery:\n  bootstrapToken:\n"
        "    apiServerEndpoint: kube-apiserver:6443\n    token: abcdef.0123456789abcdef\n"
        "    unsafeSkipCAVerification: true\n  tlsBootstrapToken: abcdef.0123456789abcdef\nkind: JoinConfiguration\n"
        "nodeRegistration:\n  criSocket: unix:///var/run/containerd/containerd.sock\n  imagePullPolicy: IfNotPresent\n"
        f"  imagePullSerial: true\n  name: {socket.gethostname().strip().lower()}\n  taints: null\n" + TIMEOUTS
    )
    code, out, _ = run(capsys, "config", "print", "reset-defaults")
    assert out == (
        "apiVersion: kubeadm.k8s.io/v1beta4\ncertificatesDir: /etc/kubernetes/pki\n"
        "criSocket: unix:///var/run/containerd/containerd.sock\nkind: ResetConfiguration\n" + TIMEOUTS
    )
    code, out, _ = run(capsys, "config", "print", "upgrade-defaults")
    section = (
        "  certificateRenewal: true\n  etcdUpgrade: true\n  imagePullPolicy: IfNotPresent\n  imagePullSerial: true\n"
    )
    assert out == (
        "apiVersion: kubeadm.k8s.io/v1beta4\napply:\n"
        + section
        + "diff: {}\nkind: UpgradeConfiguration\nnode:\n"
        + section
        + "plan:\n  etcdUpgrade: true\n"
        + TIMEOUTS
    )


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.33.0\n")
    assert run(capsys, "config", "validate", "--config", str(good))[:2] == (0, "ok\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.33.0\n"
        "networking:\n  podSubnet: 10.0.0.0/33\nencryptionAlgorithm: RSA-1\n"
    )
    code, out, err = run(capsys, "config", "validate", "--config", str(bad))
    assert code == 3 and out == ""
    assert 'networking.podSubnet: Invalid value: "10.0.0.0/33": couldn\'t parse subnet' in err
    assert 'encryptionAlgorithm: Invalid value: "RSA-1": Invalid encryption algorithm "RSA-1"' in err
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nfoo: bar\n")
    code, _, err = run(capsys, "config", "validate", "--config", str(unknown))
    assert code == 3 and 'strict decoding error: unknown field "foo"' in err
    old = tmp_path / "old.yaml"
    old.write_text("apiVersion: kubeadm.k8s.io/v1beta1\nkind: InitConfiguration\n")
    code, _, err = run(capsys, "config", "validate", "--config", str(old))
    assert code == 3 and "Please use kubeadm v1.15 instead and run 'kubeadm config migrate" in err
    token = tmp_path / "token.yaml"
    token.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- token: abc.def\n"
    )
    code, _, err = run(capsys, "config", "validate", "--config", str(token))
    assert code == 3 and 'bootstrapTokens[0].token: Invalid value: "abc.def": the bootstrap token is invalid' in err
    code, _, err = run(capsys, "config", "validate")
    assert code == 1 and "the --config flag is mandatory" in err


def test_migrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  timeoutForControlPlane: 2m0s\n"
        "  extraArgs:\n    z: '1'\n    a: '2'\n"
    )
    code, out, _ = run(capsys, "config", "migrate", "--old-config", str(old))
    assert code == 0
    init, cluster = yaml.safe_load_all(out)
    assert init["kind"] == "InitConfiguration" and init["timeouts"]["controlPlaneComponentHealthCheck"] == "2m0s"
    assert cluster["apiServer"] == {"extraArgs": [{"name": "a", "value": "2"}, {"name": "z", "value": "1"}]}
    new = tmp_path / "new.yaml"
    assert run(capsys, "config", "migrate", "--old-config", str(old), "--new-config", str(new))[:2] == (0, "")
    assert new.read_text() == out and (new.stat().st_mode & 0o777) == 0o644
    # the migrated file validates
    assert run(capsys, "config", "validate", "--config", str(new))[0] == 0
    code, _, err = run(capsys, "config", "migrate")
    assert code == 1 and "the --old-config flag is mandatory" in err


def test_images_list(tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    code, out, _ = run(capsys, "config", "images", "list", "--kubernetes-version", "v1.32.0")
    assert code == 0
    assert out == (
        "registry.k8s.io/kube-apiserver:v1.32.0\nregistry.k8s.io/kube-controller-manager:v1.32.0\n"
        "registry.k8s.io/kube-scheduler:v1.32.0\nregistry.k8s.io/kube-proxy:v1.32.0\n"
        f"registry.k8s.io/coredns/coredns:{c.COREDNS_VERSION}\nregistry.k8s.io/pause:{c.PAUSE_VERSION}\n"
        "registry.k8s.io/etcd:3.5.16-0\n"
    )
    code, out, _ = run(capsys, "config", "images", "list")  # stable-1 falls back to our version, with warnings
    assert code == 0 and f"registry.k8s.io/kube-apiserver:{c.KUBERNETES_VERSION}\n" in out
    assert "falling back to the local client version" in caplog.text
    code, out, _ = run(
        capsys,
        "config",
        "images",
        "list",
        "--kubernetes-version",
        "1.33.1",
        "--image-repository",
        "reg.local:5000",
        "-o",
        "json",
    )
    obj = json.loads(out)
    assert obj["kind"] == "Images" and obj["apiVersion"] == "output.kubeadm.k8s.io/v1alpha3"
    assert obj["images"][4] == f"reg.local:5000/coredns:{c.COREDNS_VERSION}"
    assert obj["images"][-1] == f"reg.local:5000/etcd:{c.SUPPORTED_ETCD_VERSION[33]}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.33.0\n"
        "dns:\n  disabled: true\nproxy:\n  disabled: true\netcd:\n  external:\n    endpoints: [https://e:2379]\n"
        "    caFile: /ca.crt\n    certFile: /c.crt\n    keyFile: /c.key\n"
    )
    code, out, _ = run(capsys, "config", "images", "list", "--config", str(cfg), "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["images"] == [
        "registry.k8s.io/kube-apiserver:v1.33.0",
        "registry.k8s.io/kube-controller-manager:v1.33.0",
        "registry.k8s.io/kube-scheduler:v1.33.0",
        f"registry.k8s.io/pause:{c.PAUSE_VERSION}",
    ]
    code, _, err = run(capsys, "config", "images", "list", "--config", str(cfg), "--kubernetes-version", "v1.33.1")
    assert code == 3 and "can not mix '--config' with arguments [kubernetes-version]" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "version")
    assert code == 0
    assert re.fullmatch(
        r'kubeadm version: &version\.Info\{Major:"1", Minor:"33", EmulationMajor:"", EmulationMinor:"", '
        r'MinCompatibilityMajor:"", MinCompatibilityMinor:"", GitVersion:"v1\.33\.0", GitCommit:"[^"]*", '
        r'GitTreeState:"[^"]*", BuildDate:"[^"]*", GoVersion:"[^"]*", Compiler:"[^"]*", Platform:"linux/\w+"\}\n',
        out,
    )
    assert run(capsys, "version", "-o", "short")[1] == c.KUBEADM_VERSION + "\n"
    info = json.loads(run(capsys, "version", "-o", "json")[1])["clientVersion"]
    assert info["gitVersion"] == c.KUBEADM_VERSION and info["major"] == "1" and info["minor"] == "33"
    assert "emulationMajor" not in info
    assert yaml.safe_load(run(capsys, "version", "-o", "yaml")[1])["clientVersion"]["gitVersion"] == c.KUBEADM_VERSION
    code, _, err = run(capsys, "version", "-o", "xml")
    assert code == 1 and "invalid output format: xml" in err


def test_token_generate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "token", "generate")
    assert code == 0 and re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}\n", out)
    assert run(capsys, "token", "generate")[1] != out


def test_real_binary_exit_codes(tmp_path: Path) -> None:
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("pykubeadm")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.0.0.0/33\n"
    )
    r = subprocess.run(
        [str(exe), "config", "validate", "--config", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 3 and r.stdout == ""
    assert 'networking.podSubnet: Invalid value: "10.0.0.0/33": couldn\'t parse subnet' in r.stderr
    r = subprocess.run([str(exe), "token", "generate"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}\n", r.stdout)
