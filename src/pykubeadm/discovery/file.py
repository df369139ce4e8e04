"""File discovery for `join` (kubeadm's discovery/file and discovery/https): a kubeconfig from a path or an HTTPS URL.

The file's cluster CA is trusted as given. If kube-public/cluster-info can be read with that CA, its server is used and
its CA must match the file's; if cluster-info cannot be read, the file's data is used as is.
"""

from __future__ import annotations

import base64
import logging
import ssl
from pathlib import Path
from typing import Any

import httpx2 as httpx

from pykubeadm import constants as c
from pykubeadm.discovery.token import DiscoveryError, DiscoveryResult
from pykubeadm.errors import KubeconfigError
from pykubeadm.kubeconfig.config import current_cluster, current_user, parse_kubeconfig
from pykubeadm.util.httpclienttransport import sync_http_client

__all__ = ["discover_with_file", "load_discovery_file"]

log = logging.getLogger(__name__)


def load_discovery_file(location: str, read_local: Any = None) -> dict[str, Any]:
    """The kubeconfig at a local path (mapped by `read_local(path) -> bytes`) or an https:// URL."""
    location = location.removeprefix("file://")
    if location.startswith("https://"):
        try:
            with sync_http_client(True, timeout=30.0) as client:
                r = client.get(location)
                r.raise_for_status()
        except httpx.HTTPError as err:
            raise DiscoveryError(f"failed to download the discovery file {location}: {err}") from err
        return parse_kubeconfig(r.content, location)
    if location.startswith("http://"):
        raise DiscoveryError(f"the discovery file URL {location} must use https://")
    try:
        data = read_local(location) if read_local else Path(location).read_bytes()
    except OSError as err:
        raise DiscoveryError(f"failed to read the discovery file {location}: {err.strerror or err}") from err
    return parse_kubeconfig(data, location)


def discover_with_file(kubeconfig: dict[str, Any], source: str) -> tuple[DiscoveryResult, dict[str, Any]]:
    """(server + CA, the file's user credentials or {}) from a discovery kubeconfig."""
    try:
        _, cluster, ca_pem = current_cluster(kubeconfig, source)
    except KubeconfigError as err:
        raise DiscoveryError(f"the discovery file {source} has no usable cluster: {err}") from err
    server = cluster.get("server") or ""
    if not server.startswith("https://"):
        raise DiscoveryError(f"the discovery file {source} must name an https:// server, got {server!r}")
    try:
        _, user = current_user(kubeconfig, source)
    except KubeconfigError:
        user = {}
    url = f"{server}/api/v1/namespaces/{c.NAMESPACE_PUBLIC}/configmaps/{c.CLUSTER_INFO_CONFIGMAP}"
    try:
        ctx = ssl.create_default_context(cadata=ca_pem.decode())
        with sync_http_client(ctx, timeout=10.0) as client:
            r = client.get(url)
        if r.status_code == 200:
            info = parse_kubeconfig((r.json().get("data") or {}).get(c.CLUSTER_INFO_KUBECONFIG_KEY, ""), url)
            body = (info.get("clusters") or [{}])[0].get("cluster") or {}
            if base64.b64decode(body.get("certificate-authority-data") or "") != ca_pem:
                raise DiscoveryError(
                    f"the CA in the discovery file {source} differs from the one in the cluster-info ConfigMap"
                )
            server = body.get("server") or server
    except (httpx.HTTPError, ValueError) as err:
        log.info("[discovery] could not read cluster-info with the discovery file's CA, using the file as is: %s", err)
    return DiscoveryResult(server, ca_pem), user
