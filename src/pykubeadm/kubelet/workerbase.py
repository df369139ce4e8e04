"""What the pod workers of both runtimes share, as the kubelet does it whichever runtime runs the Pod: a Pod's
identity, directories and change notification, its events, restartPolicy and CrashLoopBackOff, init containers in
order, its volumes mounted and its PodStatus; a container's ContainerStatus fields, Waiting reasons, preStop hook and
exec/HTTP/TCP probes. `builtin.podworker.PodWorker` and `cri.podworker.CRIPodWorker` fill in the runtime's part
(sandbox, start, wait, stop) on top of `PodWorkerBase` and `ContainerBase`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NotRequired, Required, TypedDict, Unpack

from pykubeadm.kubelet.podstatus import Conditions, now, worker_phase, worker_status
from pykubeadm.kubelet.probes import Probe, ProbeLoops, run_probe
from pykubeadm.layout import Layout

__all__ = ["ContainerBase", "PodOptions", "PodWorkerBase"]

log = logging.getLogger(__name__)


class ContainerBase(ProbeLoops):
    """One (init) container of a Pod, either runtime's: a subclass provides `pod`, `spec`, `init`, `state`,
    `last_state`, `ready`, `started`, `restart_count`, `container_id`, `image_id` and `exec_sync`."""

    init: bool
    state: dict[str, Any]
    last_state: dict[str, Any]
    restart_count: int
    container_id: str
    image_id: str
    _pull_failures: int

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def field_path(self) -> str:
        return f"spec.{'initContainers' if self.init else 'containers'}{{{self.name}}}"

    def log_path(self, restart: int | None = None) -> Path:
        return Path(self.pod.log_dir) / self.name / f"{self.restart_count if restart is None else restart}.log"

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "restartCount": self.restart_count,
            "image": self.spec.get("image", ""),
            "imageID": self.image_id,
            "started": self.started,
        }
        if self.container_id:
            out["containerID"] = self.pod.id_url(self.container_id)
        return out

    def _event(self, kind: str, reason: str, message: str) -> None:
        self.pod.event(kind, reason, message, self.field_path)

    def save(self) -> None:
        """Keep the container's record, for a runtime that keeps one (a restarted kubelet adopts from it)."""

    def wait(self, reason: str, message: str = "") -> None:
        """Leave the container Waiting with `reason` (and `message`)."""
        waiting: dict[str, Any] = {"reason": reason}
        if message:
            waiting["message"] = message
            log.warning("pod %s container %s: %s: %s", self.pod.key, self.name, reason, message)
        self.state = {"waiting": waiting}
        self.ready = self.started = False
        self.save()
        self.pod.changed()

    def fail(self, reason: str, message: str) -> None:
        """The container could not be created or started: the Failed event ("Error: …") and Waiting with `reason`."""
        self._event("Warning", "Failed", f"Error: {message}")
        self.wait(reason, message)

    def image_failed(self, image: str, reason: str, message: str, *, failed_event: bool = False) -> None:
        """The image could not be had, as the kubelet's image manager says it: `reason` (ErrImagePull, or another image
        reason) the first time, ImagePullBackOff on each ErrImagePull after that. `failed_event`: the runtime reports
        the failure itself as a Failed event first (a CRI runtime's pull does it in the image manager)."""
        self._pull_failures += 1
        if reason == "ErrImagePull" and self._pull_failures > 1:
            self._event("Normal", "BackOff", f'Back-off pulling image "{image}"')
            self._event("Warning", "Failed", "Error: ImagePullBackOff")
            self.wait("ImagePullBackOff", f'Back-off pulling image "{image}": ErrImagePull: {message}')
            return
        if failed_event:
            self._event("Warning", "Failed", message)
        self._event("Warning", "Failed", f"Error: {reason}")
        self.wait(reason, message)

    async def exec_sync(self, command: list[str], timeout: float) -> tuple[int, str]:
        """Run `command` in the container: (exit code, or -1 on timeout or error; output)."""
        raise NotImplementedError

    async def pre_stop(self, grace: float, reason: str) -> float:
        """The Killing event and the preStop exec hook, within `grace`: the loop time the grace period ends."""
        self._event("Normal", "Killing", reason or f"Stopping container {self.name}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        pre = ((self.spec.get("lifecycle") or {}).get("preStop") or {}).get("exec")
        if pre and pre.get("command"):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exec_sync([str(x) for x in pre["command"]], grace), max(0.1, grace))
        return deadline

    # --- probes ---------------------------------------------------------------------------------------------------
    async def _probe(self, probe: Probe) -> tuple[bool, str]:
        if "exec" in probe.spec:
            cmd = [str(x) for x in (probe.spec["exec"] or {}).get("command") or []]
            code, out = await self.exec_sync(cmd, probe.timeout)
            if code == 0:
                return True, ""
            return False, out or (f"command {cmd!r} timed out" if code == -1 else f"command {cmd!r} exited with {code}")
        ports = {p["name"]: int(p["containerPort"]) for p in self.spec.get("ports") or [] if p.get("name")}
        res = await run_probe(probe, self.pod.pod_ip, ports)
        return res.ok, res.message

    def _probe_event(self, kind: str, reason: str, message: str) -> None:
        self._event(kind, reason, message)

    async def stop(self, grace: float, reason: str = "") -> None:
        raise NotImplementedError

    async def _probe_failed(self, why: str, kind: str) -> None:
        await self.stop(self.pod.grace, f"Container {self.name} failed {kind} probe, will be restarted")


class PodOptions(TypedDict, total=False):
    """What the kubelet tells a pod worker of either runtime about the node and the Pod."""

    uid: Required[str]
    node_name: Required[str]
    layout: Required[Layout]
    on_change: Callable[[Any], None] | None
    backoff_initial: float
    events: Any  # events.EventRecorder
    client: Callable[[], Any] | None  # the node's API client
    objects: Any  # envvars.ObjectCache: the node-wide ConfigMap/Secret cache
    service_env: Callable[[dict[str, Any]], dict[str, str]] | None  # the Pod's Service variables (servicelinks)
    cluster_dns: list[str] | None
    cluster_domain: str
    resolv_conf: Path | None  # the host's resolv.conf (KubeletConfiguration resolvConf)
    observer: NotRequired[Callable[[Any], None] | None]  # told of every change as well (the kubelet's metrics)


class PodWorkerBase:
    """One Pod, either runtime's: a subclass sets `source`, `full_name` (before calling this __init__) and builds its
    `init_containers` and `containers`."""

    source: str
    full_name: str
    pod_ip: str
    host_ip: str
    pod_ips: list[str]
    init_containers: Sequence[ContainerBase]
    containers: Sequence[ContainerBase]
    volumes: Any

    def __init__(self, pod: dict[str, Any], **options: Unpack[PodOptions]) -> None:
        self.pod = pod
        self.spec: dict[str, Any] = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace") or "default")
        self.uid = options["uid"]
        self.node_name = options["node_name"]
        self.layout = layout = options["layout"]
        self.on_change = options.get("on_change")
        self.observer = options.get("observer")
        self.events = options.get("events")
        self.client: Callable[[], Any] = options.get("client") or (lambda: None)
        self.objects = options.get("objects")
        self.service_env = options.get("service_env")
        self.cluster_dns = list(options.get("cluster_dns") or [])
        self.cluster_domain = options.get("cluster_domain", "")
        self.resolv_conf = options.get("resolv_conf")
        self.backoff_initial = options.get("backoff_initial", 10.0)
        self.grace = float(self.spec.get("terminationGracePeriodSeconds", 30))
        status = pod.get("status") or {}
        self.start_time = str(status.get("startTime") or now())
        self.conditions = Conditions(status.get("conditions") or [])
        self.pod_dir: Path = layout.pod_dir(self.uid)
        self.sandbox_ready = False
        self.init_failed = False
        self.failed: tuple[str, str] | None = None  # (reason, message) of a Pod-level failure
        self.terminating = False
        self.volumes = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.full_name}"

    @property
    def log_dir(self) -> Path:
        return self.layout.pod_log_dir / f"{self.namespace}_{self.full_name}_{self.uid}"

    # --- plumbing --------------------------------------------------------------------------------------------------
    def changed(self) -> None:
        if self.observer is not None:
            self.observer(self)
        if self.on_change is not None:
            self.on_change(self)

    def event(self, kind: str, reason: str, message: str, field_path: str = "") -> None:
        if self.events is not None and self.source == "api":
            self.events.record(self.pod, kind, reason, message, field_path)

    @property
    def policy(self) -> str:
        return str(self.spec.get("restartPolicy") or "Always")

    async def mount_volumes(self) -> Any:
        """The Pod's volumes, mounted in its directory (retried with back-off, FailedMount events meanwhile)."""
        from pykubeadm.kubelet import volumes

        return await volumes.mount_pod_volumes(
            self.pod,
            self.pod_dir,
            self.client(),
            self.layout,
            self.node_name,
            objects=self.objects,
            on_failure=lambda message: self.event("Warning", "FailedMount", message),
            first_retry=self.backoff_initial / 5,
        )

    async def run_init_containers(self, run: Callable[[Any], Awaitable[bool]]) -> bool:
        """Run the init containers in order (`run` one to its end: whether it succeeded), skipping those that had
        succeeded before a kubelet restart; False (the Pod's init failed) at the first that fails."""
        for ct in self.init_containers:
            term = ct.state.get("terminated")
            if term and term.get("exitCode") == 0:  # done before a kubelet restart
                continue
            if not await run(ct):
                self.init_failed = True
                self.changed()
                return False
        self.init_done = True
        self.changed()
        return True

    def restart_ends(self, policy: str, code: int) -> bool:
        """Whether a container that exited with `code` stays ended (restartPolicy, or the Pod is ending)."""
        if self.terminating or self.failed:
            return True
        return policy == "Never" or (policy == "OnFailure" and code == 0)

    async def back_off(self, ct: ContainerBase, delay: float) -> None:
        """CrashLoopBackOff: the container waits `delay` seconds before its restart (Waiting, and the BackOff event)."""
        if delay <= 0:
            return
        pod = f"{self.full_name}_{self.namespace}({self.uid})"
        ct.wait("CrashLoopBackOff", f"back-off {int(delay)}s restarting failed container={ct.name} pod={pod}")
        self.event("Warning", "BackOff", f"Back-off restarting failed container {ct.name} in pod {pod}", ct.field_path)
        await asyncio.sleep(delay)

    # --- status ----------------------------------------------------------------------------------------------------
    def phase(self) -> str:
        return worker_phase(self)

    def status(self) -> dict[str, Any]:
        """The PodStatus the kubelet writes (API Pods) or the mirror Pod carries (static Pods)."""
        return worker_status(self)
