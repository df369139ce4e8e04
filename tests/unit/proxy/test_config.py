"""KubeProxyConfiguration v1alpha1 as kube-proxy reads it: defaults, kubeadm's document, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykubeadm.api.componentconfigs import default_kube_proxy_config
from pykubeadm.proxy.config import ConfigError, load_config, parse_config


def test_kubeadm_document_gets_kube_proxy_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.conf"
    path.write_text(yaml.safe_dump(default_kube_proxy_config(pod_subnet="10.244.0.0/16")))
    cfg = load_config(path)
    assert cfg.mode == ""
    assert cfg.healthz_bind_address == "0.0.0.0:10256"
    assert cfg.metrics_bind_address == "127.0.0.1:10249"
    assert cfg.kubeconfig == "/var/lib/kube-proxy/kubeconfig.conf"
    assert cfg.cluster_cidr == "10.244.0.0/16"
    assert (cfg.sync_period, cfg.min_sync_period, cfg.masquerade_bit) == (30.0, 1.0, 14)
    assert cfg.config_sync_period == 900.0


def test_nftables_section_is_used_in_nftables_mode() -> None:
    doc = default_kube_proxy_config(
        user={"mode": "nftables", "nftables": {"syncPeriod": "10s", "minSyncPeriod": "0s", "masqueradeBit": 3}}
    )
    cfg = parse_config(doc)
    assert (cfg.mode, cfg.sync_period, cfg.min_sync_period, cfg.masquerade_bit) == ("nftables", 10.0, 1.0, 3)


def test_bare_ip_bind_addresses_get_the_default_ports() -> None:
    cfg = parse_config(default_kube_proxy_config(user={"healthzBindAddress": "127.0.0.2", "metricsBindAddress": "::1"}))
    assert cfg.healthz_bind_address == "127.0.0.2:10256"
    assert cfg.metrics_bind_address == "[::1]:10249"


def test_unknown_mode_is_kube_proxys_error() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(default_kube_proxy_config(user={"mode": "userspace"}))
    assert str(err.value) == (
        'KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "userspace": must be iptables,ipvs,nftables or blank '
        "(blank means the best-available proxy [currently iptables])"
    )


def test_every_problem_is_reported_at_once() -> None:
    doc = default_kube_proxy_config(
        user={
            "mode": "x",
            "bindAddress": "nope",
            "metricsBindAddress": "1.2.3.4:99999",
            "iptables": {"masqueradeBit": 40},
        }
    )
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    text = str(err.value)
    for part in ("Mode.ProxyMode", "BindAddress", "MetricsBindAddress", "MasqueradeBit: Invalid value: 40"):
        assert part in text


def test_wrong_kind_is_rejected() -> None:
    with pytest.raises(ConfigError, match='no kind "KubeletConfiguration" is registered'):
        parse_config({"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeletConfiguration"})


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="failed to read config file"):
        load_config(tmp_path / "missing.conf")
