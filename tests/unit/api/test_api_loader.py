"""Loading: files (multi-document, v1beta4/v1beta3), flags, the --config mixing rule, component configs, dumping."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from pykubeadm import constants as c
from pykubeadm.api import (
    dump_cluster_configuration,
    dump_init_config,
    load_init_config,
    load_join_config,
    load_reset_config,
    load_upgrade_config,
    migrate_config,
    v1beta4,
)
from pykubeadm.errors import ValidationError

V4 = "apiVersion: kubeadm.k8s.io/v1beta4\n"


@pytest.fixture(autouse=True)
def _fixed_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from pykubeadm.api import defaults

    monkeypatch.setattr(defaults, "detect_advertise_address", lambda: "192.0.2.10")
    monkeypatch.setattr(defaults, "detect_cri_socket", lambda *a: c.DEFAULT_CRI_SOCKET)


def write(tmp_path: Path, text: str, name: str = "kubeadm.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_flags_without_config() -> None:
    cfg = load_init_config(
        None,
        {
            "apiserver-advertise-address": "10.1.2.3",
            "apiserver-bind-port": 7443,
            "pod-network-cidr": "10.244.0.0/16",
            "service-cidr": "10.100.0.0/16",
            "service-dns-domain": "corp.local",
            "kubernetes-version": "1.32.3",
            "cert-dir": "/srv/pki",
            "apiserver-cert-extra-sans": ["Api.Example.com", "10.9.9.9"],
            "node-name": "CP-1",
            "token": "abcdef.0123456789abcdef",
            "token-ttl": "2h",
            "image-repository": "my.registry:5000/k8s",
            "cri-socket": "unix:///run/crio/crio.sock",
            "control-plane-endpoint": "lb.example.com",
            "patches": "/srv/patches",
            "skip-phases": ["addon/kube-proxy"],
            "dry-run": True,
            "feature-gates": "RootlessControlPlane=false",
            "certificate-key": "ab" * 32,
            "upload-certs": True,
            "skip-token-print": True,
        },
    )
    i, cl = cfg.init, cfg.cluster
    assert i.local_api_endpoint.advertise_address == "10.1.2.3" and i.local_api_endpoint.bind_port == 7443
    assert cl.networking.pod_subnet == "10.244.0.0/16" and cl.networking.service_subnet == "10.100.0.0/16"
    assert cl.networking.dns_domain == "corp.local"
    assert cl.kubernetes_version == "v1.32.3"
    assert cl.certificates_dir == "/srv/pki"
    assert cl.api_server.cert_sans == ["api.example.com", "10.9.9.9"]
    assert i.node_registration.name == "cp-1"
    assert i.bootstrap_tokens[0].token == "abcdef.0123456789abcdef" and i.bootstrap_tokens[0].ttl == timedelta(hours=2)
    assert cl.image_repository == "my.registry:5000/k8s"
    assert i.node_registration.cri_socket == "unix:///run/crio/crio.sock"
    assert cl.control_plane_endpoint == "lb.example.com:7443"
    assert i.patches == v1beta4.Patches(directory="/srv/patches")
    assert i.skip_phases == ["addon/kube-proxy"] and i.dry_run
    assert cl.feature_gates == {"RootlessControlPlane": False}
    assert i.certificate_key == "ab" * 32
    # component configs follow the cluster
    assert cfg.kubelet["clusterDNS"] == ["10.100.0.10"] and cfg.kubelet["clusterDomain"] == "corp.local"
    assert cfg.kubelet["authentication"]["x509"]["clientCAFile"] == "/srv/pki/ca.crt"
    assert cfg.kube_proxy["clusterCIDR"] == "10.244.0.0/16" and cfg.kube_proxy["bindAddress"] == "0.0.0.0"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"token": "abc"}, 'the bootstrap token "abc" was not of the form'),
        ({"feature-gates": "Bogus=true"}, "unrecognized feature-gate key: Bogus"),
        ({"token-ttl": "1 day"}, 'time: unknown unit " day" in duration "1 day"'),
        ({"pod-network-cidr": "10.0.0.0/33"}, 'networking.podSubnet: Invalid value: "10.0.0.0/33"'),
        ({"apiserver-advertise-address": "300.1.1.1"}, 'couldn\'t use "300.1.1.1" as "apiserver-advertise-address"'),
        ({"ignore-preflight-errors": ["all", "Swap"]}, "don't specify individual checks if 'all' is used"),
    ],
)
def test_bad_flags(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_init_config(None, flags)


def test_config_file_and_mixing_rule(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        V4
        + "kind: InitConfiguration\nnodeRegistration:\n  name: fromfile\n---\n"
        + V4
        + "kind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16\nkubernetesVersion: v1.33.2\n",
    )
    cfg = load_init_config(
        path, {"node-name": "Flag-Node", "skip-phases": ["preflight"], "dry-run": True, "skip-token-print": True}
    )
    assert cfg.init.node_registration.name == "flag-node"  # --node-name is allowed with --config and wins
    assert cfg.init.skip_phases == ["preflight"] and cfg.init.dry_run
    assert cfg.cluster.networking.pod_subnet == "10.244.0.0/16"
    assert cfg.cluster.kubernetes_version == "v1.33.2"
    with pytest.raises(ValidationError) as e:
        load_init_config(path, {"token": "abcdef.0123456789abcdef", "pod-network-cidr": "x", "certificate-key": "k"})
    assert str(e.value) == "can not mix '--config' with arguments [certificate-key pod-network-cidr token]"


def test_component_config_documents_are_merged(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        V4 + "kind: ClusterConfiguration\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "cgroupDriver: cgroupfs\nmaxPods: 50\n---\napiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
        "kind: KubeProxyConfiguration\nmode: ipvs\n",
    )
    cfg = load_init_config(path, systemd_resolved=False)
    assert cfg.kubelet["cgroupDriver"] == "cgroupfs" and cfg.kubelet["maxPods"] == 50
    assert cfg.kubelet["staticPodPath"] == "/etc/kubernetes/manifests"
    assert cfg.kubelet["authorization"]["mode"] == "Webhook"
    assert "resolvConf" not in cfg.kubelet
    assert cfg.kube_proxy["mode"] == "ipvs"
    assert cfg.kube_proxy["clientConnection"]["kubeconfig"] == "/var/lib/kube-proxy/kubeconfig.conf"
    assert load_init_config(path, systemd_resolved=True).kubelet["resolvConf"] == "/run/systemd/resolve/resolv.conf"


def test_unknown_versions_kinds_and_missing_documents(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = write(tmp_path, "apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n")
    with pytest.raises(ValidationError) as e:
        load_init_config(old)
    assert str(e.value) == (
        'your configuration file uses an old API spec: "kubeadm.k8s.io/v1beta2" (kind: "InitConfiguration"). Please use '
        "kubeadm v1.22 instead and run 'kubeadm config migrate --old-config old-config-file --new-config "
        "new-config-file', which will write the new, similar spec using a newer API version."
    )
    for text in (
        "apiVersion: kubeadm.k8s.io/v1beta9\nkind: InitConfiguration\n",
        V4 + "kind: InitConfig\n",
        "apiVersion: example.com/v1\nkind: Thing\n",
        "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
    ):
        with pytest.raises(ValidationError, match=r"unknown configuration schema\.GroupVersionKind"):
            load_init_config(write(tmp_path, text))
    with pytest.raises(ValidationError, match="no InitConfiguration or ClusterConfiguration kind was found"):
        load_init_config(write(tmp_path, V4 + "kind: JoinConfiguration\n"))
    with pytest.raises(ValidationError, match='kind "ClusterConfiguration" is specified twice'):
        load_init_config(write(tmp_path, (V4 + "kind: ClusterConfiguration\n---\n") * 2))
    with caplog.at_level(logging.WARNING):
        load_init_config(write(tmp_path, V4 + "kind: ClusterConfiguration\n---\n" + V4 + "kind: ResetConfiguration\n"))
    assert (
        "[config] WARNING: Ignored YAML document with GroupVersionKind kubeadm.k8s.io/v1beta4, Kind=ResetConfiguration"
        in caplog.text
    )


V1BETA3 = """\
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
nodeRegistration:
  name: n1
  kubeletExtraArgs:
    v: "4"
    cgroup-driver: systemd
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.32.0
apiServer:
  timeoutForControlPlane: 8m0s
  certSANs: [a.example.com]
  extraArgs:
    b: "2"
    a: "1"
controllerManager:
  extraArgs:
    bind-address: 0.0.0.0
etcd:
  local:
    dataDir: /data/etcd
    extraArgs:
      x: y
networking:
  podSubnet: 10.244.0.0/16
"""


def test_v1beta3_is_converted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = load_init_config(write(tmp_path, V1BETA3))
    assert 'uses a deprecated API spec: "kubeadm.k8s.io/v1beta3" (kind: "InitConfiguration")' in caplog.text
    i, cl = cfg.init, cfg.cluster
    assert [(a.name, a.value) for a in i.node_registration.kubelet_extra_args] == [
        ("cgroup-driver", "systemd"),
        ("v", "4"),
    ]
    assert [(a.name, a.value) for a in cl.api_server.extra_args] == [("a", "1"), ("b", "2")]
    assert cl.controller_manager.extra_args == [v1beta4.Arg(name="bind-address", value="0.0.0.0")]
    assert cl.etcd.local is not None and cl.etcd.local.extra_args == [v1beta4.Arg(name="x", value="y")]
    assert cl.etcd.local.data_dir == "/data/etcd"
    assert i.timeouts is not None and i.timeouts.control_plane_component_health_check == timedelta(minutes=8)
    assert cl.api_server.cert_sans == ["a.example.com"]
    assert i.bootstrap_tokens[0].token == "abcdef.0123456789abcdef"


def test_migrate_output(tmp_path: Path) -> None:
    out = migrate_config(V1BETA3)
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["InitConfiguration", "ClusterConfiguration"]
    assert all(d["apiVersion"] == "kubeadm.k8s.io/v1beta4" for d in docs)
    assert docs[0]["timeouts"]["controlPlaneComponentHealthCheck"] == "8m0s"
    assert docs[1]["apiServer"] == {
        "certSANs": ["a.example.com"],
        "extraArgs": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}],
    }
    assert "timeoutForControlPlane" not in out
    assert docs[1]["kubernetesVersion"] == "v1.32.0"
    join = migrate_config(
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\ndiscovery:\n  timeout: 10m0s\n  bootstrapToken:\n"
        "    token: abcdef.0123456789abcdef\n    apiServerEndpoint: 10.0.0.1:6443\n    unsafeSkipCAVerification: true\n"
    )
    [jd] = yaml.safe_load_all(join)
    assert jd["timeouts"]["discovery"] == "10m0s" and "timeout" not in jd["discovery"]
    assert jd["discovery"]["tlsBootstrapToken"] == "abcdef.0123456789abcdef"


def test_join_from_flags_and_file(tmp_path: Path) -> None:
    join = load_join_config(
        None,
        {
            "api-server-endpoint": "10.0.0.1:6443",
            "token": "abcdef.0123456789abcdef",
            "discovery-token-ca-cert-hash": ["sha256:" + "a" * 64],
            "control-plane": True,
            "apiserver-advertise-address": "10.0.0.2",
            "node-name": "N2",
        },
    )
    assert join.discovery.bootstrap_token is not None
    assert join.discovery.bootstrap_token.api_server_endpoint == "10.0.0.1:6443"
    assert join.discovery.tls_bootstrap_token == "abcdef.0123456789abcdef"
    assert join.control_plane is not None and join.control_plane.local_api_endpoint.advertise_address == "10.0.0.2"
    assert join.node_registration.name == "n2"
    assert join.node_registration.taints == [
        v1beta4.Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")
    ]
    path = write(
        tmp_path,
        V4 + "kind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    token: abcdef.0123456789abcdef\n"
        "    apiServerEndpoint: 10.0.0.1:6443\n    unsafeSkipCAVerification: true\n",
    )
    worker = load_join_config(path, {"node-name": "w1"})
    assert worker.node_registration.taints is None and worker.node_registration.name == "w1"
    with pytest.raises(ValidationError, match=r"can not mix '--config' with arguments \[token\]"):
        load_join_config(path, {"token": "abcdef.0123456789abcdef"})


def test_reset_and_upgrade_loaders(tmp_path: Path) -> None:
    reset = load_reset_config(None, {"cert-dir": "/srv/pki", "force": True, "cleanup-tmp-dir": True})
    assert reset.certificates_dir == "/srv/pki" and reset.force and reset.cleanup_tmp_dir
    assert reset.cri_socket == c.DEFAULT_CRI_SOCKET
    up = load_upgrade_config(None, {"etcd-upgrade": False, "kubernetes-version": "v1.33.1"})
    assert up.apply.etcd_upgrade is False and up.node.etcd_upgrade is False and up.plan.etcd_upgrade is False
    assert up.apply.kubernetes_version == "v1.33.1" and up.plan.kubernetes_version == "v1.33.1"
    path = write(tmp_path, V4 + "kind: UpgradeConfiguration\napply:\n  forceUpgrade: true\n")
    assert load_upgrade_config(path).apply.force_upgrade is True


def test_dump_roundtrip() -> None:
    cfg = load_init_config(None, {"pod-network-cidr": "10.244.0.0/16", "token": "abcdef.0123456789abcdef"})
    text = dump_init_config(cfg)
    docs = list(yaml.safe_load_all(text))
    assert [d["kind"] for d in docs] == ["InitConfiguration", "ClusterConfiguration"]
    assert docs[0]["bootstrapTokens"][0]["token"] == "abcdef.0123456789abcdef"
    stored = dump_cluster_configuration(cfg.cluster)
    assert "kind: ClusterConfiguration\n" in stored and "podSubnet: 10.244.0.0/16\n" in stored
    again = v1beta4.ClusterConfiguration.from_obj(yaml.safe_load(stored))
    assert again == cfg.cluster
    assert len(list(yaml.safe_load_all(dump_init_config(cfg, component_configs=True)))) == 4
