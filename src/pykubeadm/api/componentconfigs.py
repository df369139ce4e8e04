"""Component configs as kubeadm generates them: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) and
KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1), kept as plain dicts.

kubeadm marshals the Go structs without applying the components' own defaults, so the stored YAML has many zero values
(`0s`, `""`, `null`); those skeletons are reproduced here. A user-supplied document is merged over the skeleton, then
kubeadm's own settings are filled in where the user left them unset (kubeadm's `Default()` of each component config),
with a warning where the user's value differs from what kubeadm would pick for cluster DNS/domain and static Pod path.
"""

from __future__ import annotations

import copy
import ipaddress
import logging
import shutil
import subprocess
from typing import Any

from pykubeadm import constants as c

__all__ = [
    "COMPONENT_CONFIG_KINDS",
    "KUBELET_SYSTEMD_RESOLVER_CONFIG",
    "default_kube_proxy_config",
    "default_kubelet_config",
    "systemd_resolved_active",
]

log = logging.getLogger(__name__)

#: kind → apiVersion of the component configs kubeadm handles.
COMPONENT_CONFIG_KINDS: dict[str, str] = {
    "KubeletConfiguration": c.KUBELET_CONFIG_API_VERSION,
    "KubeProxyConfiguration": c.KUBE_PROXY_CONFIG_API_VERSION,
}
KUBELET_SYSTEMD_RESOLVER_CONFIG = "/run/systemd/resolve/resolv.conf"
KUBE_PROXY_KUBECONFIG = c.KUBE_PROXY_CONFIG_MOUNT + "/" + c.KUBE_PROXY_KUBECONFIG_KEY

_LOGGING_ZERO: dict[str, Any] = {
    "flushFrequency": 0,
    "options": {"json": {"infoBufferSize": "0"}, "text": {"infoBufferSize": "0"}},
    "verbosity": 0,
}

_KUBELET_SKELETON: dict[str, Any] = {
    "apiVersion": c.KUBELET_CONFIG_API_VERSION,
    "kind": "KubeletConfiguration",
    "authentication": {
        "anonymous": {},
        "webhook": {"cacheTTL": "0s"},
        "x509": {},
    },
    "authorization": {"webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"}},
    "containerRuntimeEndpoint": "",
    "cpuManagerReconcilePeriod": "0s",
    "crashLoopBackOff": {},  # a struct field since v1.32: Go's encoder writes it even when empty
    "evictionPressureTransitionPeriod": "0s",
    "fileCheckFrequency": "0s",
    "httpCheckFrequency": "0s",
    "imageMaximumGCAge": "0s",
    "imageMinimumGCAge": "0s",
    "logging": _LOGGING_ZERO,
    "memorySwap": {},
    "nodeStatusReportFrequency": "0s",
    "nodeStatusUpdateFrequency": "0s",
    "runtimeRequestTimeout": "0s",
    "shutdownGracePeriod": "0s",
    "shutdownGracePeriodCriticalPods": "0s",
    "streamingConnectionIdleTimeout": "0s",
    "syncFrequency": "0s",
    "volumeStatsAggPeriod": "0s",
}

_KUBE_PROXY_SKELETON: dict[str, Any] = {
    "apiVersion": c.KUBE_PROXY_CONFIG_API_VERSION,
    "kind": "KubeProxyConfiguration",
    "bindAddress": "",
    "bindAddressHardFail": False,
    "clientConnection": {"acceptContentTypes": "", "burst": 0, "contentType": "", "kubeconfig": "", "qps": 0},
    "clusterCIDR": "",
    "configSyncPeriod": "0s",
    "conntrack": {
        "maxPerCore": None,
        "min": None,
        "tcpBeLiberal": False,
        "tcpCloseWaitTimeout": None,
        "tcpEstablishedTimeout": None,
        "udpStreamTimeout": "0s",
        "udpTimeout": "0s",
    },
    "detectLocal": {"bridgeInterface": "", "interfaceNamePrefix": ""},
    "detectLocalMode": "",
    "enableProfiling": False,
    "healthzBindAddress": "",
    "hostnameOverride": "",
    "iptables": {
        "localhostNodePorts": None,
        "masqueradeAll": False,
        "masqueradeBit": None,
        "minSyncPeriod": "0s",
        "syncPeriod": "0s",
    },
    "ipvs": {
        "excludeCIDRs": None,
        "minSyncPeriod": "0s",
        "scheduler": "",
        "strictARP": False,
        "syncPeriod": "0s",
        "tcpFinTimeout": "0s",
        "tcpTimeout": "0s",
        "udpTimeout": "0s",
    },
    "logging": _LOGGING_ZERO,
    "metricsBindAddress": "",
    "mode": "",
    "nftables": {"masqueradeAll": False, "masqueradeBit": None, "minSyncPeriod": "0s", "syncPeriod": "0s"},
    "nodePortAddresses": None,
    "oomScoreAdj": None,
    "portRange": "",
    "showHiddenMetricsForVersion": "",
    "winkernel": {
        "enableDSR": False,
        "forwardHealthCheckVip": False,
        "networkName": "",
        "rootHnsEndpointName": "",
        "sourceVip": "",
    },
}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def systemd_resolved_active() -> bool:
    """Whether the systemd-resolved service is active (kubeadm then points the kubelet at its resolv.conf)."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return False
    try:
        r = subprocess.run(
            [systemctl, "is-active", "--quiet", "systemd-resolved"], capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _set_recommended(cfg: dict[str, Any], key: str, value: Any) -> None:
    """Set a KubeletConfiguration field kubeadm recommends when it is empty; keep (with kubeadm's warning) another."""
    if not cfg.get(key):
        cfg[key] = value
    elif cfg[key] != value:
        log.warning(
            'The recommended value for "%s" in "KubeletConfiguration" is: %s; the provided value is: %s',
            key,
            value,
            cfg[key],
        )


def default_kubelet_config(
    *,
    cluster_dns: str,
    cluster_domain: str = c.DEFAULT_DNS_DOMAIN,
    certificates_dir: str = c.DEFAULT_CERTIFICATES_DIR,
    user: dict[str, Any] | None = None,
    systemd_resolved: bool | None = None,
) -> dict[str, Any]:
    """The KubeletConfiguration kubeadm stores in the kubelet-config ConfigMap and writes to /var/lib/kubelet/config.yaml.

    `cluster_dns` is the 10th IP of the service subnet; `user` is the user's KubeletConfiguration document, if any;
    `systemd_resolved=None` detects whether systemd-resolved is active.
    """
    cfg = _merge(_KUBELET_SKELETON, user or {})
    cfg["apiVersion"] = c.KUBELET_CONFIG_API_VERSION
    cfg["kind"] = "KubeletConfiguration"
    _set_recommended(cfg, "staticPodPath", c.KUBERNETES_DIR + "/" + c.MANIFESTS_SUBDIR)
    _set_recommended(cfg, "clusterDNS", [cluster_dns])
    _set_recommended(cfg, "clusterDomain", cluster_domain)
    authn = cfg.setdefault("authentication", {})
    x509 = authn.setdefault("x509", {})
    if not x509.get("clientCAFile"):
        x509["clientCAFile"] = certificates_dir.rstrip("/") + "/ca.crt"
    authn.setdefault("anonymous", {}).setdefault("enabled", False)
    authn.setdefault("webhook", {}).setdefault("enabled", True)
    authz = cfg.setdefault("authorization", {})
    if not authz.get("mode"):
        authz["mode"] = "Webhook"
    if not cfg.get("healthzBindAddress"):
        cfg["healthzBindAddress"] = "127.0.0.1"
    if cfg.get("healthzPort") is None:
        cfg["healthzPort"] = c.KUBELET_HEALTHZ_PORT
    cfg.setdefault("rotateCertificates", True)
    if not cfg.get("cgroupDriver"):
        cfg["cgroupDriver"] = "systemd"
    if "resolvConf" not in cfg:
        if systemd_resolved is None:
            systemd_resolved = systemd_resolved_active()
        if systemd_resolved:
            cfg["resolvConf"] = KUBELET_SYSTEMD_RESOLVER_CONFIG
    return cfg


def default_kube_proxy_config(
    *,
    pod_subnet: str = "",
    advertise_address: str = "",
    user: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The KubeProxyConfiguration kubeadm stores in the kube-proxy ConfigMap (key `config.conf`)."""
    cfg = _merge(_KUBE_PROXY_SKELETON, user or {})
    cfg["apiVersion"] = c.KUBE_PROXY_CONFIG_API_VERSION
    cfg["kind"] = "KubeProxyConfiguration"
    if not cfg.get("bindAddress"):
        cfg["bindAddress"] = "0.0.0.0"
        try:
            if advertise_address and ipaddress.ip_address(advertise_address).version == 6:
                cfg["bindAddress"] = "::"
        except ValueError:
            pass
    if not cfg.get("clusterCIDR") and pod_subnet:
        cfg["clusterCIDR"] = pod_subnet
    conn = cfg.setdefault("clientConnection", {})
    if not conn.get("kubeconfig"):
        conn["kubeconfig"] = KUBE_PROXY_KUBECONFIG
    elif conn["kubeconfig"] != KUBE_PROXY_KUBECONFIG:
        log.warning(
            'The recommended value for "clientConnection.kubeconfig" in "KubeProxyConfiguration" is: %s; '
            "the provided value is: %s",
            KUBE_PROXY_KUBECONFIG,
            conn["kubeconfig"],
        )
    return cfg
