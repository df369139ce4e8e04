"""Discovery documents: /version, /api, /apis, /apis/<g>, group versions (legacy, `application/json`), /openapi/v2.

Built once from the registry's strategies and virtual kinds; served by handlers/nonresource.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pykubeadm.apiserver.registry import STRATEGIES, VIRTUAL_KINDS, Strategy

__all__ = ["api_groups", "api_resource_list", "api_versions", "group_versions", "version_info"]

Obj = dict[str, Any]

_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "approval": ["get", "patch", "update"],
    "binding": ["create"],
    "finalize": ["update"],
    "scale": ["get", "patch", "update"],
    "eviction": ["create"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
}
#: Subresources whose kind is in another group: (group, version, kind).
_SUB_KINDS = {"scale": ("autoscaling", "v1", "Scale"), "eviction": ("policy", "v1", "Eviction")}


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


def group_versions(extra: Sequence[Strategy] = ()) -> dict[str, list[str]]:
    """Served group → versions; `extra` are the kinds registered at run time (custom resources)."""
    out: dict[str, list[str]] = defaultdict(list)
    for s in (*STRATEGIES, *extra):
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


def api_groups(extra: Sequence[Strategy] = ()) -> Obj:
    groups = [_group(g, vs) for g, vs in group_versions(extra).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str, extra: Sequence[Strategy] = ()) -> Obj | None:
    vs = group_versions(extra).get(name)
    if not vs or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, vs)}


def api_resource_list(group: str, version: str, extra: Sequence[Strategy] = ()) -> Obj | None:
    if version not in group_versions(extra).get(group, []):
        return None
    resources: list[Obj] = []
    for s in (*STRATEGIES, *extra):
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
            if sub in _SUB_KINDS:  # the subresource's kind lives in another group
                entry["group"], entry["version"], entry["kind"] = _SUB_KINDS[sub]
            resources.append(entry)
        if s.plural == "nodes":  # the proxy to the node's kubelet (handlers/nodeproxy.py)
            resources.append(
                {
                    "name": "nodes/proxy",
                    "singularName": "",
                    "namespaced": False,
                    "kind": "NodeProxyOptions",
                    "verbs": ["create", "delete", "get", "patch", "update"],
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


def aggregated_resources(group: str, version: str, doc: Obj) -> list[Obj]:
    """An APIResourceList's resources in apidiscovery form (subresources folded into their parents)."""
    by_name: dict[str, Obj] = {}
    for r in doc.get("resources") or []:
        if "/" in r["name"]:
            continue
        by_name[r["name"]] = {
            "resource": r["name"],
            "responseKind": _kind_ref(group, version, r.get("kind", "")),
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName", ""),
            "verbs": r.get("verbs") or [],
            **({"shortNames": r["shortNames"]} if r.get("shortNames") else {}),
            **({"categories": r["categories"]} if r.get("categories") else {}),
        }
    for r in doc.get("resources") or []:
        if "/" not in r["name"]:
            continue
        parent, sub = r["name"].split("/", 1)
        if parent not in by_name:
            continue
        ref = _kind_ref(r.get("group", group), r.get("version", version), r.get("kind", ""))
        by_name[parent].setdefault("subresources", []).append(
            {"subresource": sub, "responseKind": ref, "verbs": r.get("verbs") or []}
        )
    return list(by_name.values())


def aggregated(core: bool, version: str, extra: Sequence[Strategy] = ()) -> Obj:
    """apidiscovery.k8s.io/<version> APIGroupDiscoveryList for /api (core) or /apis (every other group)."""
    items = []
    for group, versions in group_versions(extra).items():
        if (group == "") != core:
            continue
        vitems = []
        for v in versions:
            doc = api_resource_list(group, v, extra) or {"resources": []}
            vitems.append({"version": v, "resources": aggregated_resources(group, v, doc), "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": vitems})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
