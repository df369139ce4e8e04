"""Node lifecycle through the node's own credentials: register the Node, keep its status, renew its Lease.

Registration retries with 100 ms doubling back-off capped at 7 s (a wait cut short when a refusing API server's port
opens); on AlreadyExists the kubelet reads the Node and reconciles its default labels. Status is computed every 10 s
and PATCHed (strategic merge) to `nodes/<name>/status` when it changed or 5 minutes passed. The Lease
`kube-node-lease/<node>` (holder = node, 40 s duration) is renewed every 10 s (jitter 0.04) and gets an ownerReference
to the Node as soon as its UID is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.kubelet.api import ApiError, is_refused, wait_listening
from pykubeadm.kubelet.podstatus import now as _now
from pykubeadm.util.apitime import now_micro_time

__all__ = [
    "NodeAgent",
    "Pressure",
    "host_pressure",
    "initial_node",
    "meminfo_kib",
    "node_capacity",
    "node_conditions",
    "node_info",
]

log = logging.getLogger(__name__)
#: registerWithAPIServer's retry steps: the first, doubled after each failure up to the last.
REGISTER_STEP = 0.1
REGISTER_MAX_STEP = 7.0

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def meminfo_kib(key: str) -> int | None:
    """One field of /proc/meminfo in KiB (`MemTotal`, `MemAvailable`), None when it is absent or unreadable."""
    for line in _read("/proc/meminfo").splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            return int(rest.split()[0])
    return None


def node_arch() -> str:
    m = platform.machine()
    return _ARCH.get(m, m)


def node_capacity(root: Path, max_pods: int = 110) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable): cpu, memory, ephemeral-storage (of the root dir's filesystem), pods, hugepages."""
    mem_kib = meminfo_kib("MemTotal") or 0
    try:
        st = os.statvfs(root)
        disk_kib = st.f_blocks * st.f_frsize // 1024
    except OSError:
        disk_kib = 0
    cap = {
        "cpu": str(os.cpu_count() or 1),
        "ephemeral-storage": f"{disk_kib}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_kib}Ki",
        "pods": str(max_pods),
    }
    alloc = dict(cap)
    alloc["memory"] = f"{max(0, mem_kib - 100 * 1024)}Ki"  # evictionHard memory.available<100Mi
    alloc["ephemeral-storage"] = str(disk_kib * 1024 * 9 // 10)  # nodefs.available<10%
    return cap, alloc


def node_info(version: str, runtime_version: str = "") -> dict[str, str]:
    """The Node's `status.nodeInfo`; `runtime_version` is the CRI runtime's (`containerd://1.6.20`), or the built-in
    runtime's own when the node has no CRI runtime."""
    os_image = "Linux"
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            os_image = line.split("=", 1)[1].strip('"')
    machine_id = _read("/etc/machine-id")
    return {
        "architecture": node_arch(),
        "bootID": _read("/proc/sys/kernel/random/boot_id"),
        "containerRuntimeVersion": runtime_version or f"pykubeadm://{version}",
        "kernelVersion": platform.release(),
        "kubeProxyVersion": "",
        "kubeletVersion": version,
        "machineID": machine_id,
        "operatingSystem": "linux",
        "osImage": os_image,
        "systemUUID": _read("/sys/class/dmi/id/product_uuid") or machine_id,
    }


def initial_node(
    name: str,
    *,
    hostname: str,
    node_ip: str | None,
    version: str,
    root: Path,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    port: int = c.KUBELET_PORT,
    max_pods: int = 110,
    runtime_version: str = "",
) -> dict[str, Any]:
    """The Node object the kubelet registers (registerWithAPIServer's initialNode)."""
    arch = node_arch()
    node_labels = {
        "beta.kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "kubernetes.io/hostname": hostname,
        "kubernetes.io/os": "linux",
    }
    node_labels.update(labels or {})
    cap, alloc = node_capacity(root, max_pods)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels,
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": spec,
        "status": {
            "addresses": node_addresses(hostname, node_ip),
            "capacity": cap,
            "allocatable": alloc,
            "conditions": node_conditions(ready=True),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "nodeInfo": node_info(version, runtime_version),
        },
    }


def node_addresses(hostname: str, node_ip: str | None) -> list[dict[str, str]]:
    out = []
    if node_ip:
        out.append({"type": "InternalIP", "address": node_ip})
    out.append({"type": "Hostname", "address": hostname})
    return out


@dataclass(frozen=True)
class Pressure:
    """The host's state against the kubelet's default hard eviction thresholds."""

    memory: bool = False
    disk: bool = False
    pid: bool = False


def host_pressure(root: Path) -> Pressure:
    """memory.available<100Mi, nodefs.available<10% (of the root dir's filesystem), pids in use > 90% of pid_max."""
    avail_kib = meminfo_kib("MemAvailable")
    try:
        st = os.statvfs(root)
        disk = st.f_blocks > 0 and st.f_bavail / st.f_blocks < 0.10
    except OSError:
        disk = False
    pid = False
    try:
        total = int(_read("/proc/loadavg").split()[3].split("/")[1])
        pid = total > 0.9 * int(_read("/proc/sys/kernel/pid_max") or 4194304)
    except (IndexError, ValueError):
        pass
    return Pressure(memory=avail_kib is not None and avail_kib < 100 * 1024, disk=disk, pid=pid)


_PRESSURE = {
    "MemoryPressure": (
        ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    ),
    "DiskPressure": (
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("KubeletHasDiskPressure", "kubelet has disk pressure"),
    ),
    "PIDPressure": (
        ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
    ),
}


def node_conditions(
    ready: bool,
    since: str | None = None,
    pressure: Pressure | None = None,
    transitions: dict[str, tuple[str, str]] | None = None,
    not_ready: str = "kubelet is not ready",
) -> list[dict[str, Any]]:
    """The four node conditions; `transitions` (type → (status, time)) keeps lastTransitionTime until a change;
    `not_ready` is the Ready condition's message when not ready (the runtime's error, as the kubelet reports it)."""
    now = _now()
    since = since or now
    pressure = pressure or Pressure()
    transitions = transitions if transitions is not None else {}

    def cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        last = transitions.get(kind)
        changed_at = last[1] if last and last[0] == status else (since if last is None else now)
        transitions[kind] = (status, changed_at)
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": changed_at,
        }

    flags = {"MemoryPressure": pressure.memory, "DiskPressure": pressure.disk, "PIDPressure": pressure.pid}
    out = []
    for kind, (ok, bad) in _PRESSURE.items():
        reason, message = bad if flags[kind] else ok
        out.append(cond(kind, "True" if flags[kind] else "False", reason, message))
    out.append(
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        if ready
        else cond("Ready", "False", "KubeletNotReady", not_ready)
    )
    return out


class NodeAgent:
    """Registration, status updates and the Lease heartbeat of one node, using `client` (node credentials)."""

    def __init__(
        self,
        client: Any,
        node: dict[str, Any],
        *,
        status_every: float = 10.0,
        report_every: float = 300.0,
        lease_duration: int = 40,
        network_error: Callable[[], str | None] = lambda: None,
    ):
        self.client = client
        self.node = node
        self.name: str = node["metadata"]["name"]
        self.status_every = status_every
        self.report_every = report_every
        self.lease_duration = lease_duration
        self.uid: str | None = None
        self.registered = asyncio.Event()
        self.lease: dict[str, Any] | None = None
        self.lease_renewals = 0
        self._last_reported: tuple[Any, float] | None = None
        self._ready_since = _now()
        self._transitions: dict[str, tuple[str, str]] = {}
        self.root: Path | None = None
        self.network_error = network_error  # the runtime's network not ready (podnetwork), None when ready
        self._poked = asyncio.Event()

    # --- registration ---------------------------------------------------------------------------------------------
    async def register(self) -> None:
        """registerWithAPIServer: try, then retry after 0.1 s, 0.2 s, 0.4 s... (at most 7 s) until the Node exists.
        While the API server's port refuses connections (a control plane whose kube-apiserver is still starting, as
        in `kubeadm init`), the wait also ends as soon as the port accepts one: the next try is not a whole backoff
        step late."""
        delay = REGISTER_STEP
        while True:
            refused = False
            if "status" in self.node:  # registered as it is now: NotReady while the network is not ready
                self.node["status"]["conditions"] = self.current_status()["conditions"]
            try:
                created = await self.client.post("/api/v1/nodes", self.node)
                self.uid = created["metadata"]["uid"]
                log.info("Successfully registered node %s", self.name)
                break
            except ApiError as e:
                if e.status == 409:
                    if await self._reconcile_existing():
                        break
                else:
                    log.error("Unable to register node %s with API server: %s", self.name, e)
            except Exception as e:
                refused = is_refused(e)
                log.error("Unable to register node %s with API server: %s: %s", self.name, type(e).__name__, e)
            server = _server_of(self.client)
            if refused and server:
                await wait_listening(server, delay)
            else:
                await asyncio.sleep(delay)
            delay = min(delay * 2, REGISTER_MAX_STEP)
        self.registered.set()

    async def _reconcile_existing(self) -> bool:
        try:
            existing = await self.client.get(f"/api/v1/nodes/{self.name}")
        except ApiError as e:
            log.error("Unable to read existing node %s: %s", self.name, e)
            return False
        self.uid = existing["metadata"]["uid"]
        want = self.node["metadata"]["labels"]
        have = existing["metadata"].get("labels") or {}
        missing = {k: v for k, v in want.items() if have.get(k) != v and k.startswith(("kubernetes.io/", "beta."))}
        if missing:
            await self.client.patch(f"/api/v1/nodes/{self.name}", {"metadata": {"labels": missing}})
        log.info("Node %s was previously registered", self.name)
        return True

    # --- status --------------------------------------------------------------------------------------------------
    def current_status(self) -> dict[str, Any]:
        status = dict(self.node["status"])
        pressure = host_pressure(self.root) if self.root is not None else None
        error = self.network_error()
        status["conditions"] = node_conditions(
            ready=error is None,
            since=self._ready_since,
            pressure=pressure,
            transitions=self._transitions,
            not_ready=error or "",
        )
        return status

    def poke(self) -> None:
        """Something the status depends on changed (the network): update it now rather than at the next period."""
        self._poked.set()

    async def update_status_once(self, force: bool = False) -> bool:
        """PATCH nodes/<name>/status if it changed or the report interval passed; True when it was sent."""
        status = self.current_status()
        comparable = {k: v for k, v in status.items() if k != "conditions"}
        comparable["conditions"] = [(x["type"], x["status"]) for x in status["conditions"]]
        loop = asyncio.get_running_loop()
        if (
            not force
            and self._last_reported is not None
            and self._last_reported[0] == comparable
            and loop.time() - self._last_reported[1] < self.report_every
            and not await self._server_conditions_differ(comparable["conditions"])
        ):
            return False
        for attempt in range(5):
            try:
                await self.client.patch(f"/api/v1/nodes/{self.name}/status", {"status": status})
                self._last_reported = (comparable, loop.time())
                return True
            except Exception as e:
                log.error("Error updating node status, will retry (%d/5): %s", attempt + 1, e)
        return False

    async def _server_conditions_differ(self, ours: list[tuple[str, str]]) -> bool:
        """As kube's tryUpdateNodeStatus compares with the Node it GETs: the nodelifecycle controller may have set the
        conditions Unknown (a missed heartbeat), which only the kubelet's next status PATCH turns back."""
        try:
            node = await self.client.get(f"/api/v1/nodes/{self.name}")
        except Exception:
            return False
        have = [(x.get("type"), x.get("status")) for x in (node.get("status") or {}).get("conditions") or []]
        return sorted(have) != sorted(ours)

    async def status_loop(self) -> None:
        await self.registered.wait()
        await self.update_status_once(force=True)
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), self.status_every)
            self._poked.clear()
            await self.update_status_once()

    # --- lease ---------------------------------------------------------------------------------------------------
    def _lease_path(self, name: str | None = None) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{c.NAMESPACE_NODE_LEASE}/leases"
        return f"{base}/{name}" if name else base

    def _new_lease_spec(self, base: dict[str, Any] | None) -> dict[str, Any]:
        lease = dict(base or {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"})
        meta = dict(lease.get("metadata") or {"name": self.name, "namespace": c.NAMESPACE_NODE_LEASE})
        if self.uid and not meta.get("ownerReferences"):
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": self.uid}]
        lease["metadata"] = meta
        spec = dict(lease.get("spec") or {})
        spec["holderIdentity"] = self.name
        spec["leaseDurationSeconds"] = self.lease_duration
        spec["renewTime"] = now_micro_time()
        lease["spec"] = spec
        return lease

    async def renew_lease_once(self) -> dict[str, Any]:
        """Optimistic PUT of the last lease; on failure GET (or create), then up to 5 update tries."""
        if self.lease is not None:
            try:
                self.lease = await self.client.put(self._lease_path(self.name), self._new_lease_spec(self.lease))
                self.lease_renewals += 1
                return self.lease
            except Exception as e:
                log.info("optimistic lease renewal failed: %s", e)
        last_error: Exception | None = None
        for _ in range(5):
            try:
                try:
                    current = await self.client.get(self._lease_path(self.name))
                except ApiError as e:
                    if e.status != 404:
                        raise
                    self.lease = await self.client.post(self._lease_path(), self._new_lease_spec(None))
                    self.lease_renewals += 1
                    return self.lease
                self.lease = await self.client.put(self._lease_path(self.name), self._new_lease_spec(current))
                self.lease_renewals += 1
                return self.lease
            except Exception as e:
                last_error = e
        raise RuntimeError(f"failed to renew lease {c.NAMESPACE_NODE_LEASE}/{self.name}: {last_error}")

    async def lease_loop(self) -> None:
        interval = self.lease_duration * 0.25
        delay = 0.2
        while True:
            try:
                await self.renew_lease_once()
                delay = 0.2
                await asyncio.sleep(interval * (1 + random.random() * 0.04))
            except Exception as e:
                log.error("failed to ensure node lease exists, will retry in %.1fs: %s", delay, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 7.0)


def _server_of(client: Any) -> str | None:
    """The API server URL of a kubelet client (a SwappableClient's current KubeClient, or a KubeClient)."""
    config = getattr(getattr(client, "current", client), "config", None)
    server = getattr(config, "server", None)
    return server if isinstance(server, str) else None
