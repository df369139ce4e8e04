"""Discovery documents: /version, /api, /apis, /apis/<g>, group versions (legacy, `application/json`), /openapi/v2.

Built once from the registry's strategies and virtual kinds; served by handlers/nonresource.py.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pykubeadm.apiserver.registry import STRATEGIES, VIRTUAL_KINDS

__all__ = ["api_groups", "api_resource_list", "api_versions", "group_versions", "version_info"]

Obj = dict[str, Any]

_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "approval": ["get", "patch", "update"],
    "binding": ["create"],
    "finalize": ["update"],
}


def version_info(git_version: str) -> dict[str, str]:
    v = git_version if git_version.startswith("v") else "v" + git_version
    core = v[1:].split("-", 1)[0].split("+", 1)[0]
    parts = ([*core.split("."), "0", "0"])[:3]
    return {
        "major": parts[0],
        "minor": parts[1],
        "gitVersion": v,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def group_versions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for s in STRATEGIES:
        if s.version not in out[s.group]:
            out[s.group].append(s.version)
    for v in VIRTUAL_KINDS:
        if v.version not in out[v.group]:
            out[v.group].append(v.version)
    return dict(out)


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> Obj:
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_groups() -> Obj:
    groups = [_group(g, vs) for g, vs in group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> Obj | None:
    vs = group_versions().get(name)
    if not vs or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, vs)}


def api_resource_list(group: str, version: str) -> Obj | None:
    if version not in group_versions().get(group, []):
        return None
    resources: list[Obj] = []
    for s in STRATEGIES:
        if (s.group, s.version) != (group, version):
            continue
        r: Obj = {
            "name": s.plural,
            "singularName": s.singular,
            "namespaced": s.namespaced,
            "kind": s.kind,
            "verbs": list(s.verbs),
        }
        if s.short_names:
            r["shortNames"] = list(s.short_names)
        if s.categories:
            r["categories"] = list(s.categories)
        resources.append(r)
        for sub in s.subresources:
            entry: Obj = {
                "name": f"{s.plural}/{sub}",
                "singularName": "",
                "namespaced": s.namespaced,
                "kind": "Binding" if sub == "binding" else s.kind,
                "verbs": _SUB_VERBS.get(sub, ["get"]),
            }
            resources.append(entry)
        if s.plural == "deployments":
            resources.append(
                {
                    "name": "deployments/scale",
                    "singularName": "",
                    "namespaced": True,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        if s.plural == "serviceaccounts":
            resources.append(
                {
                    "name": "serviceaccounts/token",
                    "singularName": "",
                    "namespaced": True,
                    "group": "authentication.k8s.io",
                    "version": "v1",
                    "kind": "TokenRequest",
                    "verbs": ["create"],
                }
            )
    for v in VIRTUAL_KINDS:
        if (v.group, v.version) == (group, version):
            resources.append(
                {
                    "name": v.plural,
                    "singularName": v.kind.lower(),
                    "namespaced": v.namespaced,
                    "kind": v.kind,
                    "verbs": ["create"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


AGGREGATED_AS = "APIGroupDiscoveryList"


def aggregated_version(accept: str) -> str | None:
    """The apidiscovery version to answer with (`v2`, `v2beta1`) if the Accept header asks for aggregated discovery."""
    offered = []
    for part in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in part.split(";")[1:] if "=" in p)
        if params.get("as") == AGGREGATED_AS and params.get("g") == "apidiscovery.k8s.io":
            offered.append(params.get("v", ""))
    for v in offered:
        if v in ("v2", "v2beta1"):
            return v
    return None


def _kind_ref(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "version": version, "kind": kind}


def aggregated(core: bool, version: str) -> Obj:
    """apidiscovery.k8s.io/<version> APIGroupDiscoveryList for /api (core) or /apis (every other group)."""
    items = []
    for group, versions in group_versions().items():
        if (group == "") != core:
            continue
        vitems = []
        for v in versions:
            doc = api_resource_list(group, v) or {"resources": []}
            by_name: dict[str, Obj] = {}
            for r in doc["resources"]:
                if "/" in r["name"]:
                    continue
                by_name[r["name"]] = {
                    "resource": r["name"],
                    "responseKind": _kind_ref(group, v, r["kind"]),
                    "scope": "Namespaced" if r["namespaced"] else "Cluster",
                    "singularResource": r["singularName"],
                    "verbs": r["verbs"],
                    **({"shortNames": r["shortNames"]} if r.get("shortNames") else {}),
                    **({"categories": r["categories"]} if r.get("categories") else {}),
                }
            for r in doc["resources"]:
                if "/" not in r["name"]:
                    continue
                parent, sub = r["name"].split("/", 1)
                ref = _kind_ref(r.get("group", group), r.get("version", v), r["kind"])
                by_name[parent].setdefault("subresources", []).append(
                    {"subresource": sub, "responseKind": ref, "verbs": r["verbs"]}
                )
            vitems.append({"version": v, "resources": list(by_name.values()), "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": vitems})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
