"""The `endpointslice` controller: discovery.k8s.io/v1 EndpointSlices for every Service with a selector.

`desired_endpoints(service, pods)` computes each selected Pod's endpoint (conditions ready/serving/terminating,
nodeName, hostname, targetRef) grouped by its resolved port list; `plan_slices` reconciles them with the Service's
existing slices like kube's reconciler: endpoints stay in the slice that holds them, slices are filled up to
--max-endpoints-per-slice (100), new slices get generateName `<svc>-`, empty ones are deleted, and a Service with no
endpoints keeps one placeholder slice. Every slice carries `kubernetes.io/service-name`,
`endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, the Service's labels and a controller
ownerReference to the Service. Slices of other managers (e.g. the apiserver's `default/kubernetes`) are left alone.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lightkube.resources.core_v1 import Node, Pod, Service
from lightkube.resources.discovery_v1 import EndpointSlice

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import is_pod_ready
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.endpointsutil import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    TriggerTimeTracker,
    format_rfc3339_nano,
    pod_ipv4,
    pod_ports,
    service_selects,
    services_of_pod_change,
    should_pod_be_in_endpoints,
    should_set_hostname,
)
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = [
    "MANAGED_BY",
    "SERVICE_NAME_LABEL",
    "EndpointSliceController",
    "SlicePlan",
    "desired_endpoints",
    "plan_slices",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
MANAGED_BY_LABEL: Final = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY: Final = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE: Final = 100
ZONE_LABEL: Final = "topology.kubernetes.io/zone"

#: a port list in hashable form
PortsKey = tuple[tuple[str, int, str, str | None], ...]


def _expect(expected: dict[str, str | None], written: EndpointSlice) -> None:
    """Remember the resourceVersion of a slice we wrote (the apiserver returns the stored object, metadata set)."""
    meta = written.metadata
    assert meta is not None and meta.name is not None
    expected[meta.name] = meta.resourceVersion


def _ports_key(ports: Iterable[Obj]) -> PortsKey:
    return tuple(
        sorted((p.get("name") or "", int(p["port"]), p.get("protocol") or "TCP", p.get("appProtocol")) for p in ports)
    )


def _ports_of(key: PortsKey) -> list[dict[str, Any]]:
    out = []
    for name, port, protocol, app in key:
        entry: dict[str, Any] = {"name": name, "port": port, "protocol": protocol}
        if app:
            entry["appProtocol"] = app
        out.append(entry)
    return out


def pod_endpoint(pod: Obj, service: Obj, ip: str, zone: str | None = None) -> dict[str, Any]:
    """kube's podToEndpoint for an IPv4 address (`zone`: the Node's topology.kubernetes.io/zone label)."""
    meta = pod.get("metadata") or {}
    serving = is_pod_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    ready = bool((service.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    ep: dict[str, Any] = {
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        },
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        ep["nodeName"] = node
    if zone:
        ep["zone"] = zone
    if should_set_hostname(pod, service):
        ep["hostname"] = pod["spec"]["hostname"]
    return ep


def desired_endpoints(
    service: Obj, pods: Iterable[Obj], zones: Mapping[str, str] | None = None
) -> dict[PortsKey, list[dict[str, Any]]]:
    """Each selected Pod's endpoint, grouped by its resolved ports (named targetPorts can differ per Pod);
    `zones` maps node names to their zone."""
    groups: dict[PortsKey, list[dict[str, Any]]] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, True):
            continue
        ip = pod_ipv4(pod)
        if ip is None:
            continue
        ports = pod_ports(pod, service)
        zone = (zones or {}).get((pod.get("spec") or {}).get("nodeName") or "")
        groups.setdefault(_ports_key(ports), []).append(pod_endpoint(pod, service, ip, zone))
    for eps in groups.values():
        eps.sort(key=lambda e: e["targetRef"]["name"])
    return groups


def slice_labels(service: Obj) -> dict[str, str]:
    meta = service.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}
    labels[SERVICE_NAME_LABEL] = meta.get("name", "")
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    return labels


def new_slice(service: Obj, ports: list[dict[str, Any]], endpoints: list[dict[str, Any]]) -> dict[str, Any]:
    meta = service.get("metadata") or {}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": f"{meta.get('name')}-",
            "namespace": meta.get("namespace"),
            "labels": slice_labels(service),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "addressType": "IPv4",
        "ports": ports,
        "endpoints": endpoints,
    }


@dataclass
class SlicePlan:
    """What to write: slices to create (no name yet), to update (full objects), and names to delete."""

    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


def _ep_key(ep: Obj) -> str:
    return str((ep.get("targetRef") or {}).get("uid") or (ep.get("addresses") or [""])[0])


def _normalize_ep(ep: Obj) -> dict[str, Any]:
    out = copy.deepcopy(dict(ep))
    (out.get("targetRef") or {}).pop("resourceVersion", None)
    return out


def plan_slices(
    service: Obj,
    existing: Iterable[Obj],
    desired: Mapping[PortsKey, list[dict[str, Any]]],
    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
    trigger: str | None = None,
) -> SlicePlan:
    """Reconcile the Service's current slices with the desired endpoints (kube's reconciler, simplified)."""
    plan = SlicePlan()
    labels = slice_labels(service)
    remaining = {key: {_ep_key(ep): ep for ep in eps} for key, eps in desired.items()}
    kept: list[dict[str, Any]] = []
    for cur in sorted(existing, key=lambda s: s["metadata"]["name"]):
        key = _ports_key(cur.get("ports") or [])
        want = remaining.get(key)
        eps = []
        for ep in cur.get("endpoints") or []:
            new_ep = want.pop(_ep_key(ep), None) if want is not None else None
            if new_ep is not None:
                eps.append(new_ep)
        if not eps or cur.get("addressType") != "IPv4":
            plan.delete.append(cur["metadata"]["name"])
            continue
        kept.append({"current": cur, "endpoints": eps, "key": key})
    # fill free room in kept slices first, then new slices
    for item in kept:
        want = remaining.get(item["key"]) or {}
        while want and len(item["endpoints"]) < max_per_slice:
            item["endpoints"].append(want.pop(next(iter(want))))
    for key, want in remaining.items():
        eps = list(want.values())
        for start in range(0, len(eps), max_per_slice):
            plan.create.append(new_slice(service, _ports_of(key), eps[start : start + max_per_slice]))
    for item in kept:
        cur = item["current"]
        cur_meta = cur.get("metadata") or {}
        eps = sorted(item["endpoints"], key=lambda e: e["targetRef"]["name"])
        cur_ann = cur_meta.get("annotations") or {}
        up_to_date = (
            [_normalize_ep(e) for e in cur.get("endpoints") or []] == [_normalize_ep(e) for e in eps]
            and (cur_meta.get("labels") or {}) == labels
            and _owned_by(cur, service)
        )
        if up_to_date:
            continue
        new = copy.deepcopy(dict(cur))
        new["endpoints"] = eps
        new["metadata"]["labels"] = labels
        new["metadata"]["ownerReferences"] = new_slice(service, [], [])["metadata"]["ownerReferences"]
        annotations = dict(cur_ann)
        if trigger:
            annotations[LAST_CHANGE_TRIGGER_TIME] = trigger
        new["metadata"]["annotations"] = annotations
        plan.update.append(new)
    for created in plan.create:
        if trigger:
            created["metadata"]["annotations"] = {LAST_CHANGE_TRIGGER_TIME: trigger}
    if not plan.create and len(kept) == 0:
        # no endpoints: one placeholder slice (kept if it already exists)
        placeholder = next(
            (
                s
                for s in existing
                if not (s.get("endpoints") or []) and not (s.get("ports") or []) and s.get("addressType") == "IPv4"
            ),
            None,
        )
        if placeholder is not None:
            plan.delete.remove(placeholder["metadata"]["name"])
            if (placeholder["metadata"].get("labels") or {}) != labels:
                new = copy.deepcopy(dict(placeholder))
                new["metadata"]["labels"] = labels
                plan.update.append(new)
        else:
            plan.create.append(new_slice(service, [], []))
    return plan


def _owned_by(slice_: Obj, service: Obj) -> bool:
    uid = (service.get("metadata") or {}).get("uid")
    return any(
        ref.get("kind") == "Service" and ref.get("uid") == uid and ref.get("controller")
        for ref in (slice_.get("metadata") or {}).get("ownerReferences") or []
    )


class EndpointSliceController(Controller):
    """Keeps each selector Service's EndpointSlices in step with its Pods (kube's endpointslice controller)."""

    name = "endpointslice"
    service_account = "endpointslice-controller"
    workers = 2

    def setup(self) -> None:
        opts = self.ctx.options
        self.max_per_slice = int(getattr(opts, "max_endpoints_per_slice", MAX_ENDPOINTS_PER_SLICE) or 100)
        self.tracker = TriggerTimeTracker()
        self.services = self.watch(Service, self._on_service, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.slices = self.watch(EndpointSlice, self._on_slice, namespace="*")
        self.nodes = self.watch(Node, lambda *_: None)
        #: service key -> slice name -> resourceVersion written (None: deleted) until the informer shows it
        self._expected: dict[str, dict[str, str | None]] = {}

    def _on_service(self, event: str, obj: Any, old: Any) -> None:
        self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _on_slice(self, event: str, obj: Any, old: Any) -> None:
        labels = obj.metadata.labels or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME_LABEL):
            self.queue.add(f"{obj.metadata.namespace}/{labels[SERVICE_NAME_LABEL]}")

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        for key in services_of_pod_change(self.services.items(), obj, old):
            self.queue.add(key)

    def _slices_of(self, namespace: str, name: str) -> list[dict[str, Any]]:
        out = []
        for s in self.slices.items():
            labels = s.metadata.labels or {}
            if (
                s.metadata.namespace == namespace
                and labels.get(SERVICE_NAME_LABEL) == name
                and labels.get(MANAGED_BY_LABEL) == MANAGED_BY
            ):
                out.append(s.to_dict())
        return out

    def _stale(self, key: str, namespace: str) -> bool:
        """Whether the slice informer has not yet caught up with our own writes (kube's endpointSliceTracker)."""
        expected = self._expected.get(key) or {}
        for slice_name, rv in list(expected.items()):
            cached = self.slices.get(f"{namespace}/{slice_name}")
            if rv is None:
                caught_up = cached is None
            else:
                seen = cached.metadata.resourceVersion if cached is not None else None
                caught_up = seen is not None and (
                    seen == rv or (seen.isdigit() and rv.isdigit() and int(seen) > int(rv))
                )
            if caught_up:
                del expected[slice_name]
        if not expected:
            self._expected.pop(key, None)
        return bool(expected)

    def _zones(self) -> dict[str, str]:
        zones = {}
        for node in self.nodes.items():
            zone = (node.metadata.labels or {}).get(ZONE_LABEL)
            if zone:
                zones[node.metadata.name] = zone
        return zones

    async def sync(self, key: Any) -> None:
        namespace, name = str(key).split("/", 1)
        if self._stale(str(key), namespace):
            raise TemporaryError("endpointslice cache not yet up to date with our writes", delay=0.05)
        svc_obj = self.services.get(key)
        existing = self._slices_of(namespace, name)
        if svc_obj is None:
            # the garbage collector removes owned slices; do it here too so it works without one
            self.tracker.forget(namespace, name)
            for s in existing:
                await self._delete(namespace, s["metadata"]["name"])
            return
        service = svc_obj.to_dict()
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        pods = [p.to_dict() for p in self.pods.items() if p.metadata.namespace == namespace]
        pods = [p for p in pods if service_selects(service, p)]
        before = self.tracker.snapshot(namespace, name)
        when = self.tracker.compute(service, pods)
        plan = plan_slices(
            service,
            existing,
            desired_endpoints(service, pods, self._zones()),
            self.max_per_slice,
            format_rfc3339_nano(when) if when else None,
        )
        expected = self._expected.setdefault(str(key), {})
        try:
            for body in plan.create:
                _expect(expected, await self.client.create(model(EndpointSlice, body)))
            for body in plan.update:
                _expect(expected, await self.client.replace(model(EndpointSlice, body)))
        except BaseException as err:
            self.tracker.restore(namespace, name, before)
            if not isinstance(err, ApiError):
                raise
            if is_conflict(err):
                raise TemporaryError(f"endpointslices of {key} changed meanwhile") from err
            if err.status.code == 403 and "being terminated" in (err.status.message or ""):
                return
            raise
        for slice_name in plan.delete:
            await self._delete(namespace, slice_name)
            expected[slice_name] = None

    async def _delete(self, namespace: str, name: str) -> None:
        try:
            await self.client.delete(EndpointSlice, name, namespace=namespace)
        except ApiError as err:
            if not is_not_found(err):
                raise
