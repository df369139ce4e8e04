"""Service environment variables for containers (`enableServiceLinks`), from a list+watch of Services.

As the kubelet's getServiceEnvVarMap: the `kubernetes` Service of the default namespace always, and with
enableServiceLinks (the default) every Service of the Pod's namespace that has a cluster IP, each as
`NAME_SERVICE_HOST`, `NAME_SERVICE_PORT[_PORTNAME]` and the Docker link variables (`NAME_PORT`,
`NAME_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`). Used by the pod worker through `ServiceLinks.env_for`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykubeadm.kubelet.listwatch import list_then_watch

__all__ = ["ServiceLinks", "service_env"]

log = logging.getLogger(__name__)

_MASTER_SERVICES = ("kubernetes",)


def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def _ip_set(svc: Mapping[str, Any]) -> bool:
    ip = (svc.get("spec") or {}).get("clusterIP") or ""
    return ip not in ("", "None")


def service_env(services: Iterable[Mapping[str, Any]], namespace: str, enable_links: bool = True) -> dict[str, str]:
    """The variables a container in `namespace` gets from `services` (all namespaces)."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for svc in services:
        meta = svc.get("metadata") or {}
        name, ns = str(meta.get("name", "")), meta.get("namespace")
        if not _ip_set(svc):
            continue
        if ns == "default" and name in _MASTER_SERVICES:
            chosen.setdefault(name, svc)
        elif ns == namespace and enable_links:
            chosen[name] = svc
    env: dict[str, str] = {}
    for name in sorted(chosen):
        spec = chosen[name].get("spec") or {}
        ports = spec.get("ports") or []
        ip = str(spec["clusterIP"])
        prefix = _env_name(name)
        env[f"{prefix}_SERVICE_HOST"] = ip
        if ports:
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0].get("port"))
        for p in ports:
            if p.get("name"):
                env[f"{prefix}_SERVICE_PORT_{_env_name(str(p['name']))}"] = str(p.get("port"))
        for i, p in enumerate(ports):
            proto = str(p.get("protocol") or "TCP")
            host_port = f"[{ip}]:{p.get('port')}" if ":" in ip else f"{ip}:{p.get('port')}"
            url = f"{proto.lower()}://{host_port}"
            if i == 0:
                env[f"{prefix}_PORT"] = url
            pp = f"{prefix}_PORT_{p.get('port')}_{proto.upper()}"
            env[pp] = url
            env[f"{pp}_PROTO"] = proto.lower()
            env[f"{pp}_PORT"] = str(p.get("port"))
            env[f"{pp}_ADDR"] = ip
    return env


class ServiceLinks:
    """The cluster's Services, kept by a list+watch with the node's client."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self.client = client
        self.services: dict[str, dict[str, Any]] = {}  # uid → Service
        self.synced = asyncio.Event()

    def env_for(self, pod: Mapping[str, Any]) -> dict[str, str]:
        spec = pod.get("spec") or {}
        ns = str((pod.get("metadata") or {}).get("namespace") or "default")
        return service_env(self.services.values(), ns, spec.get("enableServiceLinks", True) is not False)

    async def run(self) -> None:
        await list_then_watch(
            self.client, "/api/v1/services", self._on_list, self._on_event, what="service watch", log=log
        )

    async def _on_list(self, services: list[dict[str, Any]]) -> None:
        self.services = {s["metadata"]["uid"]: s for s in services}
        self.synced.set()

    async def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        uid = (obj.get("metadata") or {}).get("uid", "")
        if kind == "DELETED":
            self.services.pop(uid, None)
        elif kind in ("ADDED", "MODIFIED"):
            self.services[uid] = obj
