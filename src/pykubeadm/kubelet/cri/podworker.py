"""One API Pod on the node's CRI runtime, driven only through the runtime boundary (`runtimeapi.KubeletRuntime`):
its volumes (`volumes.PodVolumes`), a sandbox (`podconfig.sandbox_config`: hostname, DNS, port mappings, log
directory, namespaces, security context), the image of each container (`imagepull`), init containers in order, then
the containers, each restarted by restartPolicy with the kubelet's CrashLoopBackOff (`backoff.BackOff`),
probes (exec through ExecSync; HTTP and TCP to the Pod IP of the sandbox's status), lifecycle hooks, graceful stop
(preStop, StopContainer with the grace period, then StopPodSandbox and RemovePodSandbox) and the PodStatus built from
ContainerStatus (state, exit code, reason incl. OOMKilled, times, imageID, restartCount, terminationMessagePath).

A restarted kubelet adopts the Pod's sandbox and containers: they are found by kube's labels
(`io.kubernetes.pod.uid`, `io.kubernetes.container.name`) and restart counts read back from the container's
`io.kubernetes.container.restartCount` annotation, so IDs and counts stay what they were.

What every pod worker does whichever runtime runs the Pod (restartPolicy, init containers in order, the ContainerStatus
fields, preStop, probes, volumes) is `workerbase`'s. It offers `pods.PodManager` what `builtin.podworker.PodWorker`
offers (start, status, terminate, detach, ...), so the manager holds either; which one runs a Pod is
`runtimeroute.pod_runtime`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Unpack

from pykubeadm.cri.errors import CRIError, CRINotFound
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet import dnsconfig
from pykubeadm.kubelet.backoff import BackOff
from pykubeadm.kubelet.containerconfig import ContainerConfigError, container_setup
from pykubeadm.kubelet.cri import podconfig
from pykubeadm.kubelet.cri.imagepull import ImagePullError, PullContext, ensure_image, image_id
from pykubeadm.kubelet.cri.relist import ContainerRelist
from pykubeadm.kubelet.cri.streams import CRIStreams
from pykubeadm.kubelet.podstatus import now
from pykubeadm.kubelet.runtimeapi import KubeletRuntime, container_id_url
from pykubeadm.kubelet.workerbase import ContainerBase, PodOptions, PodWorkerBase

__all__ = ["CRIContainer", "CRIPodWorker"]

log = logging.getLogger(__name__)

#: How often a running container's status is asked of the runtime without a relist (`ContainerRelist`, the node's one
#: ListContainers for all its containers, as the kubelet's PLEG relists).
POLL_SECONDS = 0.25
#: The kubelet reads at most this much of a termination message file (4096 bytes) / of the log (80 lines).
_MAX_MESSAGE = 4096
_FALLBACK_LINES = 80


def _time(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class CRIContainer(ContainerBase):
    """One (init) container of a CRI Pod: its current CRI container, restart count, status and probes."""

    def __init__(self, pod: CRIPodWorker, spec: dict[str, Any], *, init: bool, backoff_initial: float):
        self.pod = pod
        self.spec = spec
        self.init = init
        self.restart_count = 0
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.ready = self.started = False
        self.container_id = ""
        self.image_id = ""
        self.backoff = BackOff(initial=backoff_initial)
        self.pull_backoff = BackOff(initial=backoff_initial)
        self.previous_id = ""  # the instance before this one (its log is `kubectl logs --previous`)
        self.started_epoch = 0.0  # when the running instance started (seconds since the epoch)
        self.adopted: api.Container | None = None
        # what exec/attach/port-forward of the built-in runtime look at (`containerref.ContainerRef.of`)
        self.env: dict[str, str] = {}
        self.cwd: str | None = None
        self.enter_prefix: list[str] = []
        self.proc: Any = None
        self._pull_failures = 0

    @property
    def pid(self) -> int | None:
        return None  # a CRI container's process is the runtime's, reached through the boundary

    @property
    def streams(self) -> CRIStreams | None:
        """exec/attach/port-forward through the runtime's streaming server (None: nothing runs)."""
        if not self.running:
            return None
        return CRIStreams(self.pod.runtime, self.container_id, self.pod.sandbox_id)

    @property
    def running(self) -> bool:
        return "running" in self.state and bool(self.container_id)

    def termination_log(self) -> Path:
        return self.pod.pod_dir / "containers" / self.name / f"{self.restart_count}-termination-log"

    # --- one instance ----------------------------------------------------------------------------------------------
    async def _image(self) -> api.Image | None:
        pod = self.pod
        ctx = PullContext(pod.runtime, pod.pull_secrets, lambda k, r, m: self._event(k, r, m))
        try:
            image = await ensure_image(ctx, self.spec, pod.sandbox_config)
        except ImagePullError as e:
            self.image_failed(str(self.spec.get("image") or ""), e.reason, e.message)
            return None
        self._pull_failures = 0
        self.pull_backoff.current = 0.0
        return image

    async def _config(self, image: api.Image) -> api.ContainerConfig:
        pod = self.pod
        setup = await container_setup(pod, self.spec)
        term = self.termination_log()
        term.parent.mkdir(parents=True, exist_ok=True)
        term.write_bytes(b"")
        term.chmod(0o666)
        self.env = setup.env
        return podconfig.container_config(
            pod.pod,
            pod.uid,
            self.spec,
            image=image.id or str(self.spec.get("image")),
            restart_count=self.restart_count,
            command=setup.command,
            args=setup.args,
            env=setup.env,
            mounts=setup.mounts,
            termination_log=term,
        )

    async def start(self) -> bool:
        """Pull, create and start the next instance; False (left Waiting) when it could not."""
        pod = self.pod
        image = await self._image()
        if image is None:
            return False
        self.image_id = image_id(image, str(self.spec.get("image") or ""))
        try:
            config = await self._config(image)
        except ContainerConfigError as e:
            self.fail("CreateContainerConfigError", str(e))
            return False
        try:
            cid = await pod.runtime.create_container(pod.sandbox_id, config, pod.sandbox_config)
        except CRIError as e:
            self.fail("CreateContainerError", str(e))
            return False
        self._event("Normal", "Created", f"Created container: {self.name}")
        try:
            await pod.runtime.start_container(cid)
        except CRIError as e:
            self.fail("RunContainerError", str(e))
            with contextlib.suppress(CRIError):
                await pod.runtime.remove_container(cid)
            return False
        if self.previous_id:  # the kubelet keeps one dead instance per container (for --previous)
            with contextlib.suppress(CRIError):
                await pod.runtime.remove_container(self.previous_id)
        self.previous_id, self.container_id = self.container_id, cid
        self._event("Normal", "Started", f"Started container {self.name}")
        self.state = {"running": {"startedAt": now()}}
        self.ready = self.started = False
        pod.changed()
        await self._post_start()
        return True

    async def _post_start(self) -> None:
        hook = ((self.spec.get("lifecycle") or {}).get("postStart") or {}).get("exec")
        if not hook or not hook.get("command"):
            return
        code, out = await self.exec_sync([str(x) for x in hook["command"]], 30)
        if code != 0:
            message = f"PostStartHookError: command {hook['command']!r} exited with {code}: {out}"
            self._event("Warning", "FailedPostStartHook", message)
            await self.stop(self.pod.grace, "FailedPostStartHook")

    async def exec_sync(self, command: list[str], timeout: float) -> tuple[int, str]:
        """Run `command` in the container through ExecSync: (exit code or -1 on timeout/error, output)."""
        try:
            res = await self.pod.runtime.exec_sync(self.container_id, command, exec_timeout=max(1, int(timeout)))
        except CRIError as e:
            return -1, str(e)
        return res.exit_code, (res.stdout + res.stderr).decode(errors="replace")

    async def wait_exit(self) -> tuple[int, float]:
        """Probe while the container runs; record its termination from ContainerStatus: (exit code, seconds run)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        probes = None if self.init else asyncio.ensure_future(self._probe_loop(started))
        try:
            while True:
                try:
                    st = await self.pod.runtime.container_status(self.container_id)
                except CRINotFound:
                    st = api.ContainerStatus(
                        id=self.container_id, state=api.ContainerState.CONTAINER_EXITED, exit_code=137, reason="Error"
                    )
                if st.state == api.ContainerState.CONTAINER_EXITED:
                    break
                if st.state == api.ContainerState.CONTAINER_RUNNING and st.started_at and "running" in self.state:
                    self.state["running"]["startedAt"] = _time(st.started_at)
                    self.started_epoch = st.started_at / 1e9
                if self.pod.relist is not None:  # the node's one relist wakes us when it stops running
                    await self.pod.relist.wait_not_running(self.container_id)
                else:
                    await asyncio.sleep(POLL_SECONDS)
        finally:
            if probes is not None:
                probes.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await probes
        self.record_exit(st)
        return st.exit_code, loop.time() - started

    def record_exit(self, st: api.ContainerStatus, *, announce: bool = True) -> None:
        reason = st.reason or ("Completed" if st.exit_code == 0 else "Error")
        if reason == "OOMKilled" and announce:
            limit = ((self.spec.get("resources") or {}).get("limits") or {}).get("memory", "")
            self._event("Warning", "OOMKilling", f"Memory cgroup out of memory: container {self.name} (limit {limit})")
        terminated: dict[str, Any] = {
            "exitCode": st.exit_code,
            "reason": reason,
            "startedAt": _time(st.started_at) if st.started_at else self.state.get("running", {}).get("startedAt"),
            "finishedAt": _time(st.finished_at) if st.finished_at else now(),
            "containerID": self.pod.id_url(self.container_id),
        }
        message = self._termination_message(st)
        if message:
            terminated["message"] = message
        if st.exit_code > 128 and st.exit_code - 128 < 65:
            terminated["signal"] = st.exit_code - 128
        self.state = {"terminated": terminated}
        self.ready = self.started = False
        self.pod.changed()

    def _termination_message(self, st: api.ContainerStatus) -> str:
        try:
            message = self.termination_log().read_bytes()[:_MAX_MESSAGE].decode(errors="replace")
        except OSError:
            message = ""
        if message or st.exit_code == 0 or self.spec.get("terminationMessagePolicy") != "FallbackToLogsOnError":
            return message or st.message
        from pykubeadm.kubelet.crilog import parse_line

        try:
            lines = self.log_path().read_bytes().splitlines()[-_FALLBACK_LINES:]
        except OSError:
            return ""
        return "".join(parse_line(line).content.decode(errors="replace") + "\n" for line in lines)[-_MAX_MESSAGE:]

    def mark_restart(self) -> None:
        if "terminated" in self.state:
            self.last_state = {"terminated": self.state["terminated"]}
        self.restart_count += 1

    async def stop(self, grace: float, reason: str = "") -> None:
        """preStop hook, then StopContainer with what is left of the grace period (the Killing event)."""
        if not self.running:
            return
        deadline = await self.pre_stop(grace, reason)
        loop = asyncio.get_running_loop()
        with contextlib.suppress(CRIError):
            await self.pod.runtime.stop_container(self.container_id, max(0, round(deadline - loop.time())))


class CRIPodWorker(PodWorkerBase):
    """An API Pod on the CRI runtime: its sandbox, one CRIContainer per (init) container, its PodStatus."""

    source = "api"
    persistent = True
    init_containers: list[CRIContainer]
    containers: list[CRIContainer]

    def __init__(
        self,
        pod: dict[str, Any],
        *,
        runtime: KubeletRuntime,
        host_ip: str,
        relist: ContainerRelist | None = None,
        **options: Unpack[PodOptions],
    ) -> None:
        self.full_name = str((pod.get("metadata") or {}).get("name", ""))
        super().__init__(pod, **options)
        self.runtime = runtime
        self.relist = relist  # None: each running container's status is polled
        self.host_ip = host_ip
        self.pod_ip = host_ip if self.spec.get("hostNetwork") else ""
        self.pod_ips = [host_ip] if self.spec.get("hostNetwork") else []
        self.init_containers = [
            CRIContainer(self, dict(ct), init=True, backoff_initial=self.backoff_initial)
            for ct in self.spec.get("initContainers") or []
        ]
        self.containers = [
            CRIContainer(self, dict(ct), init=False, backoff_initial=self.backoff_initial)
            for ct in self.spec.get("containers") or []
        ]
        self.init_done = not self.init_containers
        self.sandbox_id = ""
        self.sandbox_config = api.PodSandboxConfig()
        self._task: asyncio.Task[None] | None = None

    # --- plumbing --------------------------------------------------------------------------------------------------
    def id_url(self, container_id: str) -> str:
        return container_id_url(self.runtime.runtime_type, container_id)

    def all_containers(self) -> list[CRIContainer]:
        return [*self.init_containers, *self.containers]

    def container(self, name: str) -> CRIContainer | None:
        return next((ct for ct in self.all_containers() if ct.name == name), None)

    async def pull_secrets(self) -> list[Mapping[str, Any]]:
        """The Pod's imagePullSecrets (the ServiceAccount's are copied into the Pod by the API at creation)."""
        out: list[Mapping[str, Any]] = []
        for ref in self.spec.get("imagePullSecrets") or []:
            name = str((ref or {}).get("name") or "")
            if not name:
                continue
            try:
                if self.objects is not None:
                    secret = await self.objects.get(self.namespace, "secrets", name)
                else:
                    secret = await self.client().get(f"/api/v1/namespaces/{self.namespace}/secrets/{name}")
            except Exception as e:
                log.info("pod %s: image pull secret %s: %s", self.key, name, e)
                secret = None
            if secret is None:
                self.event(
                    "Warning",
                    "FailedToRetrieveImagePullSecret",
                    f"Unable to retrieve some image pull secrets ({name}); attempting to pull the image may not succeed.",
                )
                continue
            out.append(secret)
        return out

    # --- lifecycle -------------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _adopt(self) -> bool:
        """A sandbox of this Pod the runtime still has (a restarted kubelet): use it and its containers."""
        found = await self.runtime.list_pod_sandbox(
            api.PodSandboxFilter(
                label_selector={podconfig.POD_UID_LABEL: self.uid},
                state=api.PodSandboxStateValue(state=api.PodSandboxState.SANDBOX_READY),
            )
        )
        if not found:
            return False
        sandbox = max(found, key=lambda s: s.created_at)
        self.sandbox_id = sandbox.id
        containers = await self.runtime.list_containers(api.ContainerFilter(pod_sandbox_id=sandbox.id))
        for ct in self.all_containers():
            mine = sorted((c for c in containers if c.metadata.name == ct.name), key=lambda c: c.created_at)
            if not mine:
                continue
            latest = mine[-1]
            ct.container_id = latest.id
            ct.previous_id = mine[-2].id if len(mine) > 1 else ""
            ct.restart_count = int(
                latest.annotations.get(podconfig.RESTART_COUNT_ANNOTATION) or latest.metadata.attempt
            )
            ct.image_id = latest.image_ref
            if ct.previous_id:
                with contextlib.suppress(CRIError):
                    ct.record_exit(await self.runtime.container_status(ct.previous_id), announce=False)
                    ct.last_state = {"terminated": ct.state["terminated"]}
            st = await self.runtime.container_status(latest.id)
            if st.state == api.ContainerState.CONTAINER_EXITED:
                ct.record_exit(st, announce=False)
            else:
                ct.state = {"running": {"startedAt": _time(st.started_at or st.created_at)}}
                ct.started_epoch = (st.started_at or st.created_at) / 1e9
                ct.adopted = latest
        log.info("pod %s: adopted sandbox %s", self.key, sandbox.id)
        return True

    async def _host_dns(self) -> dnsconfig.DnsConfig:
        if self.resolv_conf is None:
            return dnsconfig.DnsConfig()
        try:
            text = await asyncio.to_thread(self.resolv_conf.read_text)
        except OSError:
            return dnsconfig.DnsConfig()
        return dnsconfig.parse_resolv_conf(text)

    async def _setup(self) -> bool:

        self.pod_dir.mkdir(parents=True, exist_ok=True)
        self.sandbox_config, warning = podconfig.sandbox_config(
            self.pod,
            self.uid,
            log_dir=self.log_dir,
            cluster_dns=self.cluster_dns,
            cluster_domain=self.cluster_domain,
            host_dns=await self._host_dns(),
        )
        if warning:
            self.event("Warning", "MissingClusterDNS", warning)
        self.volumes = await self.mount_volumes()
        adopted = await self._adopt()
        delay = self.backoff_initial / 10
        while not adopted:
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                self.sandbox_id = await self.runtime.run_pod_sandbox(self.sandbox_config)
                break
            except CRIError as e:
                self.event("Warning", "FailedCreatePodSandBox", f"Failed to create pod sandbox: {e}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 120.0)
        if not self.spec.get("hostNetwork"):
            st = await self.runtime.pod_sandbox_status(self.sandbox_id)
            ips = [st.status.network.ip, *(a.ip for a in st.status.network.additional_ips)]
            self.pod_ips = [ip for ip in ips if ip]
            self.pod_ip = self.pod_ips[0] if self.pod_ips else ""
        return True

    async def _run(self) -> None:
        await self._setup()
        self.sandbox_ready = True
        self.changed()
        if not await self.run_init_containers(lambda ct: self._run_container(ct, init=True)):
            return
        await asyncio.gather(*(self._run_container(ct) for ct in self.containers))
        self.changed()
        if self.phase() in ("Succeeded", "Failed") and self.sandbox_id:  # the Pod is done: its sandbox stops
            with contextlib.suppress(CRIError):
                await self.runtime.stop_pod_sandbox(self.sandbox_id)

    async def _run_container(self, ct: CRIContainer, init: bool = False) -> bool:
        """Run (and restart) a container until restartPolicy says it is done; True when it ended successfully."""
        policy = "OnFailure" if init and self.policy == "Always" else self.policy
        running, ct.adopted = ct.adopted is not None, None  # adopted while it runs: wait for it
        ended = not running and "terminated" in ct.state  # adopted after it ended: decide as if it just ended
        while True:
            if running:
                code, ran = await ct.wait_exit()
            elif ended:
                code, ran = int(ct.state["terminated"]["exitCode"]), 0.0
            else:
                if not await ct.start():
                    await asyncio.sleep(ct.pull_backoff.next_delay(0) or ct.pull_backoff.initial)
                    continue
                code, ran = await ct.wait_exit()
            running = ended = False
            if self.restart_ends(policy, code):
                return code == 0
            delay = ct.backoff.next_delay(ran)
            ct.mark_restart()
            await self.back_off(ct, delay)

    async def _cancel(self) -> None:
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def terminate(self, grace: float | None = None) -> None:
        """Graceful termination: every running container stopped within `grace`, then the sandbox stopped and
        removed (its containers with it), the volumes torn down."""
        self.terminating = True
        grace = self.grace if grace is None else grace
        await asyncio.gather(*(ct.stop(grace) for ct in self.all_containers() if ct.running), return_exceptions=True)
        await self._cancel()
        for ct in self.all_containers():
            if ct.running:
                with contextlib.suppress(CRIError):
                    ct.record_exit(await self.runtime.container_status(ct.container_id))
        await self.remove_sandbox()
        if self.volumes is not None:
            with contextlib.suppress(Exception):
                await self.volumes.teardown()
        self.changed()

    async def remove_sandbox(self) -> None:
        ids = [self.sandbox_id] if self.sandbox_id else []
        if not ids:
            found = await self.runtime.list_pod_sandbox(
                api.PodSandboxFilter(label_selector={podconfig.POD_UID_LABEL: self.uid})
            )
            ids = [s.id for s in found]
        for sid in ids:
            with contextlib.suppress(CRINotFound):
                await self.runtime.stop_pod_sandbox(sid)
                await self.runtime.remove_pod_sandbox(sid)
        self.sandbox_id = ""

    async def stop(self) -> None:
        await self.terminate(self.grace)

    async def detach(self) -> None:
        """The kubelet exits: leave the sandbox and its containers to the runtime, for the next kubelet to adopt."""
        await self._cancel()

    async def release_network(self) -> None:
        """The runtime releases the Pod's network with its sandbox (StopPodSandbox)."""

    def pids(self) -> list[int]:
        return []

    def has_running(self) -> bool:
        return bool(self.sandbox_id)

    # --- status ----------------------------------------------------------------------------------------------------
    def finished(self) -> bool:
        return self.phase() in ("Succeeded", "Failed") and not any(ct.running for ct in self.all_containers())
