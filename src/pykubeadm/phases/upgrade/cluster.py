"""What `upgrade` reads from the cluster and the node: kubeadm-config, versions of every component, the node's identity.

kubeadm's FetchInitConfigurationFromCluster and version getter: the ClusterConfiguration of kube-system/kubeadm-config
(printing the two `Reading configuration` lines), the node name (CN of kubelet.conf's client certificate), the node's
API endpoint (the kube-apiserver manifest's advertise-address annotation), and the versions `plan` compares (the API
server's /version, kubelets from Node status, control-plane and etcd image tags of the mirror Pods, CoreDNS and
kube-proxy images). Clients come from a kubeconfig whose file references are node paths, mapped under the root dir.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID
from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.apps_v1 import DaemonSet, Deployment
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from pykubeadm import constants as c
from pykubeadm.api import APIEndpoint, ClusterConfiguration
from pykubeadm.client import is_not_found, sync_client
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.phases.apply import retry_api_call
from pykubeadm.phases.clusterconfig import announce_config_read, cluster_configuration_of
from pykubeadm.phases.upgrade.plan import ClusterVersions

__all__ = [
    "cluster_versions",
    "fetch_cluster_configuration",
    "get_configmap",
    "kubeconfig_client",
    "local_api_endpoint",
    "mirror_pod_name",
    "node_name",
    "server_version",
]

Reporter = Callable[[str], None]
_PATH_KEYS = {
    "certificate-authority": "certificate-authority-data",
    "client-certificate": "client-certificate-data",
    "client-key": "client-key-data",
}


def _embed(section: dict[str, Any], layout: Layout) -> None:
    for key, data_key in _PATH_KEYS.items():
        path = section.pop(key, None)
        if path and not section.get(data_key):
            section[data_key] = base64.b64encode(layout.host(path).read_bytes()).decode()


def kubeconfig_client(path: Path, layout: Layout, *, timeout: float = 10.0) -> Client:
    """A client from a kubeconfig file on this node; certificate files it names are node paths (kubelet.conf)."""
    try:
        cfg = yaml.safe_load(path.read_text()) or {}
        for entry in cfg.get("clusters") or []:
            _embed(entry.get("cluster") or {}, layout)
        for entry in cfg.get("users") or []:
            _embed(entry.get("user") or {}, layout)
    except (OSError, yaml.YAMLError) as err:
        raise KubeadmError(f"couldn't create a Kubernetes client from file {str(path)!r}: {err}") from err
    return sync_client(KubeConfig.from_dict(cfg), timeout=timeout)


def get_configmap(client: Client, name: str, what: str = "") -> ConfigMap:
    return retry_api_call(
        lambda: client.get(ConfigMap, name, namespace=c.NAMESPACE_SYSTEM), what or f"get the ConfigMap {name}"
    )


def fetch_cluster_configuration(client: Client, out: Reporter, prefix: str) -> ClusterConfiguration:
    """The ClusterConfiguration stored in kube-system/kubeadm-config (kubeadm's `[upgrade/config]` lines)."""
    announce_config_read(out, prefix)
    try:
        cm = get_configmap(client, c.KUBEADM_CONFIG_CONFIGMAP)
    except KubeadmError as err:
        raise KubeadmError(f"{prefix} FATAL: failed to get config map: {err}") from err
    return cluster_configuration_of(cm.data)


def node_name(layout: Layout) -> str:
    """The node's name: the CN (`system:node:<name>`) of kubelet.conf's client certificate, else the hostname."""
    import socket

    try:
        cfg = yaml.safe_load(layout.kubelet_kubeconfig.read_text()) or {}
        user = (cfg.get("users") or [{}])[0].get("user") or {}
        if user.get("client-certificate-data"):
            pem = base64.b64decode(user["client-certificate-data"])
        else:
            pem = layout.host(user["client-certificate"]).read_bytes()
        cert = x509.load_pem_x509_certificate(pem)
        cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        if isinstance(cn, str) and cn.startswith(c.NODES_USER_PREFIX):
            return cn[len(c.NODES_USER_PREFIX) :]
    except (OSError, KeyError, IndexError, ValueError, yaml.YAMLError):
        pass
    return socket.gethostname().lower()


def local_api_endpoint(layout: Layout) -> APIEndpoint:
    """advertiseAddress and bindPort of this control-plane node, from its kube-apiserver manifest's annotation."""
    path = layout.manifest(c.KUBE_APISERVER)
    try:
        pod = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise KubeadmError(f"failed to read the kube-apiserver manifest {path}: {err}") from err
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(
        c.ANNOTATION_KUBE_APISERVER_ADVERTISE_ADDRESS_ENDPOINT, ""
    )
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise KubeadmError(
            f"the {c.ANNOTATION_KUBE_APISERVER_ADVERTISE_ADDRESS_ENDPOINT} annotation of {path} is missing or invalid"
        )
    return APIEndpoint(advertise_address=host.strip("[]"), bind_port=int(port))


def server_version(client: Client) -> str:
    """The API server's gitVersion (GET /version); lightkube has no typed call for it, so its HTTP client is used."""

    def get() -> str:
        resp = client._client._client.get("/version")
        resp.raise_for_status()
        return str(resp.json()["gitVersion"])

    try:
        return retry_api_call(get, "get the cluster version")
    except Exception as err:
        raise KubeadmError(f"Unable to fetch cluster version: {err}") from err


def mirror_pod_name(component: str, node: str) -> str:
    return f"{component}-{node}"


def _tag(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else ""


def _pods_by_node(client: Client, component: str) -> dict[str, str]:
    pods = client.list(Pod, namespace=c.NAMESPACE_SYSTEM, labels={"component": component})
    return {
        p.spec.nodeName or "": _tag(p.spec.containers[0].image or "")
        for p in pods
        if p.spec is not None and p.spec.containers
    }


def _workload_tag(client: Client, res: Any, name: str) -> str | None:
    try:
        obj = client.get(res, name, namespace=c.NAMESPACE_SYSTEM)
    except ApiError as err:
        if is_not_found(err):
            return None
        raise
    containers = obj.spec.template.spec.containers if obj.spec and obj.spec.template.spec else []
    return _tag(containers[0].image or "") if containers else None


def cluster_versions(client: Client, cluster_version: str, etcd_local: bool) -> ClusterVersions:
    """Everything `upgrade plan` compares against the target."""

    def read() -> ClusterVersions:
        kubelets = {
            n.metadata.name: (n.status.nodeInfo.kubeletVersion if n.status and n.status.nodeInfo else "")
            for n in client.list(Node)
            if n.metadata is not None and n.metadata.name
        }
        return ClusterVersions(
            cluster_version=cluster_version,
            kubelets=kubelets,
            control_plane={comp: _pods_by_node(client, comp) for comp in c.CONTROL_PLANE_COMPONENTS},
            etcd=_pods_by_node(client, c.ETCD) if etcd_local else {},
            coredns=_workload_tag(client, Deployment, c.COREDNS),
            kube_proxy=_workload_tag(client, DaemonSet, c.KUBE_PROXY),
        )

    return retry_api_call(read, "read the component versions of the cluster")
