"""One container of a Pod as a process: image → argv, start (shim or direct), probes, exit, ContainerStatus fields.

Owned by `podworker.PodWorker`, which decides restarts (restartPolicy, back-off) and termination. For API Pods the
container's record (restartCount, state, lastState, containerID) is kept in `<pod dir>/containers/<name>/state.json`
so a restarted kubelet adopts the running shim instead of starting a second process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubeadm.kubelet.backoff import BackOff
from pykubeadm.kubelet.builtin import images
from pykubeadm.kubelet.builtin.shim import ShimProcess, start_static_container
from pykubeadm.kubelet.containerconfig import ContainerConfigError
from pykubeadm.kubelet.podstatus import now as _now
from pykubeadm.kubelet.ports import PortOwner, container_ports
from pykubeadm.kubelet.workerbase import ContainerBase

if TYPE_CHECKING:
    from pykubeadm.kubelet.builtin.podworker import PodWorker

__all__ = ["ContainerWorker"]

log = logging.getLogger(__name__)


@dataclass
class ContainerWorker(ContainerBase):
    """One container (regular or init): its process, probe state and the ContainerStatus fields."""

    pod: PodWorker
    spec: dict[str, Any]
    init: bool = False
    restart_count: int = 0
    state: dict[str, Any] = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    container_id: str = ""
    proc: Any = None
    backoff: BackOff = field(default_factory=BackOff)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    enter_prefix: list[str] = field(default_factory=list)
    restart_pending: bool = False
    next_id: str = ""  # the container ID the next instance will have (its cgroup is named after it)
    launch: Any = None  # containment.Launch of the running instance: how exec enters it confined
    image_id: str = ""  # the built-in runtime's image is its reference
    _kill_reason: str | None = None
    _pull_failures: int = 0

    def __post_init__(self) -> None:
        self.image_id = str(self.spec.get("image", ""))

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    @property
    def dir(self) -> Path:
        return self.pod.pod_dir / "containers" / self.name

    # --- record (API Pods) ----------------------------------------------------------------------------------------
    def save(self) -> None:
        if not self.pod.persistent:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        data = {
            "restartCount": self.restart_count,
            "state": self.state,
            "lastState": self.last_state,
            "containerID": self.container_id,
            "backoff": self.backoff.current,
            "restartPending": self.restart_pending,
        }
        if self.launch is not None:
            data["launch"] = {"confine": self.launch.confine, "cgroups": self.launch.cgroups}
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.dir / "state.json")

    def load(self) -> ShimProcess | None:
        """Restore the record; the running (or exited, unrecorded) shim of the current instance, if any."""
        if not self.pod.persistent:
            return None
        try:
            data = json.loads((self.dir / "state.json").read_text())
        except (OSError, ValueError):
            return None
        self.restart_count = int(data.get("restartCount", 0))
        self.state = data.get("state") or self.state
        self.last_state = data.get("lastState") or {}
        self.container_id = data.get("containerID") or ""
        self.backoff.current = float(data.get("backoff") or 0)
        self.restart_pending = bool(data.get("restartPending"))
        if isinstance(data.get("launch"), dict):
            from pykubeadm.kubelet.builtin.containment import Launch

            self.launch = Launch(confine=list(data["launch"]["confine"]), cgroups=list(data["launch"]["cgroups"]))
        if "running" in self.state and self.container_id:
            return ShimProcess.adopt(self.dir / self.container_id)
        return None

    # --- ports ----------------------------------------------------------------------------------------------------
    @property
    def port_owner(self) -> PortOwner:
        refs = (self.pod.pod.get("metadata") or {}).get("ownerReferences") or []
        controller = next((str(r.get("uid") or "") for r in refs if r.get("controller")), "")
        return PortOwner(self.pod.uid, f"{self.pod.namespace}/{self.pod.full_name}", self.name, controller)

    def claim_ports(self) -> str | None:
        """Claim the container's ports on the node's address; a message naming the holder when one is taken."""
        ports = self.pod.node_ports
        if ports is None:
            return None
        return ports.claim(self.port_owner, container_ports(self.spec, host_only=self.pod.network is not None))

    def release_ports(self) -> None:
        if self.pod.node_ports is not None:
            self.pod.node_ports.release(self.port_owner)

    # --- one run --------------------------------------------------------------------------------------------------
    async def prepare(self) -> list[str] | None:
        """Resolve the image and environment: the argv to run, or None (the container is left Waiting)."""
        pod = self.pod
        image = str(self.spec.get("image", ""))
        try:
            resolved = pod.resolve_image(image)
        except images.ImageError as e:
            self.image_failed(image, e.reason, e.message, failed_event=True)
            return None
        self._pull_failures = 0
        self.next_id = secrets.token_hex(32)
        try:
            argv, env, cwd, prefix = await pod.container_process(self, resolved)
        except ContainerConfigError as e:
            self.fail("CreateContainerConfigError", str(e))
            return None
        self._event("Normal", "Pulled", f'Container image "{image}" already present on machine')
        self.env, self.cwd, self.enter_prefix = env, cwd, prefix
        return argv

    async def start(self, argv: list[str]) -> bool:
        pod = self.pod
        if self.restart_pending:  # the restart happens now: it counts from here (and names the new log file)
            self.restart_count += 1
            self.restart_pending = False
        conflict = self.claim_ports()
        if conflict is not None:
            self.fail("CreateContainerError", conflict)
            return False
        self.container_id = self.next_id or secrets.token_hex(32)
        self.next_id = ""
        self._kill_reason = None
        try:
            if pod.persistent:
                self.proc = await ShimProcess.start(
                    self.dir / self.container_id,
                    argv,
                    self.env,
                    self.log_path(),
                    self.cwd,
                    logger=pod.cri_logger(),
                    stdin=bool(self.spec.get("stdin")),
                    stdin_once=bool(self.spec.get("stdinOnce")),
                    tty=bool(self.spec.get("tty")),
                )
            else:
                self.proc = await start_static_container(argv, self.env, self.log_path(), self.cwd)
        except OSError as e:
            self.release_ports()
            self._event("Warning", "Failed", f"Error: failed to start container {self.name}: {e}")
            self.wait("RunContainerError", f"failed to start {argv[0]}: {e}")
            return False
        self._event("Normal", "Created", f"Created container: {self.name}")
        self._event("Normal", "Started", f"Started container {self.name}")
        self.state = {"running": {"startedAt": _now()}}
        self.started = self.ready = False
        self.save()
        log.info("pod %s: started container %s (pid %s): %s", pod.key, self.name, self.pid, " ".join(argv))
        pod.changed()
        return True

    async def wait_exit(self) -> tuple[int, float]:
        """Run probes while the process lives; record its termination; (exit code, seconds it ran)."""
        loop = asyncio.get_running_loop()
        started_mono = loop.time()
        probes = None if self.init else asyncio.ensure_future(self._probe_loop(started_mono))
        if self.init:
            self.started = False
        try:
            code = await self.proc.wait()
        finally:
            self.release_ports()
            if probes is not None:
                probes.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await probes
        ran_for = loop.time() - started_mono
        self.ready = self.started = False
        oom = await asyncio.to_thread(self.pod.container_exited, self)
        if oom:
            limit = ((self.spec.get("resources") or {}).get("limits") or {}).get("memory", "")
            self._event("Warning", "OOMKilling", f"Memory cgroup out of memory: container {self.name} (limit {limit})")
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": "OOMKilled" if oom else "Completed" if code == 0 else "Error",
            "startedAt": self.state.get("running", {}).get("startedAt", _now()),
            "finishedAt": _now(),
            "containerID": f"pykubeadm://{self.container_id}",
        }
        if code > 128 and code - 128 < 65:
            terminated["signal"] = code - 128
        if self._kill_reason:
            terminated["message"] = self._kill_reason
        self.state = {"terminated": terminated}
        self.save()
        self.pod.changed()
        return code, ran_for

    def mark_restart(self) -> None:
        """The terminated instance becomes lastState; the next start counts one more restart."""
        if "terminated" in self.state:
            self.last_state = {"terminated": self.state["terminated"]}
        self.restart_pending = True
        self.save()

    # --- stop -----------------------------------------------------------------------------------------------------
    async def stop(self, grace: float, reason: str = "") -> None:
        """preStop hook, SIGTERM, `grace` seconds, SIGKILL of everything the container left (the Killing event)."""
        proc = self.proc
        if proc is None or proc.returncode is not None or not proc.running():
            return
        deadline = await self.pre_stop(grace, reason)
        loop = asyncio.get_running_loop()
        proc.signal(signal.SIGTERM)
        waiter = asyncio.ensure_future(proc.wait())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), max(0.0, deadline - loop.time()))
        proc.kill_all()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter, 5.0)

    async def exec_in(self, command: list[str], timeout: float = 10.0) -> int:
        """Run a command in the container (preStop and exec probes): its namespaces when isolated, else the host."""
        if not command:
            return 0
        argv = [*self.enter_prefix, *command] if self.enter_prefix else [images.host_program(command[0]), *command[1:]]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env=self.env or None,
                cwd=self.cwd if self.cwd and os.path.isdir(self.cwd) else None,
            )
        except OSError:
            return 127
        try:
            return await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            return -1

    async def exec_sync(self, command: list[str], timeout: float) -> tuple[int, str]:
        """`exec_in`, as the probes and the preStop hook ask it (no output is kept)."""
        return await self.exec_in(command, timeout), ""

    # --- probes ---------------------------------------------------------------------------------------------------
    async def _probe_failed(self, why: str, kind: str) -> None:
        self._kill_reason = why
        log.warning("pod %s: container %s %s, will be restarted", self.pod.key, self.name, why)
        await self.stop(self.pod.grace, f"Container {self.name} failed {kind} probe, will be restarted")
