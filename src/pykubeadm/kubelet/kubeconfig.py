"""Kubeconfig files as the kubelet sees them: load one into a ClientConfig, check it is usable, write the bootstrapped one.

Paths inside kubeconfigs are node paths (`/var/lib/kubelet/pki/kubelet-client-current.pem`), as the real kubelet
writes them; reading maps them under the node's root dir through `Layout.host()` (relative paths are relative to the
kubeconfig file). The file the kubelet writes after TLS bootstrap follows client-go's bootstrap `writeKubeconfigFromBootstrapping`.
"""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509

from pykubeadm import constants as c
from pykubeadm.errors import KubeconfigError
from pykubeadm.kubelet.api import ClientConfig
from pykubeadm.layout import Layout
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.yamlload import load_yaml

__all__ = ["bootstrapped_kubeconfig", "is_valid_client_kubeconfig", "load_client_config", "write_kubeconfig"]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml(path.read_text())
    except OSError as e:
        raise KubeconfigError(f"failed to read kubeconfig {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise KubeconfigError(f"failed to parse kubeconfig {path}: {e}") from e
    if not isinstance(data, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    return data


def _named(items: list[dict[str, Any]] | None, name: str, what: str, path: Path) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return item.get(what) or {}
    raise KubeconfigError(f"{what} {name!r} not found in kubeconfig {path}")


def load_client_config(path: Path, layout: Layout | None = None) -> ClientConfig:
    """The current context of kubeconfig `path` (a host path) as a ClientConfig; file references are node paths."""
    layout = layout or Layout()
    data = _read(path)
    ctx_name = data.get("current-context") or ""
    contexts = data.get("contexts") or []
    if not ctx_name and contexts:
        ctx_name = contexts[0].get("name", "")
    context = _named(contexts, ctx_name, "context", path)
    cluster = _named(data.get("clusters"), context.get("cluster", ""), "cluster", path)
    user = _named(data.get("users"), context.get("user", ""), "user", path) if context.get("user") else {}

    def resolve(ref: str) -> str:
        p = Path(ref)
        return str(layout.host(ref)) if p.is_absolute() else str(path.parent / p)

    def blob(data_key: str, file_key: str, holder: dict[str, Any]) -> bytes | None:
        if holder.get(data_key):
            return base64.b64decode(holder[data_key])
        if holder.get(file_key):
            try:
                return Path(resolve(holder[file_key])).read_bytes()
            except OSError as e:
                raise KubeconfigError(f"failed to read {holder[file_key]} referenced by {path}: {e.strerror}") from e
        return None

    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"kubeconfig {path} has no server in cluster {context.get('cluster')!r}")
    token = user.get("token")
    token_file = resolve(user["tokenFile"]) if not token and user.get("tokenFile") else None
    if token_file:
        token = Path(token_file).read_text().strip()
    cert_file = resolve(user["client-certificate"]) if user.get("client-certificate") else None
    key_file = resolve(user["client-key"]) if user.get("client-key") else None
    return ClientConfig(
        server=server,
        ca_pem=blob("certificate-authority-data", "certificate-authority", cluster),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        token=token,
        token_file=token_file,
        cert_file=cert_file,
        key_file=key_file,
        cert_pem=base64.b64decode(user["client-certificate-data"]) if user.get("client-certificate-data") else None,
        key_pem=base64.b64decode(user["client-key-data"]) if user.get("client-key-data") else None,
    )


def is_valid_client_kubeconfig(path: Path, layout: Layout | None = None, now: dt.datetime | None = None) -> bool:
    """bootstrap's isClientConfigStillValid: loads, has client-cert data, every certificate parses and is unexpired."""
    if not path.exists():
        return False
    try:
        cfg = load_client_config(path, layout)
        pem = cfg.cert_pem
        if pem is None and cfg.cert_file:
            pem = Path(cfg.cert_file).read_bytes()
        if not pem:
            return False
        certs = x509.load_pem_x509_certificates(pem)
    except (KubeconfigError, OSError, ValueError):
        return False
    now = now or dt.datetime.now(dt.UTC)
    return bool(certs) and all(cert.not_valid_after_utc > now for cert in certs)


def bootstrapped_kubeconfig(bootstrap: Path, cert_dir_node_path: str) -> dict[str, Any]:
    """The kubeconfig the kubelet writes from its bootstrap kubeconfig: same server and CA, client cert = -current.pem."""
    data = _read(bootstrap)
    ctx_name = data.get("current-context") or ""
    context = _named(data.get("contexts"), ctx_name, "context", bootstrap)
    src = _named(data.get("clusters"), context.get("cluster", ""), "cluster", bootstrap)
    cluster: dict[str, Any] = {"server": src.get("server", "")}
    if src.get("certificate-authority"):
        cluster["certificate-authority"] = src["certificate-authority"]
    elif src.get("certificate-authority-data"):
        cluster["certificate-authority-data"] = src["certificate-authority-data"]
    if src.get("insecure-skip-tls-verify"):
        cluster["insecure-skip-tls-verify"] = True
    current = f"{cert_dir_node_path.rstrip('/')}/{c.KUBELET_CLIENT_CURRENT_FILE}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster}],
        "contexts": [
            {
                "name": "default-context",
                "context": {"cluster": "default-cluster", "namespace": "default", "user": "default-auth"},
            }
        ],
        "current-context": "default-context",
        "preferences": {},
        "users": [{"name": "default-auth", "user": {"client-certificate": current, "client-key": current}}],
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Write a kubeconfig atomically with mode 0600."""
    write_file_atomic(path, yaml.safe_dump(config, sort_keys=True), c.PRIVATE_FILE_MODE)
