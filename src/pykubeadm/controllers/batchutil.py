"""Helpers shared by the job, cronjob, ttl-after-finished, garbagecollector and namespace controllers.

* `ApiPath`: where an object lives in the REST API (`/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>`);
* `request`: one raw JSON call through the lightkube client's connection (for kinds found by discovery, which have no
  lightkube model), raising lightkube's `ApiError` as the typed calls do;
* `delete`: DELETE with a propagation policy and a UID precondition (the garbage collector's deletes);
* `discover`: every served resource type (preferred version of each group) with its verbs, as the garbage collector and
  the namespace controller enumerate kinds (discovery.ServerPreferredResources), and the group versions that failed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from lightkube import AsyncClient

__all__ = ["ApiPath", "Discovery", "delete", "discover", "request"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApiPath:
    """A resource type's REST location (from discovery), and the URL of one object or collection of it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def url(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


async def request(
    client: AsyncClient,
    method: str,
    url: str,
    *,
    body: Any = None,
    params: Mapping[str, str] | None = None,
    content_type: str = "application/json",
) -> Any:
    """One JSON request through `client`'s connection; ApiError on an error status; the decoded body (or None)."""
    generic = client._client
    headers = {"Accept": "application/json"}
    content = None
    if body is not None:
        content = orjson.dumps(body)
        headers["Content-Type"] = content_type
    req = generic._client.build_request(method, url, params=dict(params or {}), content=content, headers=headers)
    resp = await generic.send(req)
    generic.raise_for_status(resp)
    return orjson.loads(resp.content) if resp.content else None


async def delete(client: AsyncClient, url: str, *, uid: str | None = None, policy: str | None = None) -> Any:
    """DELETE `url` with `propagationPolicy` and a UID precondition (so a re-created namesake survives)."""
    opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if uid:
        opts["preconditions"] = {"uid": uid}
    if policy:
        opts["propagationPolicy"] = policy
    return await request(client, "DELETE", url, body=opts)


@dataclass
class Discovery:
    """What discovery found: resource types, and the group versions whose discovery failed (with the error)."""

    paths: list[ApiPath]
    failed: dict[str, str]

    def by_kind(self, api_version: str, kind: str) -> ApiPath | None:
        """The served type for an ownerReference's apiVersion and kind (any version of the group)."""
        group = api_version.rpartition("/")[0]
        exact = [p for p in self.paths if p.kind == kind and p.api_version == api_version]
        if exact:
            return exact[0]
        return next((p for p in self.paths if p.kind == kind and p.group == group), None)


async def _group_versions(client: AsyncClient) -> list[str]:
    core = await request(client, "GET", "/api")
    versions = [f"/api/{v}" for v in (core or {}).get("versions") or []]
    groups = await request(client, "GET", "/apis")
    for group in (groups or {}).get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if not preferred and group.get("versions"):
            preferred = group["versions"][0].get("groupVersion")
        if preferred:
            versions.append(f"/apis/{preferred}")
    return versions


async def discover(client: AsyncClient) -> Discovery:
    """Every top-level resource type of each group's preferred version (subresources left out)."""
    paths: list[ApiPath] = []
    failed: dict[str, str] = {}
    for url in await _group_versions(client):
        group_version = url.split("/", 2)[2]
        try:
            listing = await request(client, "GET", url)
        except Exception as err:
            failed[group_version] = str(err)
            continue
        group, _, version = group_version.rpartition("/")
        for res in (listing or {}).get("resources") or []:
            if "/" in res.get("name", ""):
                continue
            paths.append(
                ApiPath(
                    group,
                    version,
                    res["name"],
                    res.get("kind", ""),
                    bool(res.get("namespaced")),
                    frozenset(res.get("verbs") or ()),
                )
            )
    return Discovery(paths, failed)
