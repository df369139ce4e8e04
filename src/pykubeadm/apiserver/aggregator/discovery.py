"""Discovery entries for non-local APIServices: their groups in /apis (legacy and aggregated), /apis/<group>, and the
server's root path list; built from the aggregator's view, so they follow APIServices as they come, go and fail."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.aggregator.apiservice import PRIORITIES
from pykubeadm.apiserver.aggregator.controller import Aggregator, RemoteGroupVersion

__all__ = ["api_group", "extend_aggregated", "extend_api_groups", "extend_paths"]

Obj = dict[str, Any]


def _groups(agg: Aggregator | None) -> dict[str, list[RemoteGroupVersion]]:
    out: dict[str, list[RemoteGroupVersion]] = {}
    if agg is None:
        return out
    for rgv in agg.remote.values():
        out.setdefault(rgv.group, []).append(rgv)
    for vs in out.values():
        vs.sort(key=lambda r: (-r.version_priority, r.version))
    return dict(sorted(out.items(), key=lambda kv: (-max(r.group_priority for r in kv[1]), kv[0])))


def _group(name: str, rgvs: list[RemoteGroupVersion]) -> Obj:
    vs = [{"groupVersion": f"{name}/{r.version}", "version": r.version} for r in rgvs]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def _local_priority(group: str) -> int:
    return max((gp for (g, _), (gp, _) in PRIORITIES.items() if g == group), default=15000)


def _ordered(entries: list[tuple[int, str, Obj]]) -> list[Obj]:
    """kube-aggregator's order: groupPriorityMinimum highest first, then by name."""
    return [e for _, _, e in sorted(entries, key=lambda t: (-t[0], t[1]))]


def extend_api_groups(doc: Obj, agg: Aggregator | None) -> Obj:
    """/apis with the remote groups added, every group in APIService priority order as kube-aggregator lists them."""
    entries = [(_local_priority(g["name"]), g["name"], g) for g in doc["groups"]]
    for name, rgvs in _groups(agg).items():
        entries.append((max(r.group_priority for r in rgvs), name, _group(name, rgvs)))
    doc["groups"] = _ordered(entries)
    return doc


def api_group(agg: Aggregator, name: str) -> Obj | None:
    rgvs = _groups(agg).get(name)
    if not rgvs:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, rgvs)}


def extend_paths(paths: list[str], agg: Aggregator | None) -> list[str]:
    for name, rgvs in _groups(agg).items():
        paths += [f"/apis/{name}", *(f"/apis/{name}/{r.version}" for r in rgvs)]
    return paths


def extend_aggregated(doc: Obj, agg: Aggregator | None) -> Obj:
    """Add each remote group to an APIGroupDiscoveryList: the backend's resources from its last good discovery answer,
    freshness Stale while the APIService is unavailable."""
    from pykubeadm.apiserver.discovery import aggregated_resources

    for name, rgvs in _groups(agg).items():
        versions = []
        for r in rgvs:
            resources = aggregated_resources(name, r.version, r.resources or {"resources": []})
            fresh = "Current" if r.available and r.resources is not None else "Stale"
            versions.append({"version": r.version, "resources": resources, "freshness": fresh})
        doc["items"].append({"metadata": {"name": name}, "versions": versions})
    prio = {name: max(r.group_priority for r in rgvs) for name, rgvs in _groups(agg).items()}
    doc["items"] = _ordered(
        [(prio.get(i["metadata"]["name"]) or _local_priority(i["metadata"]["name"]), i["metadata"]["name"], i)
         for i in doc["items"]]
    )  # fmt: skip
    return doc
