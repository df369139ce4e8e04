"""The `endpoint` controller: core/v1 Endpoints for every Service with a selector, from the Pods it selects.

`desired_subsets(service, pods)` is kube's syncService computation (ready Pods in `addresses`, the rest in
`notReadyAddresses` unless publishNotReadyAddresses; a named targetPort resolved per Pod; subsets repacked by port set,
addresses sorted by IP); `EndpointController` keeps `<ns>/<svc>` Endpoints equal to it, with the Service's labels, the
`service.kubernetes.io/headless` label for headless Services, `endpoints.kubernetes.io/managed-by: endpoint-controller`
(kube ≥1.33) and `endpoints.kubernetes.io/last-change-trigger-time`.
Services without a selector (like `default/kubernetes`, the apiserver's) and ExternalName Services are left alone.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from lightkube.resources.core_v1 import Endpoints, Pod, Service

from pykubeadm.client import ApiError, is_already_exists, is_conflict, is_not_found
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

__all__ = ["EndpointController", "desired_endpoints_object", "desired_subsets"]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

#: kube ≥1.33 marks the Endpoints its controller writes
MANAGED_BY_LABEL: Final = "endpoints.kubernetes.io/managed-by"
MANAGED_BY: Final = "endpoint-controller"
OVER_CAPACITY: Final = "endpoints.kubernetes.io/over-capacity"
MAX_CAPACITY: Final = 1000


def _address(pod: Obj, ip: str, service: Obj) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    addr: dict[str, Any] = {"ip": ip}
    if should_set_hostname(pod, service):
        addr["hostname"] = pod["spec"]["hostname"]
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        addr["nodeName"] = node
    addr["targetRef"] = {
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    return addr


def _port_key(port: Obj) -> tuple[Any, ...]:
    return (port.get("name", ""), port.get("port"), port.get("protocol", "TCP"), port.get("appProtocol"))


def desired_subsets(service: Obj, pods: Iterable[Obj]) -> list[dict[str, Any]]:
    """The Endpoints subsets kube's endpoint controller computes for `service` from the Pods it selects."""
    spec = service.get("spec") or {}
    tolerate_unready = bool(spec.get("publishNotReadyAddresses"))
    headless = spec.get("clusterIP") == "None"
    # port key -> {(ip, uid): (address, ready)}; a port of None is the "no ports" sentinel (headless only)
    by_port: dict[tuple[Any, ...] | None, dict[tuple[str, str], tuple[dict[str, Any], bool]]] = {}
    ports_by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, tolerate_unready):
            continue
        ip = pod_ipv4(pod)
        if ip is None:
            continue
        addr = _address(pod, ip, service)
        ready = tolerate_unready or is_pod_ready(pod)
        addr_key = (ip, addr["targetRef"]["uid"])
        targets: list[tuple[Any, ...] | None] = []
        if not spec.get("ports") and headless:
            targets.append(None)
        for port in pod_ports(pod, service):
            if not port["name"]:
                del port["name"]
            key = _port_key(port)
            ports_by_key[key] = port
            targets.append(key)
        for target in targets:
            addrs = by_port.setdefault(target, {})
            previous = addrs.get(addr_key)
            addrs[addr_key] = (addr, ready or (previous is not None and previous[1]))
    # repack: port keys offered by the same address set share a subset
    groups: dict[tuple[tuple[tuple[str, str], bool], ...], list[tuple[Any, ...] | None]] = {}
    addr_of: dict[tuple[str, str], dict[str, Any]] = {}
    for port_key, addrs in by_port.items():
        group = tuple(sorted((k, ready) for k, (_, ready) in addrs.items()))
        groups.setdefault(group, []).append(port_key)
        for k, (addr, _) in addrs.items():
            addr_of[k] = addr
    subsets = []
    for group, keys in groups.items():
        ready_addrs = [addr_of[k] for k, ready in group if ready]
        not_ready = [addr_of[k] for k, ready in group if not ready]
        subset: dict[str, Any] = {}
        if ready_addrs:
            subset["addresses"] = sorted(ready_addrs, key=_addr_sort_key)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_addr_sort_key)
        ports = sorted((ports_by_key[k] for k in keys if k is not None), key=_port_key_str)
        if ports:
            subset["ports"] = ports
        subsets.append(subset)
    subsets.sort(key=lambda s: [_addr_sort_key(a) for a in s.get("addresses", []) + s.get("notReadyAddresses", [])])
    return subsets


def _addr_sort_key(addr: Obj) -> tuple[tuple[int, ...], str]:
    return tuple(int(x) for x in addr["ip"].split(".")), (addr.get("targetRef") or {}).get("uid", "")


def _port_key_str(port: Obj) -> tuple[str, int, str]:
    return (port.get("name", ""), int(port.get("port", 0)), port.get("protocol", "TCP"))


def _truncate(subsets: list[dict[str, Any]]) -> bool:
    """Keep at most MAX_CAPACITY addresses (ready first), as kube's truncateEndpoints; True when cut."""
    total = sum(len(s.get("addresses", [])) + len(s.get("notReadyAddresses", [])) for s in subsets)
    if total <= MAX_CAPACITY:
        return False
    budget = MAX_CAPACITY
    for field in ("addresses", "notReadyAddresses"):
        for subset in subsets:
            if field in subset:
                subset[field] = subset[field][:budget]
                budget -= len(subset[field])
    return True


def desired_endpoints_object(
    service: Obj, subsets: list[dict[str, Any]], current: Obj | None, trigger: str | None
) -> dict[str, Any] | None:
    """The Endpoints object to write (None when `current` is already up to date)."""
    svc_meta = service.get("metadata") or {}
    labels = dict(svc_meta.get("labels") or {})
    if current is not None:
        cur_labels = {k: v for k, v in ((current.get("metadata") or {}).get("labels") or {}).items()}
        cur_labels.pop(HEADLESS_LABEL, None)
        managed = cur_labels.pop(MANAGED_BY_LABEL, None) == MANAGED_BY
        cur_ann = (current.get("metadata") or {}).get("annotations") or {}
        if (
            _strip_rv(current.get("subsets") or []) == _strip_rv(subsets)
            and cur_labels == labels
            and managed
            and (OVER_CAPACITY in cur_ann) == (_count(subsets) > MAX_CAPACITY)
        ):
            return None
        new = copy.deepcopy(dict(current))
    else:
        new = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": svc_meta.get("name")}}
    new["metadata"]["namespace"] = svc_meta.get("namespace")
    new["subsets"] = copy.deepcopy(subsets)
    annotations = dict(new["metadata"].get("annotations") or {})
    if trigger:
        annotations[LAST_CHANGE_TRIGGER_TIME] = trigger
    else:
        annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
    if _truncate(new["subsets"]):
        annotations[OVER_CAPACITY] = "truncated"
    else:
        annotations.pop(OVER_CAPACITY, None)
    new["metadata"]["annotations"] = annotations
    if (service.get("spec") or {}).get("clusterIP") in ("None", "", None):
        labels[HEADLESS_LABEL] = ""
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    new["metadata"]["labels"] = labels
    return new


def _count(subsets: list[dict[str, Any]]) -> int:
    return sum(len(s.get("addresses", [])) + len(s.get("notReadyAddresses", [])) for s in subsets)


def _strip_rv(subsets: list[Any]) -> list[Any]:
    """Subsets compared without the targetRefs' resourceVersion (kube ignores it)."""
    out = copy.deepcopy(subsets)
    for subset in out:
        for field in ("addresses", "notReadyAddresses"):
            for addr in subset.get(field) or []:
                (addr.get("targetRef") or {}).pop("resourceVersion", None)
            if field in subset and not subset[field]:
                del subset[field]
        if "ports" in subset and not subset["ports"]:
            del subset["ports"]
        for port in subset.get("ports") or []:
            port.setdefault("protocol", "TCP")
            if port.get("name") == "":
                del port["name"]
    return out


def services_for_pod(services: Iterable[Obj], pod: Obj) -> list[Obj]:
    return [s for s in services if service_selects(s, pod)]


class EndpointController(Controller):
    """Keeps Endpoints `<ns>/<svc>` in step with each selector Service's Pods (kube's endpoint controller)."""

    name = "endpoint"
    service_account = "endpoint-controller"
    workers = 2

    def setup(self) -> None:
        self.tracker = TriggerTimeTracker()
        self.services = self.watch(Service, self._on_service, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.endpoints = self.watch(Endpoints, self._on_endpoints, namespace="*")

    def _on_service(self, event: str, obj: Any, old: Any) -> None:
        self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _on_endpoints(self, event: str, obj: Any, old: Any) -> None:
        # like kube, only a deletion brings a Service back into the queue (others' edits are not fought over)
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED" and self.services.get(key) is not None:
            self.queue.add(key)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        for key in services_of_pod_change(self.services.items(), obj, old):
            self.queue.add(key)

    async def sync(self, key: Any) -> None:
        namespace, name = str(key).split("/", 1)
        svc_obj = self.services.get(key)
        if svc_obj is None:
            self.tracker.forget(namespace, name)
            await self._delete(namespace, name)
            return
        service = svc_obj.to_dict()
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        pods = [
            p.to_dict()
            for p in self.pods.items()
            if p.metadata.namespace == namespace and service_selects(service, p.to_dict())
        ]
        subsets = desired_subsets(service, pods)
        before = self.tracker.snapshot(namespace, name)
        when = self.tracker.compute(service, pods)
        current_obj = self.endpoints.get(key)
        current = current_obj.to_dict() if current_obj is not None else None
        new = desired_endpoints_object(service, subsets, current, format_rfc3339_nano(when) if when else None)
        if new is None:
            return
        try:
            if current is None:
                await self.client.create(model(Endpoints, new))
            else:
                await self.client.replace(model(Endpoints, new))
        except BaseException as err:
            self.tracker.restore(namespace, name, before)
            if not isinstance(err, ApiError):
                raise
            if is_conflict(err) or is_already_exists(err):
                raise TemporaryError(f"endpoints {key} changed meanwhile") from err
            if err.status.code == 403 and "being terminated" in (err.status.message or ""):
                return
            raise

    async def _delete(self, namespace: str, name: str) -> None:
        if self.endpoints.get(f"{namespace}/{name}") is None:
            return
        try:
            await self.client.delete(Endpoints, name, namespace=namespace)
        except ApiError as err:
            if not is_not_found(err):
                raise
