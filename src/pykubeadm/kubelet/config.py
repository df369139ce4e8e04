"""The kubelet's settings: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) merged with command-line flags.

`load_kubelet_configuration` reads the `--config` file (unknown fields are kept as data); `KubeletSettings` is the
resolved result the kubelet runs with (flags win over the file, as in the real kubelet for the flags kubeadm passes).
Node paths stay node paths here; `Layout.host()` maps them where files are read or written.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import ValidationError
from pykubeadm.kubelet.imagegc import ImageGCPolicy
from pykubeadm.util.goduration import parse_duration
from pykubeadm.util.yamlload import load_yaml

__all__ = ["KubeletSettings", "load_kubelet_configuration", "node_hostname"]


def load_kubelet_configuration(path: Path) -> dict[str, Any]:
    """The KubeletConfiguration document at `path` as a dict (validated kind/apiVersion)."""
    try:
        data = load_yaml(path.read_text()) or {}
    except OSError as e:
        raise ValidationError([f"failed to load kubelet config file, path: {path}, error: {e.strerror}"]) from e
    except yaml.YAMLError as e:
        raise ValidationError([f"failed to parse kubelet config file {path}: {e}"]) from e
    if not isinstance(data, dict):
        raise ValidationError([f"kubelet config file {path} is not a KubeletConfiguration"])
    if data.get("kind", "KubeletConfiguration") != "KubeletConfiguration":
        raise ValidationError([f'kubelet config file {path}: kind "{data.get("kind")}" is not KubeletConfiguration'])
    return data


def node_hostname(override: str | None) -> str:
    """The lowercased, trimmed --hostname-override, else the OS hostname."""
    name = (override or "").strip() or socket.gethostname()
    return name.strip().lower()


@dataclass
class KubeletSettings:
    """Everything the kubelet needs to run, resolved from flags and the config file."""

    node_name: str
    node_ip: str | None = None
    kubeconfig: str | None = None
    bootstrap_kubeconfig: str | None = None
    cert_dir: str = f"{c.KUBELET_RUN_DIR}/{c.KUBELET_PKI_SUBDIR}"
    static_pod_path: str | None = None
    rotate_certificates: bool = False
    server_tls_bootstrap: bool = False
    #: not a kubelet setting: renew this node's kubeadm control-plane certificates this long before expiry (None: off)
    control_plane_cert_renewal_window: timedelta | None = None
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    address: str = "0.0.0.0"
    port: int = c.KUBELET_PORT
    healthz_bind_address: str = "127.0.0.1"
    healthz_port: int = c.KUBELET_HEALTHZ_PORT
    client_ca_file: str | None = None
    anonymous_auth: bool = False
    webhook_authn: bool = True
    authorization_mode: str = "Webhook"
    cluster_dns: list[str] = field(default_factory=list)
    cluster_domain: str = ""
    node_labels: dict[str, str] = field(default_factory=dict)
    register_with_taints: list[dict[str, str]] = field(default_factory=list)
    register_node: bool = True
    node_status_update_frequency: float = 10.0
    node_lease_duration_seconds: int = 40
    container_runtime_endpoint: str = ""
    pod_infra_container_image: str = ""
    max_pods: int = 110
    #: The built-in runtime's CNI network (containerd's cni conf_dir/bin_dir): "" = Pods share the node's network.
    cni_conf_dir: str = ""
    cni_bin_dir: str = c.DEFAULT_CNI_BIN_DIR
    cni_cache_dir: str = c.DEFAULT_CNI_CACHE_DIR
    #: imageGCHighThresholdPercent, imageGCLowThresholdPercent, imageMinimumGCAge, imageMaximumGCAge
    image_gc: ImageGCPolicy = field(default_factory=ImageGCPolicy)
    raw_config: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(cls, config: dict[str, Any], flags: dict[str, Any]) -> KubeletSettings:
        """Merge the config file with flags (flags that were given override the file)."""
        authn = config.get("authentication") or {}
        authz = config.get("authorization") or {}

        def pick(flag: str, key: str, default: Any) -> Any:
            v = flags.get(flag)
            if v is not None:
                return v
            return config.get(key, default) if config.get(key) is not None else default

        node_ip = flags.get("node_ip") or None
        if node_ip:
            try:
                ipaddress.ip_address(node_ip.split(",")[0])
            except ValueError as e:
                raise ValidationError([f'invalid value "{node_ip}" for --node-ip: not an IP address']) from e
            node_ip = node_ip.split(",")[0]
        s = cls(
            node_name=node_hostname(flags.get("hostname_override")),
            node_ip=node_ip,
            kubeconfig=flags.get("kubeconfig") or None,
            bootstrap_kubeconfig=flags.get("bootstrap_kubeconfig") or None,
            cert_dir=flags.get("cert_dir") or f"{c.KUBELET_RUN_DIR}/{c.KUBELET_PKI_SUBDIR}",
            static_pod_path=pick("pod_manifest_path", "staticPodPath", None),
            rotate_certificates=bool(pick("rotate_certificates", "rotateCertificates", False)),
            server_tls_bootstrap=bool(pick("rotate_server_certificates", "serverTLSBootstrap", False)),
            control_plane_cert_renewal_window=_renewal_window(flags.get("control_plane_cert_renewal_window")),
            tls_cert_file=pick("tls_cert_file", "tlsCertFile", None),
            tls_private_key_file=pick("tls_private_key_file", "tlsPrivateKeyFile", None),
            address=pick("address", "address", "0.0.0.0"),
            port=int(pick("port", "port", c.KUBELET_PORT)),
            healthz_bind_address=pick("healthz_bind_address", "healthzBindAddress", "127.0.0.1"),
            healthz_port=int(pick("healthz_port", "healthzPort", c.KUBELET_HEALTHZ_PORT)),
            client_ca_file=flags.get("client_ca_file") or (authn.get("x509") or {}).get("clientCAFile") or None,
            anonymous_auth=bool(
                flags["anonymous_auth"]
                if flags.get("anonymous_auth") is not None
                else (authn.get("anonymous") or {}).get("enabled", False)
            ),
            webhook_authn=bool((authn.get("webhook") or {}).get("enabled", True)),
            authorization_mode=flags.get("authorization_mode") or authz.get("mode") or "Webhook",
            cluster_dns=list(flags.get("cluster_dns") or config.get("clusterDNS") or []),
            cluster_domain=flags.get("cluster_domain") or config.get("clusterDomain") or "",
            node_labels=dict(flags.get("node_labels") or {}),
            register_with_taints=list(flags.get("register_with_taints") or config.get("registerWithTaints") or []),
            register_node=bool(pick("register_node", "registerNode", True)),
            node_status_update_frequency=_seconds(config.get("nodeStatusUpdateFrequency"), 10.0),
            node_lease_duration_seconds=int(config.get("nodeLeaseDurationSeconds") or 40),
            container_runtime_endpoint=flags.get("container_runtime_endpoint")
            or config.get("containerRuntimeEndpoint")
            or "",
            pod_infra_container_image=flags.get("pod_infra_container_image") or "",
            max_pods=int(config.get("maxPods") or 110),
            cni_conf_dir=flags.get("cni_conf_dir") or "",
            cni_bin_dir=flags.get("cni_bin_dir") or c.DEFAULT_CNI_BIN_DIR,
            cni_cache_dir=flags.get("cni_cache_dir") or c.DEFAULT_CNI_CACHE_DIR,
            image_gc=ImageGCPolicy.from_config(
                {
                    **config,
                    **{key: flags[flag] for flag, key in _IMAGE_GC_FLAGS.items() if flags.get(flag) is not None},
                }
            ),
            raw_config=config,
        )
        if s.port <= 0 or s.port > 65535:
            raise ValidationError([f"invalid configuration: port ({s.port}) must be between 1 and 65535"])
        if s.authorization_mode not in ("Webhook", "AlwaysAllow"):
            raise ValidationError(
                [f"invalid configuration: authorization.mode {s.authorization_mode!r} is not supported"]
            )
        return s

    @property
    def serve_address(self) -> str:
        """Where :10250 listens: `address`, except that a wildcard with --node-ip binds the node's IP (several
        built-in kubelets share one machine)."""
        if self.address in ("0.0.0.0", "::", "") and self.node_ip:
            return self.node_ip
        return self.address or "0.0.0.0"

    @property
    def healthz_address(self) -> str:
        """Where healthz listens: healthzBindAddress, except that the default 127.0.0.1 becomes --node-ip when that is
        another loopback address (127.0.10.x in the lab), so every node has its own :10248."""
        if self.node_ip and self.healthz_bind_address in ("127.0.0.1", "", "0.0.0.0"):
            ip = ipaddress.ip_address(self.node_ip)
            if ip.is_loopback or self.healthz_bind_address == "0.0.0.0":
                return self.node_ip
        return self.healthz_bind_address or "127.0.0.1"


#: The kubelet's (deprecated) image GC flags → the KubeletConfiguration fields they set.
_IMAGE_GC_FLAGS = {
    "image_gc_high_threshold": "imageGCHighThresholdPercent",
    "image_gc_low_threshold": "imageGCLowThresholdPercent",
    "minimum_image_ttl_duration": "imageMinimumGCAge",
}


def _seconds(value: Any, default: float) -> float:
    if value in (None, "", "0s", 0):
        return default
    from pykubeadm.api._base import parse_duration

    return parse_duration(str(value)).total_seconds()


def _renewal_window(value: str | None) -> timedelta | None:
    """--control-plane-cert-renewal-window: a Go duration; empty or 0 is off."""
    if not value:
        return None
    try:
        window = parse_duration(value)
    except ValueError as e:
        raise ValidationError(
            [f'invalid value "{value}" for --control-plane-cert-renewal-window: {e} (e.g. 2160h for 90 days)']
        ) from e
    return window if window > timedelta(0) else None
