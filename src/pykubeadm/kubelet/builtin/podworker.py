"""One Pod's lifecycle as processes, static or from the API: volumes, init containers in order, containers with
restartPolicy and back-off, activeDeadlineSeconds, graceful termination, and the PodStatus the kubelet reports.

Created by `staticpods.StaticPodManager` (source "file": direct children that die with the kubelet, hostPath
mapping, mirror Pods) and `pods.PodManager` (source "api": containers under shims in the Pod's directory, adopted by a
restarted kubelet). Restart back-off follows the kubelet: the first restart is immediate, then 10 s doubling up to
5 min ("CrashLoopBackOff"), reset after 10 minutes of running. An image the runtime cannot run leaves the container
Waiting (ErrImagePull, then ImagePullBackOff) with a message, and the Pod Pending; nothing crashes. Sandboxed API
Pods get the kubelet's resolv.conf and managed hosts file (`dnsconfig`) bind-mounted at /etc/resolv.conf and
/etc/hosts; every container gets PYKUBEADM_POD_IP (the Pod's IP) and its ports claimed on the node (`ports`): a port
another Pod's running container holds leaves it Waiting (CreateContainerError). With the node's CNI network
(`podnetwork`), a sandboxed Pod without hostNetwork gets a network namespace of its own first (status.podIP is the
address CNI gave it; only its hostPorts are the node's), once the network is ready: until then it waits, as the
kubelet does ("network is not ready", event NetworkNotReady). Its attachment is released when the Pod ends. What
confines an API Pod's containers (own root layer, securityContext, cgroups; refusal where that cannot be honoured) is its
`containment.PodContainment`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import random
from pathlib import Path, PurePosixPath
from typing import Any, Unpack

from pykubeadm.cni import CNIError
from pykubeadm.kubelet import dnsconfig
from pykubeadm.kubelet.backoff import BackOff
from pykubeadm.kubelet.builtin import images, podnetwork, runtime
from pykubeadm.kubelet.builtin.containerworker import ContainerWorker
from pykubeadm.kubelet.builtin.runtime import RUNTIME_TYPE as BUILTIN_RUNTIME_TYPE
from pykubeadm.kubelet.containerconfig import ContainerConfigError, container_setup
from pykubeadm.kubelet.hostpath import MountError, prepare_host_paths
from pykubeadm.kubelet.podstatus import now
from pykubeadm.kubelet.runtimeapi import container_id_url
from pykubeadm.kubelet.workerbase import PodOptions, PodWorkerBase

__all__ = ["ContainerWorker", "PodWorker"]

log = logging.getLogger(__name__)

#: A container's PATH unless its env sets one (Docker's default for images that do not set it).
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Every container's environment carries the Pod's IP (the cluster DNS server binds it).
POD_IP_ENV = "PYKUBEADM_POD_IP"
#: Seconds between volume refreshes of a running Pod (the kubelet's pod sync period is 1 min, jittered).
_REFRESH_EVERY = 60.0

_image_maps: dict[Path, tuple[float, dict[str, list[str]]]] = {}


def _image_map(path: Path) -> dict[str, list[str]]:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    cached = _image_maps.get(path)
    if cached is None or cached[0] != mtime:
        cached = (mtime, images.load_image_map(path))
        _image_maps[path] = cached
    return cached[1]


def _podenv() -> tuple[Any, Any, Any]:
    """The volumes, envvars and sandbox modules (kubelet-podenv), where present."""
    mods: list[Any] = []
    for module in ("pykubeadm.kubelet.volumes", "pykubeadm.kubelet.envvars", "pykubeadm.kubelet.builtin.sandbox"):
        try:
            mods.append(importlib.import_module(module))
        except ImportError:
            mods.append(None)
    return mods[0], mods[1], mods[2]


def _forking_zygote(spec: dict[str, Any], argv: list[str]) -> Path | None:
    """The lab's zygote, for a container it can fork: an add-on component (kube-proxy, CoreDNS) of this pykubeadm,
    without a terminal or stdin, run by a kubelet the zygote forked. None: the launcher execs the program."""
    from pykubeadm.kubelet.builtin import zygote
    from pykubeadm.kubelet.builtin.forkserver import component_name

    path = zygote.serving_zygote()
    if path is None or spec.get("tty") or spec.get("stdin"):
        return None
    return path if component_name(argv) in zygote.FORKED_COMPONENTS else None


class PodWorker(PodWorkerBase):
    """A Pod: one ContainerWorker per (init) container, its PodStatus, graceful termination, change notification."""

    init_containers: list[ContainerWorker]
    containers: list[ContainerWorker]

    def __init__(
        self,
        pod: dict[str, Any],
        *,
        pod_ip: str,
        etcd_binary: str | None = None,
        source: str = "file",
        node_ports: Any = None,
        network: podnetwork.PodNetwork | None = None,
        **options: Unpack[PodOptions],
    ):
        self.source = source
        self.persistent = source == "api"
        meta = pod.get("metadata") or {}
        name = str(meta.get("name", ""))
        self.full_name = f"{name}-{options['node_name']}" if source == "file" else name
        super().__init__(pod, **options)
        self.pod_ip = pod_ip
        self.host_ip = pod_ip  # the node's address; pod_ip becomes the Pod's own with a network namespace
        self.network = network if source == "api" and not self.spec.get("hostNetwork") else None
        self.netns: Path | None = None  # the Pod's network namespace, once attached
        self.etcd_binary = etcd_binary
        self.node_ports = node_ports  # ports.NodePorts of the node (API Pods)
        self.dns_files: list[Any] = []  # volumes.Mount of resolv.conf and /etc/hosts (sandboxed Pods)
        backoff_initial = self.backoff_initial
        self.init_containers = [
            ContainerWorker(self, dict(ct), init=True, backoff=BackOff(initial=backoff_initial))
            for ct in self.spec.get("initContainers") or []
        ]
        self.containers = [
            ContainerWorker(self, dict(ct), backoff=BackOff(initial=backoff_initial))
            for ct in self.spec.get("containers") or []
        ]
        self.init_done = not self.init_containers
        self.isolated = False
        self.pod_ips = [pod_ip] if self.network is None else []  # an own address comes with the attachment
        if self.network is not None:
            self.pod_ip = ""
        self.containment: Any = None  # containment.PodContainment (API Pods)
        self._task: asyncio.Task[None] | None = None
        self._adopted: dict[str, Any] = {}
        self._deadline: asyncio.Task[None] | None = None

    def id_url(self, container_id: str) -> str:
        return container_id_url(BUILTIN_RUNTIME_TYPE, container_id)

    def all_containers(self) -> list[ContainerWorker]:
        return [*self.init_containers, *self.containers]

    def container(self, name: str) -> ContainerWorker | None:
        return next((ct for ct in self.all_containers() if ct.name == name), None)

    def cri_logger(self) -> str | None:
        """The native CRI log writer for the shims (None: it cannot be built here; logs are then written raw)."""
        _, _, sandbox_mod = _podenv()
        if sandbox_mod is None:
            return None
        try:
            return str(sandbox_mod.cri_log_path(self.layout))
        except Exception as e:
            log.warning("container logs are written without CRI timestamps: %s", e)
            return None

    def resolve_image(self, image: str) -> images.ResolvedImage:
        path = self.layout.image_map_file
        return images.resolve_image(
            image, image_map=_image_map(path), map_file=str(path), etcd_binary=self.etcd_binary, layout=self.layout
        )

    async def container_process(
        self, cw: ContainerWorker, resolved: images.ResolvedImage
    ) -> tuple[list[str], dict[str, str], str | None, list[str]]:
        """(argv, environment, working directory, enter prefix) of a container's process."""
        spec = cw.spec
        if self.source == "file":  # static Pods: hostPath mapping, our environment (the control plane's way)
            try:
                prepare_host_paths(self.spec, self.layout)
            except (MountError, OSError) as e:
                raise ContainerConfigError(str(e)) from e
            mapper = runtime.PathMapper.for_container(self.spec, spec, self.layout)
            argv = images.container_argv(
                resolved,
                [mapper.map_arg(a) for a in spec.get("command") or []],
                [mapper.map_arg(a) for a in spec.get("args") or []],
            )
            env = runtime.container_env(spec, mapper, resolved.program)
            env[POD_IP_ENV] = self.pod_ip
            return argv, env, None, []
        _, _, sandbox_mod = _podenv()
        extra = {POD_IP_ENV: self.pod_ip}
        if resolved.program.version and resolved.kind == "builtin":
            extra[runtime.COMPONENT_VERSION_ENV] = resolved.program.version
        base = {"PATH": _DEFAULT_PATH, "HOSTNAME": self.name, "HOME": "/root"}
        setup = await container_setup(self, spec, base_env=base, extra_env=extra)
        env, mounts = setup.env, setup.mounts
        argv = images.container_argv(resolved, setup.command, setup.args)
        workdir = spec.get("workingDir") or None
        launch = await self._launch(cw, resolved)
        if self.isolated and sandbox_mod is not None:
            own = {str(PurePosixPath(m.container_path)) for m in mounts}
            mounts = [*mounts, *(m for m in self.dns_files if m.container_path not in own)]
            hostname, _ = dnsconfig.pod_hostname(self.pod, self.cluster_domain)
            sandboxed = sandbox_mod.sandboxed_argv(
                argv,
                mounts,
                workdir=workdir or "",
                hostname=hostname,
                layout=self.layout,
                zygote=_forking_zygote(spec, argv) if launch.unconfined else None,
                netns=self.netns,
                root_layer=launch.root_layer,
                read_only_root=launch.read_only_root,
                confine=launch.confine,
                cgroups=launch.cgroups,
            )
            return sandboxed, env, None, []
        mapper = self._mapper(spec, mounts)
        argv = [argv[0], *(mapper.map_arg(a) for a in argv[1:])]
        env = {k: mapper.map_value(v) if v.startswith("/") else v for k, v in env.items()}
        cwd = mapper.map_path(workdir) if workdir else None
        return argv, env, cwd if cwd and os.path.isdir(cwd) else None, []

    async def _launch(self, cw: ContainerWorker, resolved: images.ResolvedImage) -> Any:
        """The containment of the container's next instance (containment.Launch); ContainerConfigError when the
        container cannot be confined as it asks."""
        from pykubeadm.kubelet.builtin import containment
        from pykubeadm.kubelet.builtin.confinement import PAUSE_USER

        _, _, sandbox_mod = _podenv()
        if self.containment is None:
            return containment.Launch()
        image_uid = PAUSE_USER if resolved.kind == "pause" else 0
        seccomp = self.isolated and sandbox_mod is not None and "seccomp" in sandbox_mod.launcher_features(self.layout)
        try:
            launch = await asyncio.to_thread(self.containment.launch, cw.next_id, cw.spec, image_uid, seccomp)
        except containment.ContainmentError as e:
            raise ContainerConfigError(str(e)) from e
        cw.launch = launch
        return launch

    def _mapper(self, spec: dict[str, Any], mounts: list[Any]) -> runtime.PathMapper:
        base = runtime.PathMapper.for_container(self.spec, spec, self.layout)
        extra = []
        for m in mounts:
            try:
                node_path = "/" + str(Path(m.host_path).relative_to(self.layout.root))
            except ValueError:
                continue
            extra.append((str(PurePosixPath(m.container_path)), node_path))
        pairs = sorted({*base.mounts, *extra}, key=lambda t: len(t[0]), reverse=True)
        return runtime.PathMapper(tuple(pairs), self.layout)

    # --- the run ---------------------------------------------------------------------------------------------------
    def start(self) -> None:
        # adopt what a previous kubelet left running first, so a termination right away finds those processes too
        self._adopted = {ct.name: ct.load() for ct in self.all_containers()}
        for ct in self.all_containers():
            proc = self._adopted.get(ct.name)
            if proc is not None and proc.returncode is None:
                ct.proc = proc
        self._task = asyncio.ensure_future(self._run())

    async def _setup_volumes(self) -> None:
        volumes_mod, _, sandbox_mod = _podenv()
        if self.source != "api":
            return
        self.isolated = bool(
            sandbox_mod is not None
            and volumes_mod is not None
            and await asyncio.to_thread(sandbox_mod.can_isolate, self.layout)
        )
        if self.network is not None and not self.isolated:  # no namespaces here (not root): the node's network
            self.network = None
            self.pod_ip, self.pod_ips = self.host_ip, [self.host_ip]
        if self.network is not None and self.phase() not in ("Succeeded", "Failed"):  # (ended before a restart)
            await self._setup_network(self.network)
        from pykubeadm.kubelet.builtin.containment import PodContainment

        self.containment = PodContainment(self.pod, self.pod_dir, self.layout, isolated=self.isolated)
        await asyncio.to_thread(self.containment.setup)
        if volumes_mod is None:
            return
        self.volumes = await self.mount_volumes()
        if self.isolated:
            resolv, hosts, warnings = await asyncio.to_thread(
                dnsconfig.write_pod_files,
                self.pod,
                self.pod_dir,
                self.pod_ip,
                self.cluster_dns,
                self.cluster_domain,
                self.resolv_conf,
            )
            for reason, message in warnings:
                self.event("Warning", reason, message)
            self.dns_files = [volumes_mod.Mount(resolv, "/etc/resolv.conf"), volumes_mod.Mount(hosts, "/etc/hosts")]
        else:
            self.event(
                "Warning",
                "NoIsolation",
                "the kubelet is not root: containers run without their own mount and PID namespaces; "
                "volume paths in command, args and env are mapped to the node's directories; "
                "/etc/resolv.conf and /etc/hosts are the node's",
            )

    async def _setup_network(self, network: podnetwork.PodNetwork) -> None:
        """Wait for the node's network, then attach the Pod's namespace (retrying with back-off); pod_ip is its own."""
        delay, warned = self.backoff_initial / 10, 0.0
        loop = asyncio.get_running_loop()
        while True:
            err = network.status()
            if err is not None and await asyncio.to_thread(network.adopted, self.uid, self.pod_dir) is None:
                if loop.time() - warned >= 30.0 or not warned:  # the kubelet's event, not once a second
                    warned = loop.time()
                    self.event("Warning", "NetworkNotReady", f"{podnetwork.NETWORK_NOT_READY_MSG}: {err}")
                await network.wait_change(1.0)  # at once when the node's network is configured
                continue
            try:
                ips = await asyncio.to_thread(network.attach, self.pod, self.uid, self.pod_dir)
                break
            except (CNIError, OSError) as e:
                self.event(
                    "Warning",
                    "FailedCreatePodSandBox",
                    "Failed to create pod sandbox: rpc error: code = Unknown desc = "
                    f'failed to setup network for sandbox "{self.uid}": {e}',
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 120.0)
        self.netns = podnetwork.netns_path(self.pod_dir)
        self.pod_ip, self.pod_ips = ips[0], ips
        self.changed()

    async def release_network(self) -> None:
        """Detach the Pod's network (CNI DEL, the namespace removed): the Pod has ended or is gone."""
        if self.network is None or (self.netns is None and not self.pod_dir.exists()):
            return
        try:
            await asyncio.to_thread(self.network.detach, self.uid, self.pod_dir)
            self.netns = None
        except (CNIError, OSError) as e:
            log.warning("pod %s: releasing its network: %s", self.key, e)

    async def _run(self) -> None:
        adopted = self._adopted
        self.pod_dir.mkdir(parents=True, exist_ok=True) if self.persistent else None
        await self._setup_volumes()
        self.sandbox_ready = True
        self.changed()
        deadline = self.spec.get("activeDeadlineSeconds")
        if deadline is not None and self.source == "api":
            self._deadline = asyncio.ensure_future(self._active_deadline(float(deadline)))
        if not await self.run_init_containers(
            lambda cw: self._run_container(cw, adopted.pop(cw.name, None), init=True)
        ):
            return
        refresh = asyncio.ensure_future(self._refresh_volumes()) if self.volumes is not None else None
        try:
            await asyncio.gather(*(self._run_container(cw, adopted.pop(cw.name, None)) for cw in self.containers))
        finally:
            if refresh is not None:
                refresh.cancel()
        self.changed()
        if self.phase() in ("Succeeded", "Failed"):
            if self.volumes is not None:
                await self.volumes.teardown()  # the Pod is done: its volumes go, as the kubelet unmounts them
            if self.containment is not None:
                await asyncio.to_thread(self.containment.teardown)
            await self.release_network()  # and its sandbox, with its address

    async def _refresh_volumes(self) -> None:
        """ConfigMap, Secret, downward API and token volumes follow their sources (the kubelet's periodic sync)."""
        volumes_mod, _, _ = _podenv()
        while True:
            await asyncio.sleep(_REFRESH_EVERY * (1 + random.random() * 0.5))
            try:
                await self.volumes.refresh(self.pod)
            except volumes_mod.VolumeError as e:
                self.event("Warning", "FailedMount", e.message)
            except Exception as e:
                log.info("refreshing the volumes of pod %s: %s", self.key, e)

    async def _run_container(self, cw: ContainerWorker, proc: Any, init: bool = False) -> bool:
        """Run (and restart) a container until restartPolicy says it is done; True when it ended successfully."""
        policy = "OnFailure" if init and self.policy == "Always" else self.policy
        term = cw.state.get("terminated")
        if (
            proc is None
            and term is not None
            and (policy == "Never" or (policy == "OnFailure" and not term["exitCode"]))
        ):
            return term["exitCode"] == 0  # finished before a kubelet restart
        pull = BackOff(initial=self.backoff_initial)
        while True:
            if proc is not None:
                cw.proc, proc = proc, None
                cw.claim_ports()  # adopted: its ports are its own again
                if cw.proc.returncode is None and cw.pid and self.isolated:
                    cw.enter_prefix = self._enter(cw)
                code, ran = await cw.wait_exit()
            else:
                argv = await cw.prepare()
                if argv is None or not await cw.start(argv):
                    await asyncio.sleep(pull.next_delay(0) or pull.initial)
                    continue
                if self.isolated and cw.pid:
                    cw.enter_prefix = self._enter(cw)
                code, ran = await cw.wait_exit()
            if self.restart_ends(policy, code):
                return code == 0
            delay = cw.backoff.next_delay(ran)
            cw.mark_restart()
            log.warning("pod %s: container %s exited with %s; restarting in %.0fs", self.key, cw.name, code, delay)
            await self.back_off(cw, delay)

    def _enter(self, cw: ContainerWorker) -> list[str]:
        """The prefix that runs a command in the running container, confined as it is (exec, probes, preStop)."""
        _, _, sandbox_mod = _podenv()
        if sandbox_mod is None or cw.pid is None:
            return []
        launch = cw.launch
        if launch is None or launch.unconfined:
            return list(sandbox_mod.enter_argv(cw.pid))
        return list(sandbox_mod.enter_argv(cw.pid, launch.confine, launch.cgroups, self.layout))

    def container_exited(self, cw: ContainerWorker) -> bool:
        """The container's instance has ended: whether the OOM killer ended it (its cgroup is removed)."""
        if self.containment is None:
            return False
        return bool(self.containment.exited(cw.container_id))

    async def _active_deadline(self, seconds: float) -> None:
        import datetime as dt

        started = dt.datetime.strptime(self.start_time, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
        await asyncio.sleep(max(0.0, started.timestamp() + seconds - dt.datetime.now(dt.UTC).timestamp()))
        if self.phase() in ("Succeeded", "Failed"):
            return
        message = "Pod was active on the node longer than the specified deadline"
        self.failed = ("DeadlineExceeded", message)
        self.event("Warning", "DeadlineExceeded", message)
        await self._stop_containers(self.grace)
        self.changed()

    async def _stop_containers(self, grace: float) -> None:
        running = [cw for cw in self.all_containers() if cw.pid is not None]
        await asyncio.gather(*(cw.stop(grace) for cw in running), return_exceptions=True)

    async def _cancel(self) -> None:
        for t in (self._task, self._deadline):
            if t is not None and t is not asyncio.current_task():
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def terminate(self, grace: float | None = None) -> None:
        """Graceful termination (the Pod was deleted): preStop, SIGTERM, `grace` seconds, SIGKILL; volumes torn down."""
        self.terminating = True
        grace = self.grace if grace is None else grace
        running = [cw for cw in self.all_containers() if cw.pid is not None]
        stops = asyncio.gather(*(cw.stop(grace) for cw in running), return_exceptions=True)
        await stops
        await self._cancel()
        for cw in running:
            if "running" in cw.state and cw.proc is not None and cw.proc.returncode is not None:
                cw.state = {
                    "terminated": {
                        "exitCode": cw.proc.returncode,
                        "reason": "Completed" if cw.proc.returncode == 0 else "Error",
                        "startedAt": cw.state["running"].get("startedAt"),
                        "finishedAt": now(),
                        "containerID": f"pykubeadm://{cw.container_id}",
                    }
                }
                cw.ready = cw.started = False
        if self.volumes is not None:
            with contextlib.suppress(Exception):
                await self.volumes.teardown()
        if self.containment is not None:
            await asyncio.to_thread(self.containment.teardown)
        await self.release_network()
        self.changed()

    async def stop(self) -> None:
        """Stop every process now (static Pods at kubelet exit, a changed manifest): SIGTERM, grace, SIGKILL."""
        self.terminating = True
        await self._cancel()
        await self._stop_containers(self.grace)

    async def detach(self) -> None:
        """Stop watching the Pod and leave its containers running (the kubelet exits; a new one adopts them)."""
        await self._cancel()

    def pids(self) -> list[int]:
        return [ct.pid for ct in self.all_containers() if ct.pid is not None]

    def has_running(self) -> bool:
        """Something of the Pod still runs (a container's process)."""
        return bool(self.pids())

    # --- status ----------------------------------------------------------------------------------------------------
    def finished(self) -> bool:
        """The Pod reached a terminal phase: nothing of it runs any more."""
        return self.phase() in ("Succeeded", "Failed") and not self.pids()
