"""Registry credentials for a CRI image pull, as the kubelet finds them: the Pod's `imagePullSecrets` and its
ServiceAccount's, of type `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`: {"auths": {registry: {...}}}) or
`kubernetes.io/dockercfg` (`.dockercfg`: {registry: {...}}), each entry matched against the image's registry host
and path (`https://index.docker.io/v1/` is docker.io; a key with a path matches images under it), turned into CRI
AuthConfigs in the order the kubelet tries them.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pykubeadm.cri.v1 import api_pb2 as api

__all__ = ["image_registry", "matching_auths", "parse_docker_config"]

_DOCKER_HUB = "docker.io"
_HUB_ALIASES = {"index.docker.io", "registry-1.docker.io", "docker.io"}
#: The host containerd pulls a registry's images from (Docker Hub's images come from registry-1.docker.io).
_REGISTRY_HOSTS = {_DOCKER_HUB: "registry-1.docker.io"}


def image_registry(image: str) -> tuple[str, str]:
    """(registry host[:port], repository path) of an image reference, Docker's way: no registry → docker.io."""
    ref = image.split("@", 1)[0]
    first, sep, rest = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = _DOCKER_HUB, ref if sep else f"library/{ref}"
    path = path.rsplit(":", 1)[0] if ":" in path.rsplit("/", 1)[-1] else path
    return (_DOCKER_HUB if host in _HUB_ALIASES else host), path


def _key(registry: str) -> tuple[str, str]:
    key = registry.strip()
    for scheme in ("https://", "http://"):
        key = key.removeprefix(scheme)
    host, _, path = key.partition("/")
    path = path.strip("/")
    if path in ("v1", "v2"):
        path = ""
    return (_DOCKER_HUB if host in _HUB_ALIASES else host), path


def parse_docker_config(secret: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """registry → {username, password, auth, ...} of a dockerconfigjson or dockercfg Secret ({} for other types or
    unreadable data)."""
    data = secret.get("data") or {}
    raw = data.get(".dockerconfigjson") or data.get(".dockercfg")
    if not raw:
        return {}
    try:
        doc = json.loads(base64.b64decode(raw))
    except (ValueError, binascii.Error):
        return {}
    if not isinstance(doc, dict):
        return {}
    auths = doc.get("auths") if ".dockerconfigjson" in data else doc
    return {str(k): v for k, v in (auths or {}).items() if isinstance(v, dict)}


def _auth_config(host: str, entry: Mapping[str, Any]) -> api.AuthConfig:
    """The CRI AuthConfig of an entry. server_address is a URL (`https://<host>`): containerd's CRI parses it as
    one and uses the credentials only for a registry whose host is that URL's host."""
    username, password = str(entry.get("username") or ""), str(entry.get("password") or "")
    auth = str(entry.get("auth") or "")
    if auth and not username:
        with contextlib.suppress(ValueError, binascii.Error):
            username, _, password = base64.b64decode(auth).decode().partition(":")
    return api.AuthConfig(
        username=username,
        password=password,
        server_address=f"https://{_REGISTRY_HOSTS.get(host, host)}",
        identity_token=str(entry.get("identitytoken") or ""),
        registry_token=str(entry.get("registrytoken") or ""),
    )


def matching_auths(image: str, secrets: Iterable[Mapping[str, Any]]) -> list[api.AuthConfig]:
    """The AuthConfigs of every secret entry whose registry (and path prefix) matches `image`, most specific first."""
    host, path = image_registry(image)
    found: list[tuple[int, api.AuthConfig]] = []
    for secret in secrets:
        for registry, entry in parse_docker_config(secret).items():
            key_host, key_path = _key(registry)
            if key_host != host:
                continue
            if key_path and path != key_path and not path.startswith(key_path + "/"):
                continue
            found.append((len(key_path), _auth_config(key_host, entry)))
    found.sort(key=lambda t: -t[0])
    return [a for _, a in found]
