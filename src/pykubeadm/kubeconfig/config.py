"""Kubeconfig documents: build (client cert, token or cert files), serialize like client-go's clientcmd.Write, load,
write (0600), and read back the current cluster's CA and user credentials.

Called by kubeconfig.create (init phase, `kubeconfig user`), pki.renewal (certs embedded in kubeconfigs), join
(bootstrap-kubelet.conf) and kubelet-finalize (kubelet.conf pointing at kubelet-client-current.pem).
A kubeconfig is a plain dict shaped like clientcmd's v1.Config; keys serialize sorted, as client-go writes them.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import KubeconfigError
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "Kubeconfig",
    "client_cert_and_key_pem",
    "context_name",
    "create_basic",
    "create_with_cert_files",
    "create_with_certs",
    "create_with_token",
    "current_cluster",
    "current_user",
    "dump_kubeconfig",
    "load_kubeconfig",
    "parse_kubeconfig",
    "use_client_cert_files",
    "write_kubeconfig",
]

Kubeconfig = dict[str, Any]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def context_name(user: str, cluster: str) -> str:
    return f"{user}@{cluster}"


def create_basic(server: str, cluster_name: str, user_name: str, ca_pem: bytes) -> Kubeconfig:
    """One cluster (CA embedded), one context `<user>@<cluster>` made current, no credentials yet."""
    ctx = context_name(user_name, cluster_name)
    return {
        "apiVersion": "v1",
        "clusters": [{"cluster": {"certificate-authority-data": _b64(ca_pem), "server": server}, "name": cluster_name}],
        "contexts": [{"context": {"cluster": cluster_name, "user": user_name}, "name": ctx}],
        "current-context": ctx,
        "kind": "Config",
        "preferences": {},
        "users": [],
    }


def create_with_certs(
    server: str, cluster_name: str, user_name: str, ca_pem: bytes, client_key_pem: bytes, client_cert_pem: bytes
) -> Kubeconfig:
    """A kubeconfig with embedded client cert and key (client-certificate-data / client-key-data)."""
    cfg = create_basic(server, cluster_name, user_name, ca_pem)
    cfg["users"] = [
        {
            "name": user_name,
            "user": {"client-certificate-data": _b64(client_cert_pem), "client-key-data": _b64(client_key_pem)},
        }
    ]
    return cfg


def create_with_token(server: str, cluster_name: str, user_name: str, ca_pem: bytes, token: str) -> Kubeconfig:
    """A token-authenticated kubeconfig (join's bootstrap-kubelet.conf, `kubeconfig user --token`)."""
    cfg = create_basic(server, cluster_name, user_name, ca_pem)
    cfg["users"] = [{"name": user_name, "user": {"token": token}}]
    return cfg


def create_with_cert_files(
    server: str, cluster_name: str, user_name: str, ca_pem: bytes, cert_file: str, key_file: str
) -> Kubeconfig:
    """A kubeconfig whose user points at cert/key files (kubelet.conf → /var/lib/kubelet/pki/kubelet-client-current.pem)."""
    cfg = create_basic(server, cluster_name, user_name, ca_pem)
    cfg["users"] = [{"name": user_name, "user": {"client-certificate": cert_file, "client-key": key_file}}]
    return cfg


def _sorted(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _sorted(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [_sorted(v) for v in obj]
    return obj


def dump_kubeconfig(cfg: Kubeconfig) -> str:
    """YAML as clientcmd.Write emits it: keys sorted at every level, block style, `preferences: {}`."""
    text: str = yaml.dump(  # libyaml's emitter (PyYAML's wheels include it): the same text, a fifth of the time
        _sorted(cfg),
        Dumper=yaml.CSafeDumper,
        default_flow_style=False,
        sort_keys=True,
        width=1 << 30,
        allow_unicode=True,
    )
    return text


def write_kubeconfig(path: Path, cfg: Kubeconfig) -> None:
    """Write atomically with mode 0600."""
    try:
        write_file_atomic(path, dump_kubeconfig(cfg), c.PRIVATE_FILE_MODE)
    except OSError as err:
        raise KubeconfigError(f'failed to save kubeconfig file "{path}" on disk: {err}') from err


def parse_kubeconfig(text: str | bytes, source: str = "data") -> Kubeconfig:
    try:
        cfg = load_yaml(text)
    except yaml.YAMLError as err:
        raise KubeconfigError(f"failed to load kubeconfig file {source}: {err}") from err
    except RecursionError:
        raise KubeconfigError(f"failed to load kubeconfig file {source}: nested too deeply") from None
    if not isinstance(cfg, dict):
        raise KubeconfigError(f"failed to load kubeconfig file {source}: not a kubeconfig document")
    return cfg


def load_kubeconfig(path: Path) -> Kubeconfig:
    try:
        text = path.read_bytes()
    except OSError as err:
        raise KubeconfigError(f"failed to load kubeconfig file {path}: {err.strerror or err}") from err
    return parse_kubeconfig(text, str(path))


def _named(items: Any, name: str) -> dict[str, Any] | None:
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return None


def _body(item: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    """The `cluster`/`context`/`user` map of a named entry; a non-map is an invalid kubeconfig."""
    body = item.get(key) or {}
    if not isinstance(body, dict):
        raise KubeconfigError(f"invalid kubeconfig {source}: {item.get('name')!r} has a {key} that is not a map")
    return body


def _decode(data: str | None, path_value: str | None, source: str) -> bytes:
    if data:
        try:
            return base64.b64decode(data)
        except (ValueError, TypeError) as err:
            raise KubeconfigError(f"invalid base64 data in kubeconfig {source}: {err}") from err
    if path_value:
        try:
            return Path(str(path_value)).read_bytes()
        except (OSError, ValueError) as err:
            raise KubeconfigError(f"failed to read {path_value} referenced by kubeconfig {source}: {err}") from err
    return b""


def _current_context(cfg: Kubeconfig, source: str) -> dict[str, Any]:
    """The `context` body of the current context."""
    ctx = _named(cfg.get("contexts"), cfg.get("current-context", ""))
    if ctx is None:
        raise KubeconfigError(f"failed to find CurrentContext in Contexts of the kubeconfig file {source}")
    return _body(ctx, "context", source)


def current_cluster(cfg: Kubeconfig, source: str = "data") -> tuple[str, dict[str, Any], bytes]:
    """(name, cluster dict, CA PEM) of the current context's cluster."""
    cluster_name = _current_context(cfg, source).get("cluster", "")
    cluster = _named(cfg.get("clusters"), cluster_name)
    if cluster is None:
        raise KubeconfigError(
            f"failed to find the given CurrentContext Cluster in Clusters of the kubeconfig file {source}"
        )
    body = _body(cluster, "cluster", source)
    ca = _decode(body.get("certificate-authority-data"), body.get("certificate-authority"), source)
    return cluster_name, body, ca


def current_user(cfg: Kubeconfig, source: str = "data") -> tuple[str, dict[str, Any]]:
    """(name, user dict) of the current context's user."""
    user_name = _current_context(cfg, source).get("user", "")
    user = _named(cfg.get("users"), user_name)
    if user is None:
        raise KubeconfigError(f"failed to find the current user {user_name!r} in the kubeconfig file {source}")
    return user_name, _body(user, "user", source)


def client_cert_and_key_pem(cfg: Kubeconfig, source: str = "data") -> tuple[bytes, bytes]:
    """The current user's client certificate and key PEM (embedded data or files)."""
    _, user = current_user(cfg, source)
    cert = _decode(user.get("client-certificate-data"), user.get("client-certificate"), source)
    key = _decode(user.get("client-key-data"), user.get("client-key"), source)
    return cert, key


def use_client_cert_files(cfg: Kubeconfig, cert_file: str, key_file: str, source: str = "data") -> Kubeconfig:
    """Point the current user at cert/key files instead of embedded data (kubelet-finalize's kubelet.conf update to
    /var/lib/kubelet/pki/kubelet-client-current.pem); changes and returns `cfg`."""
    _, user = current_user(cfg, source)
    for k in ("client-certificate-data", "client-key-data", "token"):
        user.pop(k, None)
    user["client-certificate"] = cert_file
    user["client-key"] = key_file
    return cfg
