"""What the endpoint and endpointslice controllers share: which Pods back a Service, their addresses and ports.

Pure functions over plain dicts (a Pod's / Service's `to_dict()`), mirroring kube's `endpointsliceutil` /
`endpointutil` / `podutil` helpers: `should_pod_be_in_endpoints`, `find_port` (named targetPorts), `should_set_hostname`,
`pod_ipv4`, and `TriggerTimeTracker` (the `endpoints.kubernetes.io/last-change-trigger-time` value).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pykubeadm.controllers.controllerutil import is_pod_terminal
from pykubeadm.util.apitime import parse_time

__all__ = [
    "HEADLESS_LABEL",
    "LAST_CHANGE_TRIGGER_TIME",
    "TriggerTimeTracker",
    "find_port",
    "format_rfc3339_nano",
    "pod_ipv4",
    "pod_ports",
    "service_selects",
    "services_of_pod_change",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
]

Obj = Mapping[str, Any]

#: Label on the Endpoints and EndpointSlices of a headless Service.
HEADLESS_LABEL: Final = "service.kubernetes.io/headless"
#: Annotation on Endpoints and EndpointSlices: when the change that produced them happened.
LAST_CHANGE_TRIGGER_TIME: Final = "endpoints.kubernetes.io/last-change-trigger-time"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def ready_condition(pod: Obj) -> Obj | None:
    return next((c for c in _status(pod).get("conditions") or [] if c.get("type") == "Ready"), None)


def pod_ipv4(pod: Obj) -> str | None:
    """The Pod's IPv4 address (status.podIPs, else status.podIP)."""
    status = _status(pod)
    candidates = [p.get("ip", "") for p in status.get("podIPs") or []] or [status.get("podIP") or ""]
    for ip in candidates:
        try:
            if ip and ipaddress.ip_address(ip).version == 4:
                return str(ip)
        except ValueError:
            continue
    return None


def should_pod_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """endpointsliceutil.ShouldPodBeInEndpoints: not terminal, has an IP, and (unless asked) not terminating."""
    if is_pod_terminal(pod):
        return False
    status = _status(pod)
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not _meta(pod).get("deletionTimestamp")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """podutil.FindPort: the Pod's port for a Service port (a named targetPort is looked up in its containers)."""
    target = service_port.get("targetPort")
    if target is None or target == "":
        target = service_port.get("port")
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def pod_ports(pod: Obj, service: Obj) -> list[dict[str, Any]]:
    """The Service's ports as this Pod serves them (EndpointPort: name, port, protocol, appProtocol); a Service
    port whose named targetPort the Pod lacks is left out."""
    ports = []
    for sp in (service.get("spec") or {}).get("ports") or []:
        number = find_port(pod, sp)
        if number is None:
            continue
        port = {"name": sp.get("name") or "", "port": number, "protocol": sp.get("protocol") or "TCP"}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        ports.append(port)
    return ports


def services_of_pod_change(services: Iterable[Any], new: Any, old: Any) -> set[str]:
    """`ns/name` of every Service (lightkube objects) selecting the Pod before or after a change."""
    keys: set[str] = set()
    for pod_obj in (new, old):
        if pod_obj is None:
            continue
        pod = pod_obj.to_dict()
        for svc in services:
            if svc.metadata.namespace == pod_obj.metadata.namespace and service_selects(svc.to_dict(), pod):
                keys.add(f"{svc.metadata.namespace}/{svc.metadata.name}")
    return keys


def should_set_hostname(pod: Obj, service: Obj) -> bool:
    """The Pod's hostname is published when it has one and its subdomain is this Service (same namespace)."""
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == _meta(service).get("name")
        and _meta(service).get("namespace") == _meta(pod).get("namespace")
    )


def service_selects(service: Obj, pod: Obj) -> bool:
    """A Service with a (non-empty) selector selects the Pod (same namespace, labels match)."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return False
    return _meta(service).get("namespace") == _meta(pod).get("namespace") and all(
        (_meta(pod).get("labels") or {}).get(k) == v for k, v in selector.items()
    )


def format_rfc3339_nano(when: datetime) -> str:
    """Go's time.RFC3339Nano in UTC (fraction without trailing zeros)."""
    base = when.strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{when.microsecond:06d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


@dataclass
class _ServiceState:
    pods: dict[str, datetime] = field(default_factory=dict)
    service: datetime | None = None


class TriggerTimeTracker:
    """kube's TriggerTimeTracker: the earliest trigger time (a Pod's Ready transition, the Service's creation) that
    changed since the last sync of a Service; a Service seen for the first time reports its creationTimestamp."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], _ServiceState] = {}

    def compute(self, service: Obj, pods: Iterable[Obj]) -> datetime | None:
        key = (_meta(service).get("namespace", ""), _meta(service).get("name", ""))
        state = self._states.get(key)
        known = state is not None
        state = state or _ServiceState()
        earliest: datetime | None = None
        pod_times: dict[str, datetime] = {}
        for pod in pods:
            cond = ready_condition(pod)
            when = parse_time(cond.get("lastTransitionTime")) if cond else None
            if when is None:
                continue
            name = _meta(pod).get("name", "")
            pod_times[name] = when
            last = state.pods.get(name)
            if last is None or when > last:
                earliest = when if earliest is None else min(earliest, when)
        created = parse_time(_meta(service).get("creationTimestamp"))
        if created is not None and (state.service is None or created > state.service):
            earliest = created if earliest is None else min(earliest, created)
        self._states[key] = _ServiceState(pod_times, created)
        return created if not known else earliest

    def forget(self, namespace: str, name: str) -> None:
        self._states.pop((namespace, name), None)

    def snapshot(self, namespace: str, name: str) -> _ServiceState | None:
        """The state before a `compute`, to `restore` when the write it was for failed (so a retry reports the
        same trigger time instead of none)."""
        return self._states.get((namespace, name))

    def restore(self, namespace: str, name: str, state: _ServiceState | None) -> None:
        if state is None:
            self._states.pop((namespace, name), None)
        else:
            self._states[(namespace, name)] = state
