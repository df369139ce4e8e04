"""One static Pod's lifecycle as processes: start each container, probe it, restart it with back-off, report status.

Created and stopped by `staticpods.StaticPodManager`; read by the mirror-Pod syncer (`status()`). Restart back-off
follows the kubelet: the first restart is immediate, then 10 s doubling up to 5 min ("CrashLoopBackOff"), reset after
10 minutes of running. An image the built-in runtime cannot run leaves the container waiting (ErrImagePull, then
ImagePullBackOff) with a message, and the Pod Pending; nothing crashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubeadm.kubelet import runtime
from pykubeadm.kubelet.probes import Probe, run_probe
from pykubeadm.layout import Layout

__all__ = ["BackOff", "ContainerWorker", "PodWorker"]

log = logging.getLogger(__name__)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class BackOff:
    """Kubelet container restart back-off: 0 s first, then `initial` doubling to `cap`; reset after `reset_after`."""

    initial: float = 10.0
    cap: float = 300.0
    reset_after: float = 600.0
    current: float = 0.0

    def next_delay(self, ran_for: float) -> float:
        if ran_for >= self.reset_after:
            self.current = 0.0
        delay = self.current
        self.current = self.initial if self.current == 0 else min(self.current * 2, self.cap)
        return delay


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGKILL the child when the kubelet dies, even if the kubelet is killed with SIGKILL."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class ContainerWorker:
    """One container: its process, probe state and the ContainerStatus fields."""

    pod: PodWorker
    spec: dict[str, Any]
    restart_count: int = 0
    state: dict[str, Any] = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    pid: int | None = None
    proc: Any = None
    backoff: BackOff = field(default_factory=BackOff)
    _kill_reason: str | None = None

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    def status(self) -> dict[str, Any]:
        image = self.spec.get("image", "")
        out: dict[str, Any] = {
            "name": self.name,
            "image": image,
            "imageID": image,
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started,
            "state": self.state,
        }
        if self.last_state:
            out["lastState"] = self.last_state
        if self.pid is not None:
            out["containerID"] = f"pykubeadm://{self.pid}"
        return out

    def _named_ports(self) -> dict[str, int]:
        return {p["name"]: int(p["containerPort"]) for p in self.spec.get("ports") or [] if p.get("name")}

    async def run(self) -> None:
        """Run, restart and back off forever (until cancelled)."""
        pod = self.pod
        while True:
            try:
                program = runtime.resolve_program(self.spec.get("image", ""), etcd_binary=pod.etcd_binary)
                runtime.prepare_host_paths(pod.spec, pod.layout)
            except runtime.ImageError as e:
                reason = e.reason if self.backoff.current == 0 else "ImagePullBackOff"
                self._wait(reason, e.message)
                log.warning("pod %s container %s: %s: %s", pod.full_name, self.name, e.reason, e.message)
                await asyncio.sleep(self.backoff.next_delay(0) or self.backoff.initial)
                continue
            except (runtime.MountError, OSError) as e:
                self._wait("CreateContainerConfigError", str(e))
                log.warning("pod %s container %s: %s", pod.full_name, self.name, e)
                await asyncio.sleep(self.backoff.next_delay(0) or self.backoff.initial)
                continue
            mapper = runtime.PathMapper.for_container(pod.spec, self.spec, pod.layout)
            argv = runtime.build_argv(
                program,
                [mapper.map_arg(a) for a in self.spec.get("command") or []],
                [mapper.map_arg(a) for a in self.spec.get("args") or []],
            )
            env = runtime.container_env(self.spec, mapper, program)
            log_path = pod.log_dir / self.name / f"{self.restart_count}.log"
            loop = asyncio.get_running_loop()
            started_mono = loop.time()
            try:
                self.proc = await runtime.start_process(argv, env, log_path, preexec=_pdeathsig)
            except OSError as e:
                self._wait("RunContainerError", f"failed to start {argv[0]}: {e}")
                await asyncio.sleep(self.backoff.next_delay(0) or self.backoff.initial)
                continue
            self.pid = self.proc.pid
            self.started = False
            self.ready = False
            self._kill_reason = None
            self.state = {"running": {"startedAt": _now()}}
            log.info("pod %s: started container %s (pid %d): %s", pod.full_name, self.name, self.pid, " ".join(argv))
            pod.changed()
            probes = asyncio.ensure_future(self._probe_loop(started_mono))
            try:
                code = await self.proc.wait()
            finally:
                probes.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await probes
            ran_for = loop.time() - started_mono
            self.ready = False
            self.started = False
            reason = "Completed" if code == 0 else "Error"
            terminated = {
                "exitCode": code if code >= 0 else 128 - code,
                "reason": reason,
                "startedAt": self.state.get("running", {}).get("startedAt", _now()),
                "finishedAt": _now(),
            }
            if code < 0:
                terminated["signal"] = -code
            if self._kill_reason:
                terminated["message"] = self._kill_reason
            self.last_state = {"terminated": terminated}
            self.restart_count += 1
            delay = self.backoff.next_delay(ran_for)
            log.warning(
                "pod %s: container %s exited with %s after %.1fs%s; restarting in %.0fs",
                pod.full_name,
                self.name,
                code,
                ran_for,
                f" ({self._kill_reason})" if self._kill_reason else "",
                delay,
            )
            if delay > 0:
                self._wait(
                    "CrashLoopBackOff",
                    f"back-off {int(delay)}s restarting failed container={self.name} "
                    f"pod={pod.full_name}_{pod.namespace}({pod.uid})",
                )
                await asyncio.sleep(delay)
            else:
                self.state = {"terminated": terminated}
                pod.changed()

    def _wait(self, reason: str, message: str) -> None:
        self.state = {"waiting": {"reason": reason, "message": message}}
        self.ready = False
        self.pid = None
        self.pod.changed()

    async def _kill(self, why: str) -> None:
        self._kill_reason = why
        log.warning("pod %s: container %s %s, will be restarted", self.pod.full_name, self.name, why)
        if self.proc is not None:
            await runtime.stop_process(self.proc, self.pod.grace)

    async def _probe_loop(self, started_mono: float) -> None:
        pod = self.pod
        loop = asyncio.get_running_loop()
        ports = self._named_ports()
        startup = Probe.parse(self.spec.get("startupProbe"))
        liveness = Probe.parse(self.spec.get("livenessProbe"))
        readiness = Probe.parse(self.spec.get("readinessProbe"))
        if startup is not None:
            await asyncio.sleep(startup.initial_delay)
            failures = 0
            while True:
                res = await run_probe(startup, pod.pod_ip, ports)
                if res.ok:
                    break
                failures += 1
                if failures >= startup.failure_threshold:
                    await self._kill(f"failed startup probe: {res.message}")
                    return
                await asyncio.sleep(startup.period)
        self.started = True
        if readiness is None:
            self.ready = True
        pod.changed()
        tasks = []
        if liveness is not None:
            delay = max(0.0, started_mono + liveness.initial_delay - loop.time())
            tasks.append(self._liveness(liveness, delay, ports))
        if readiness is not None:
            tasks.append(self._readiness(readiness, ports))
        if tasks:
            await asyncio.gather(*tasks)

    async def _liveness(self, probe: Probe, delay: float, ports: dict[str, int]) -> None:
        await asyncio.sleep(delay)
        failures = 0
        while True:
            res = await run_probe(probe, self.pod.pod_ip, ports)
            failures = 0 if res.ok else failures + 1
            if failures >= probe.failure_threshold:
                await self._kill(f"failed liveness probe: {res.message}")
                return
            await asyncio.sleep(probe.period)

    async def _readiness(self, probe: Probe, ports: dict[str, int]) -> None:
        await asyncio.sleep(probe.initial_delay)
        ok_count = fail_count = 0
        while True:
            res = await run_probe(probe, self.pod.pod_ip, ports)
            if res.ok:
                ok_count, fail_count = ok_count + 1, 0
                if ok_count >= probe.success_threshold and not self.ready:
                    self.ready = True
                    self.pod.changed()
            else:
                ok_count, fail_count = 0, fail_count + 1
                if fail_count >= probe.failure_threshold and self.ready:
                    self.ready = False
                    self.pod.changed()
            await asyncio.sleep(probe.period)

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            await runtime.stop_process(self.proc, self.pod.grace)


class PodWorker:
    """A static Pod: one ContainerWorker per container, a combined PodStatus, and change notification."""

    def __init__(
        self,
        pod: dict[str, Any],
        *,
        uid: str,
        node_name: str,
        pod_ip: str,
        layout: Layout,
        etcd_binary: str | None = None,
        on_change: Callable[[PodWorker], None] | None = None,
        backoff_initial: float = 10.0,
    ):
        self.pod = pod
        self.spec: dict[str, Any] = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace") or "default")
        self.uid = uid
        self.node_name = node_name
        self.full_name = f"{self.name}-{node_name}"
        self.pod_ip = pod_ip
        self.layout = layout
        self.etcd_binary = etcd_binary
        self.on_change = on_change
        self.grace = float(self.spec.get("terminationGracePeriodSeconds", 30))
        self.start_time = _now()
        self.log_dir: Path = layout.pod_log_dir / f"{self.namespace}_{self.full_name}_{uid}"
        self.containers = [
            ContainerWorker(self, dict(ct), backoff=BackOff(initial=backoff_initial))
            for ct in self.spec.get("containers") or []
        ]
        self._tasks: list[asyncio.Task[None]] = []

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def start(self) -> None:
        for ct in self.containers:
            self._tasks.append(asyncio.ensure_future(ct.run()))

    async def stop(self) -> None:
        """Cancel the workers and stop every process (SIGTERM, grace period, SIGKILL)."""
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await asyncio.gather(*(ct.stop() for ct in self.containers), return_exceptions=True)

    def pids(self) -> list[int]:
        return [ct.proc.pid for ct in self.containers if ct.proc is not None and ct.proc.returncode is None]

    def status(self) -> dict[str, Any]:
        """The PodStatus a mirror Pod carries."""
        cts = [ct.status() for ct in self.containers]
        running = all("running" in s["state"] for s in cts) and bool(cts)
        ever_ran = all(ct.restart_count > 0 or "running" in ct.state for ct in self.containers)
        ready = running and all(s["ready"] for s in cts)
        now = _now()

        def cond(kind: str, ok: bool) -> dict[str, Any]:
            return {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None, "lastTransitionTime": now}

        return {
            "phase": "Running" if running or ever_ran else "Pending",
            "conditions": [
                cond("PodReadyToStartContainers", True),
                cond("Initialized", True),
                cond("Ready", ready),
                cond("ContainersReady", ready),
                cond("PodScheduled", True),
            ],
            "hostIP": self.pod_ip,
            "hostIPs": [{"ip": self.pod_ip}],
            "podIP": self.pod_ip,
            "podIPs": [{"ip": self.pod_ip}],
            "startTime": self.start_time,
            "qosClass": "Burstable",
            "containerStatuses": cts,
        }
