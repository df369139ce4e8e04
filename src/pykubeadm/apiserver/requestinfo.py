"""Parse a request path + method into kube-apiserver's RequestInfo (resource vs non-resource, verb, group, namespace...).

Used by the request-info middleware; authorization attributes and routing are derived from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["RequestInfo", "parse_request_info"]

_NS_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class RequestInfo:
    path: str
    verb: str
    is_resource: bool
    api_prefix: str = ""  # "api" or "apis"
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    #: Path parts after the group/version (discovery when empty).
    parts: tuple[str, ...] = ()


def _truthy(v: str | None) -> bool:
    return (v or "").lower() in ("true", "1")


def parse_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    http_verb = method.lower()
    segs = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    if not segs or segs[0] not in ("api", "apis"):
        return RequestInfo(path=path, verb=http_verb, is_resource=False)
    prefix = segs[0]
    rest = segs[1:]
    if prefix == "api":
        if not rest:
            return RequestInfo(path=path, verb=http_verb, is_resource=False)
        group, version, rest = "", rest[0], rest[1:]
    else:
        if len(rest) < 2:
            return RequestInfo(path=path, verb=http_verb, is_resource=False)
        group, version, rest = rest[0], rest[1], rest[2:]
    if not rest:
        return RequestInfo(
            path=path, verb=http_verb, is_resource=False, api_prefix=prefix, api_group=group, api_version=version
        )
    verb = {"post": "create", "get": "get", "head": "get", "put": "update", "patch": "patch", "delete": "delete"}.get(
        http_verb, http_verb
    )
    parts = list(rest)
    if parts[0] == "watch":  # legacy /watch/ prefix
        parts = parts[1:]
        verb = "watch"
    namespace = ""
    if parts and parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NS_SUBRESOURCES:
            parts = parts[2:]
    name = parts[1] if len(parts) >= 2 else ""
    sub = parts[2] if len(parts) >= 3 else ""
    resource = parts[0] if parts else ""
    if not name:
        if verb == "get":
            verb = "list"
        elif verb == "delete":
            verb = "deletecollection"
    if verb in ("list", "get") and _truthy(query.get("watch")):
        verb = "watch"
    return RequestInfo(
        path=path,
        verb=verb,
        is_resource=True,
        api_prefix=prefix,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=sub,
        name=name,
        parts=tuple(parts),
    )
