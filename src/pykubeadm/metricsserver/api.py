"""metrics.k8s.io/v1beta1 as metrics-server serves it: discovery, NodeMetrics and PodMetrics, health and /metrics.

`GET /apis/metrics.k8s.io/v1beta1/nodes[/<name>]`, `…/pods`, `…/namespaces/<ns>/pods[/<name>]`: the objects are the
Nodes and Pods the server watches (labelSelector matches their labels, fieldSelector `metadata.name` /
`metadata.namespace`), each with usage from the storage; those without usage yet are left out of lists and are
404 NotFound (`nodemetrics.metrics.k8s.io "<name>" not found`) when asked for by name. Items carry the object's
name, namespace and labels, a creationTimestamp of now, `timestamp` and `window`. /livez is always ok, /readyz once
the storage has usage (metrics-server's `metric-storage-ready`), /metrics the server's own series.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from pykubeadm.apiserver.selectors import parse_field_selector, parse_label_selector
from pykubeadm.apiserver.status import ApiError
from pykubeadm.metricsserver.auth import ResourceRequest, status_response
from pykubeadm.metricsserver.storage import MetricsStorage, Usage, format_cpu, format_memory
from pykubeadm.util.goduration import format_duration

__all__ = ["GROUP", "VERSION", "MetricsAPI", "resource_request"]

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
_PREFIX = f"/apis/{GROUP}/{VERSION}"

_RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": GROUP_VERSION,
    "resources": [
        {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]},
    ],
}
_GROUP = {
    "kind": "APIGroup",
    "apiVersion": "v1",
    "name": GROUP,
    "versions": [{"groupVersion": GROUP_VERSION, "version": VERSION}],
    "preferredVersion": {"groupVersion": GROUP_VERSION, "version": VERSION},
}


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_request(request: web.Request) -> ResourceRequest | None:
    """The resource attributes of a metrics.k8s.io resource request; None for other paths."""
    if not request.path.startswith(_PREFIX + "/"):
        return None
    parts = request.path[len(_PREFIX) + 1 :].strip("/").split("/")
    namespace = ""
    if len(parts) >= 3 and parts[0] == "namespaces":
        namespace, parts = parts[1], parts[2:]
    if not parts or parts[0] not in ("nodes", "pods") or len(parts) > 2:
        return None
    name = parts[1] if len(parts) == 2 else ""
    method = request.method.upper()
    if method in ("GET", "HEAD"):
        verb = "get" if name else ("watch" if request.query.get("watch") in ("1", "true") else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
    return ResourceRequest(verb, GROUP, VERSION, parts[0], namespace, name)


def _json(body: Any) -> web.Response:
    return web.json_response(body)


class MetricsAPI:
    """The HTTP handlers over the storage and the watched `nodes()` / `pods()` (dicts of metadata)."""

    def __init__(
        self,
        storage: MetricsStorage,
        nodes: Callable[[], list[dict[str, Any]]],
        pods: Callable[[], list[dict[str, Any]]],
        metrics: Callable[[], bytes],
    ) -> None:
        self.storage = storage
        self.nodes = nodes
        self.pods = pods
        self.render_metrics = metrics

    def routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/apis", self._apis)
        r.add_get(f"/apis/{GROUP}", self._group)
        r.add_get(_PREFIX, self._resources)
        r.add_get(f"{_PREFIX}/nodes", self._list_nodes)
        r.add_get(f"{_PREFIX}/nodes/{{name}}", self._get_node)
        r.add_get(f"{_PREFIX}/pods", self._list_pods)
        r.add_get(f"{_PREFIX}/namespaces/{{namespace}}/pods", self._list_pods)
        r.add_get(f"{_PREFIX}/namespaces/{{namespace}}/pods/{{name}}", self._get_pod)
        r.add_get("/livez", self._livez)
        r.add_get("/healthz", self._livez)
        r.add_get("/readyz", self._readyz)
        r.add_get("/metrics", self._metrics)

    # --- discovery ---------------------------------------------------------------------------------------------
    async def _apis(self, _: web.Request) -> web.Response:
        return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_GROUP]})

    async def _group(self, _: web.Request) -> web.Response:
        return _json(_GROUP)

    async def _resources(self, _: web.Request) -> web.Response:
        return _json(_RESOURCES)

    # --- health ------------------------------------------------------------------------------------------------
    async def _livez(self, request: web.Request) -> web.Response:
        if "verbose" in request.query:
            return web.Response(text="[+]ping ok\n[+]log ok\nlivez check passed\n")
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if not self.storage.ready():
            return web.Response(
                status=500,
                text="[+]ping ok\n[+]log ok\n[-]metric-storage-ready failed: reason withheld\nreadyz check failed\n",
            )
        if "verbose" in request.query:
            return web.Response(text="[+]ping ok\n[+]log ok\n[+]metric-storage-ready ok\nreadyz check passed\n")
        return web.Response(text="ok")

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=self.render_metrics(), headers={"Content-Type": "text/plain; version=0.0.4"})

    # --- NodeMetrics -------------------------------------------------------------------------------------------
    def _node_item(self, meta: dict[str, Any], usage: Usage, now: float) -> dict[str, Any]:
        return {
            "metadata": {"name": meta["name"], "creationTimestamp": _rfc3339(now), "labels": meta.get("labels") or {}},
            "timestamp": _rfc3339(usage.timestamp),
            "window": format_duration(timedelta(seconds=usage.window)),
            "usage": {"cpu": format_cpu(usage.cpu), "memory": format_memory(usage.memory)},
        }

    def _selected(self, request: web.Request, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        labels = parse_label_selector(request.query.get("labelSelector"))
        fields = parse_field_selector(
            request.query.get("fieldSelector"), lambda f: f in ("metadata.name", "metadata.namespace")
        )
        return [
            m
            for m in objects
            if labels.matches(m.get("labels") or {})
            and fields.matches({"metadata.name": m["name"], "metadata.namespace": m.get("namespace", "")})
        ]

    async def _list_nodes(self, request: web.Request) -> web.Response:
        try:
            selected = self._selected(request, self.nodes())
        except ApiError as err:
            return status_response(err.code, err.reason, err.message)
        now = time.time()
        items = []
        for meta in sorted(selected, key=lambda m: m["name"]):
            usage = self.storage.node_usage(meta["name"])
            if usage is not None:
                items.append(self._node_item(meta, usage, now))
        return _json({"kind": "NodeMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})

    async def _get_node(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        meta = next((m for m in self.nodes() if m["name"] == name), None)
        usage = self.storage.node_usage(name) if meta is not None else None
        if meta is None or usage is None:
            return _not_found("nodemetrics", name)
        return _json({"kind": "NodeMetrics", "apiVersion": GROUP_VERSION, **self._node_item(meta, usage, time.time())})

    # --- PodMetrics --------------------------------------------------------------------------------------------
    def _pod_item(self, meta: dict[str, Any], usage: dict[str, Usage], now: float) -> dict[str, Any]:
        last = max(usage.values(), key=lambda u: u.timestamp)
        return {
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "creationTimestamp": _rfc3339(now),
                "labels": meta.get("labels") or {},
            },
            "timestamp": _rfc3339(last.timestamp),
            "window": format_duration(timedelta(seconds=last.window)),
            "containers": [
                {"name": cname, "usage": {"cpu": format_cpu(u.cpu), "memory": format_memory(u.memory)}}
                for cname, u in sorted(usage.items())
            ],
        }

    async def _list_pods(self, request: web.Request) -> web.Response:
        namespace = request.match_info.get("namespace")
        try:
            selected = self._selected(request, self.pods())
        except ApiError as err:
            return status_response(err.code, err.reason, err.message)
        now = time.time()
        items = []
        for meta in sorted(selected, key=lambda m: (m["namespace"], m["name"])):
            if namespace is not None and meta["namespace"] != namespace:
                continue
            usage = self.storage.pod_usage(meta["namespace"], meta["name"])
            if usage is not None:
                items.append(self._pod_item(meta, usage, now))
        return _json({"kind": "PodMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})

    async def _get_pod(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        meta = next((m for m in self.pods() if m["name"] == name and m["namespace"] == namespace), None)
        usage = self.storage.pod_usage(namespace, name) if meta is not None else None
        if meta is None or usage is None:
            return _not_found("podmetrics", name)
        return _json({"kind": "PodMetrics", "apiVersion": GROUP_VERSION, **self._pod_item(meta, usage, time.time())})


def _not_found(kind: str, name: str) -> web.Response:
    return status_response(
        404, "NotFound", f'{kind}.{GROUP} "{name}" not found', {"name": name, "group": GROUP, "kind": kind}
    )
