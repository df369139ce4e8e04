"""What `join` learns from the cluster: discovery → TLS-bootstrap kubeconfig, its client, kubeadm-config, kubelet-config.

kubeadm's joinData.TLSBootstrapCfg / InitCfg / Client: each is computed once and cached in the run data.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError

if TYPE_CHECKING:
    from lightkube import Client
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.api import ClusterConfiguration
    from pykubeadm.phases.join.data import JoinData

# Discovery, the Kubernetes client (lightkube, httpx2) and YAML are imported by the functions that use them, when a
# phase runs: the join phase tree (and `join --help`) is declared without them.

__all__ = ["bootstrap_client", "cluster_configuration", "kubelet_configuration", "tls_bootstrap_kubeconfig"]


def _timeout(data: JoinData, name: str, default: timedelta) -> float:
    t = data.cfg.timeouts
    value = getattr(t, name, None) if t is not None else None
    return (value or default).total_seconds()


def tls_bootstrap_kubeconfig(data: JoinData) -> dict[str, Any]:
    """Discover the cluster and build the kubelet's TLS-bootstrap kubeconfig (user tls-bootstrap-token-user)."""
    from pykubeadm.discovery.file import discover_with_file, load_discovery_file
    from pykubeadm.discovery.token import DiscoveryError, discover_with_token
    from pykubeadm.kubeconfig.config import create_basic, create_with_token

    cached = data.state.get("tls_bootstrap")
    if cached is not None:
        return cached
    d = data.cfg.discovery
    timeout = _timeout(data, "discovery", c.DISCOVERY_TIMEOUT)
    if d.file is not None:
        raw = load_discovery_file(d.file.kube_config_path, lambda p: data.real_layout.host(p).read_bytes())
        result, user = discover_with_file(raw, d.file.kube_config_path)
        if user and not d.tls_bootstrap_token:
            cfg = create_basic(result.server, c.DEFAULT_CLUSTER_NAME, c.TLS_BOOTSTRAP_USER, result.ca_pem)
            cfg["users"] = [{"name": c.TLS_BOOTSTRAP_USER, "user": user}]
            data.state["tls_bootstrap"] = cfg
            return cfg
    elif d.bootstrap_token is not None:
        bt = d.bootstrap_token
        result = discover_with_token(
            bt.api_server_endpoint,
            bt.token,
            list(bt.ca_cert_hashes),
            unsafe_skip_ca_verification=bt.unsafe_skip_ca_verification,
            timeout=timeout,
            interval=min(c.DISCOVERY_RETRY_INTERVAL.total_seconds(), max(timeout / 10, 0.2)),
            report=data.out,
        )
    else:
        raise DiscoveryError("no discovery method set: pass --token/--discovery-token or --discovery-file")
    if not d.tls_bootstrap_token:
        raise DiscoveryError("no TLS bootstrap token: pass --token or --tls-bootstrap-token")
    cfg = create_with_token(
        result.server, c.DEFAULT_CLUSTER_NAME, c.TLS_BOOTSTRAP_USER, result.ca_pem, d.tls_bootstrap_token
    )
    data.state["tls_bootstrap"] = cfg
    return cfg


def bootstrap_client(data: JoinData) -> Client:
    from lightkube import KubeConfig

    from pykubeadm.client import sync_client

    client = data.state.get("bootstrap_client")
    if client is None:
        client = sync_client(KubeConfig.from_dict(tls_bootstrap_kubeconfig(data)))
        data.state["bootstrap_client"] = client
    return client


def _configmap(data: JoinData, name: str) -> ConfigMap:
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.phases.apply import retry_api_call

    client = bootstrap_client(data)

    def get() -> ConfigMap:
        return client.get(ConfigMap, name, namespace=c.NAMESPACE_SYSTEM)

    try:
        return retry_api_call(
            get,
            f"get the {name} ConfigMap",
            timeout=_timeout(data, "kubernetes_api_call", c.KUBERNETES_API_CALL_TIMEOUT),
        )
    except KubeadmError as err:
        raise KubeadmError(f"unable to fetch the {name} ConfigMap from the cluster: {err}") from err


def cluster_configuration(data: JoinData) -> ClusterConfiguration:
    """The ClusterConfiguration from kube-system/kubeadm-config (read with the bootstrap token)."""
    from pykubeadm.phases.clusterconfig import announce_config_read, cluster_configuration_of

    cached = data.state.get("cluster_configuration")
    if cached is None:
        announce_config_read(data.out, "[preflight]")
        cluster = cluster_configuration_of(_configmap(data, c.KUBEADM_CONFIG_CONFIGMAP).data)
        data.state["cluster_configuration"] = cached = cluster
    return cached


def kubelet_configuration(data: JoinData) -> dict[str, Any]:
    """The cluster-wide KubeletConfiguration from kube-system/kubelet-config."""
    import yaml

    from pykubeadm.util.yamlload import load_yaml

    cm = _configmap(data, c.KUBELET_BASE_CONFIGMAP)
    try:
        cfg = load_yaml((cm.data or {}).get(c.KUBELET_BASE_CONFIGMAP_KEY, ""))
    except yaml.YAMLError as err:
        raise KubeadmError(f"the kubelet-config ConfigMap is not valid YAML: {err}") from err
    if not isinstance(cfg, dict):
        raise KubeadmError("the kubelet-config ConfigMap has no KubeletConfiguration")
    return cfg


def node_is_ready(data: JoinData, name: str) -> bool:
    from lightkube import ApiError
    from lightkube.resources.core_v1 import Node

    try:
        node = bootstrap_client(data).get(Node, name)
    except ApiError:
        return False
    if node.status is None:  # a Node object nobody has reported status for (e.g. created by hand) is not Ready
        return False
    return any(cond.type == "Ready" and cond.status == "True" for cond in node.status.conditions or [])
