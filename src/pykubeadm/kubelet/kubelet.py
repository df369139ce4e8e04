"""The built-in kubelet: wires settings to the static Pod runner, TLS bootstrap and rotation, node agent and servers.

Order of events (as the real kubelet): healthz and static Pods start at once, with or without an API server (so a
control-plane node can run its apiserver before it has credentials); client credentials come from a valid
`--kubeconfig` or, failing that, from TLS bootstrap with `--bootstrap-kubeconfig` (rotateCertificates: the certificate
manager's forced first rotation, CSR `csr-xxxxx`; otherwise the blocking path with CSR `node-csr-<digest>`); with a
client certificate the node registers, heartbeats its Lease, publishes mirror Pods and serves :10250.
With `--cni-conf-dir` the built-in runtime attaches Pods through CNI (`podnetwork`): the Node is Ready only once the
directory holds a network configuration, with the real kubelet's network-not-ready message until then.
Without either kubeconfig the kubelet runs standalone (static Pods only).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import ssl
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives import serialization

from pykubeadm import constants as c
from pykubeadm.cri.errors import CRIError
from pykubeadm.kubelet.api import ClientConfig, KubeClient, SwappableClient
from pykubeadm.kubelet.builtin import runtime
from pykubeadm.kubelet.builtin.podnetwork import PodNetwork
from pykubeadm.kubelet.certmanager import CertificateManager
from pykubeadm.kubelet.certrenewal import ControlPlaneCertRenewer
from pykubeadm.kubelet.certstore import CertPair, PairStore, ensure_self_signed_serving, load_pair
from pykubeadm.kubelet.config import KubeletSettings
from pykubeadm.kubelet.containerref import ContainerRef, find_container
from pykubeadm.kubelet.cri.podworker import CRIPodWorker
from pykubeadm.kubelet.csr import (
    client_template,
    digested_name,
    generate_key,
    key_pem,
    request_certificate,
    serving_template,
    usages_for,
)
from pykubeadm.kubelet.events import EventRecorder
from pykubeadm.kubelet.fsstats import ImageFsError, image_fs_stats
from pykubeadm.kubelet.imagegc import IMAGE_GC_PERIOD, ImageGCManager
from pykubeadm.kubelet.kubeconfig import (
    bootstrapped_kubeconfig,
    is_valid_client_kubeconfig,
    load_client_config,
    write_kubeconfig,
)
from pykubeadm.kubelet.metrics import KubeletMetrics
from pykubeadm.kubelet.mirror import MirrorPodSyncer, mirror_pod
from pykubeadm.kubelet.node import NodeAgent, initial_node
from pykubeadm.kubelet.package import installed_version
from pykubeadm.kubelet.pods import PodManager
from pykubeadm.kubelet.resourcemetrics import ContainerTarget, container_targets
from pykubeadm.kubelet.runtimeroute import connect_node_runtime
from pykubeadm.kubelet.server import KubeletServer, healthz_app, serving_ssl_context
from pykubeadm.kubelet.servicelinks import ServiceLinks
from pykubeadm.kubelet.staticpods import StaticPodManager
from pykubeadm.kubelet.statssummary import SummaryProvider
from pykubeadm.layout import Layout
from pykubeadm.util.fs import write_file_atomic

__all__ = ["Kubelet", "kubelet_version", "pair_client_config"]

log = logging.getLogger(__name__)


def kubelet_version(layout: Layout | None = None) -> str:
    """The version this kubelet reports: the one the node's kubelet was installed for (kubelet.package), else the
    version a Pod's program was started as, else the built-in components' own."""
    installed = installed_version(layout) if layout is not None else None
    return installed or os.environ.get(runtime.COMPONENT_VERSION_ENV) or c.KUBERNETES_VERSION


def pair_client_config(base: ClientConfig, pair: CertPair) -> ClientConfig:
    """`base`'s cluster with `pair` as the client credential (in memory, so a rotation never reads a half-written file)."""
    chain = b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in pair.certs)
    return dataclasses.replace(
        base, token=None, cert_file=None, key_file=None, cert_pem=chain, key_pem=key_pem(pair.key)
    )


class Kubelet:
    def __init__(
        self,
        settings: KubeletSettings,
        layout: Layout,
        *,
        backoff_initial: float = 10.0,
        image_gc_period: float = IMAGE_GC_PERIOD,
    ):
        self.s = settings
        self.layout = layout
        self.version = kubelet_version(layout)
        self.backoff_initial = backoff_initial
        self.image_gc_period = image_gc_period
        self.cert_dir = layout.host(settings.cert_dir)
        self.node_ip = settings.node_ip or "127.0.0.1"
        self.static_pods: StaticPodManager | None = None
        self.mirror: MirrorPodSyncer | None = None
        self.pods: PodManager | None = None
        self.events = EventRecorder(lambda: self.client, settings.node_name)
        self.client_manager: CertificateManager | None = None
        self.serving_manager: CertificateManager | None = None
        self.cert_renewer: ControlPlaneCertRenewer | None = None
        self.client: SwappableClient | None = None
        self._client_ready = asyncio.Event()
        self.agent: NodeAgent | None = None
        self._base: ClientConfig | None = None
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._serving_ctx: ssl.SSLContext | None = None
        self.metrics = KubeletMetrics(settings.node_name, self._workers)
        self.network = self._pod_network()
        self.runtime: Any = None  # the node's CRI runtime (kubelet.cri.CRIRuntime), None: every Pod runs built-in

    def _pod_network(self) -> PodNetwork | None:
        if not self.s.cni_conf_dir:
            return None
        network = PodNetwork(
            self.layout.host(self.s.cni_conf_dir),
            [d for d in self.s.cni_bin_dir.split(os.pathsep) if d],
            self.layout.host(self.s.cni_cache_dir),
            self.layout,
        )
        network.sync()
        return network

    # --- credentials -------------------------------------------------------------------------------------------------
    def _host(self, node_path: str) -> Path:
        return self.layout.host(node_path)

    def _bootstrap_config(self) -> ClientConfig | None:
        if not self.s.bootstrap_kubeconfig:
            return None
        path = self._host(self.s.bootstrap_kubeconfig)
        if not path.exists():
            log.error("bootstrap kubeconfig %s does not exist", self.s.bootstrap_kubeconfig)
            return None
        log.info("using bootstrap kubeconfig %s to request a client certificate", self.s.bootstrap_kubeconfig)
        return load_client_config(path, self.layout)

    def _prepare_client_credentials(self) -> tuple[ClientConfig | None, CertPair | None]:
        """(cluster config, an initial pair from an embedded kubeconfig certificate); writes the bootstrapped
        kubeconfig when the existing one is not valid (rotation path A, step 3)."""
        assert self.s.kubeconfig
        kc = self._host(self.s.kubeconfig)
        if is_valid_client_kubeconfig(kc, self.layout):
            cfg = load_client_config(kc, self.layout)
            initial = None
            if cfg.cert_pem and cfg.key_pem:
                initial = _pair_from_pem(cfg.cert_pem, cfg.key_pem)
            elif cfg.cert_file:
                with contextlib.suppress(OSError, ValueError):
                    initial = load_pair(Path(cfg.cert_file), Path(cfg.key_file) if cfg.key_file else None)
            return cfg, initial
        if not self.s.bootstrap_kubeconfig:
            if kc.exists():  # e.g. a token kubeconfig: use it as it is
                return load_client_config(kc, self.layout), None
            return None, None
        boot = self._host(self.s.bootstrap_kubeconfig)
        if not boot.exists():
            log.error(
                "kubeconfig %s is not valid and bootstrap kubeconfig %s does not exist",
                self.s.kubeconfig,
                self.s.bootstrap_kubeconfig,
            )
            return None, None
        if self.s.rotate_certificates:  # path A writes the kubeconfig at once; path B once it has the certificate
            write_kubeconfig(kc, bootstrapped_kubeconfig(boot, self.s.cert_dir))
            return load_client_config(kc, self.layout), None
        return load_client_config(boot, self.layout), None

    def _client_authenticated(self, pair: CertPair | None) -> ClientConfig | None:
        assert self._base is not None
        if pair is not None:
            return pair_client_config(self._base, pair)
        return self._bootstrap_config()

    async def _on_client_cert(self, pair: CertPair) -> None:
        assert self._base is not None
        new = KubeClient(pair_client_config(self._base, pair), on_response=self.metrics.count_response)
        if self.client is None:
            self.client = SwappableClient(new)
            self._client_ready.set()
        else:
            self.client.swap(new)

    async def _blocking_bootstrap(self, store: PairStore) -> None:
        """Path B (rotateCertificates false): deterministic `node-csr-<digest>` name, key kept in kubelet-client.key.tmp."""
        boot = self._bootstrap_config()
        if boot is None:
            return
        tmp_key = self.cert_dir / "kubelet-client.key.tmp"
        key: Any = None
        if tmp_key.exists():
            with contextlib.suppress(ValueError, OSError):
                key = serialization.load_pem_private_key(tmp_key.read_bytes(), password=None)
        if key is None:
            key = generate_key()
            write_file_atomic(tmp_key, key_pem(key), c.PRIVATE_FILE_MODE)
        tpl = client_template(self.s.node_name)
        name = digested_name(key.public_key(), tpl.common_name, tpl.organizations, usages_for(key, False))
        delay = 2.0
        while True:
            client = KubeClient(boot, on_response=self.metrics.count_response)
            try:
                issued = await request_certificate(client, tpl, key=key, name=name, timeout=3600)
                break
            except Exception as e:
                log.error("failed to bootstrap the client certificate: %s; retrying in %.0fs", e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 32.0)
            finally:
                await client.close()
        pair = store.update(issued.cert_pem, key)
        tmp_key.unlink(missing_ok=True)
        assert self.s.kubeconfig and self.s.bootstrap_kubeconfig
        write_kubeconfig(
            self._host(self.s.kubeconfig),
            bootstrapped_kubeconfig(self._host(self.s.bootstrap_kubeconfig), self.s.cert_dir),
        )
        log.info("bootstrap: client certificate from CSR %s stored, wrote %s", issued.csr_name, self.s.kubeconfig)
        await self._on_client_cert(pair)

    # --- the run ----------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self._start_healthz()
            if self.s.static_pod_path:
                self.static_pods = StaticPodManager(
                    self._host(self.s.static_pod_path),
                    node_name=self.s.node_name,
                    pod_ip=self.node_ip,
                    layout=self.layout,
                    backoff_initial=self.backoff_initial,
                    on_change=self._pods_changed,
                    observer=self.metrics.pod_changed,
                )
                self._spawn(self.static_pods.run())
            if self.s.control_plane_cert_renewal_window is not None:
                self.cert_renewer = ControlPlaneCertRenewer(
                    self.layout, self.s.control_plane_cert_renewal_window, self.events.record_node
                )
                self._spawn(self.cert_renewer.run())
            if self.s.kubeconfig:
                self.runtime = await connect_node_runtime(self.s.container_runtime_endpoint, self.layout)
                if self.runtime is not None:  # the built-in runtime has no images to collect
                    gc = ImageGCManager(
                        self.runtime, self.s.image_gc, self.events, sandbox_images=[self.s.pod_infra_container_image]
                    )
                    self._spawn(gc.run(self.image_gc_period))
                await self._start_api_side()
            else:
                log.info("no --kubeconfig: running in standalone mode (static Pods only)")
            await asyncio.Event().wait()
        finally:
            await self.shutdown()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.append(task)
        return task

    def _pods_changed(self) -> None:
        if self.mirror is not None:
            self.mirror.poke()

    async def _start_api_side(self) -> None:
        base, initial = self._prepare_client_credentials()
        if base is None:
            log.error("no usable kubeconfig or bootstrap kubeconfig; running static Pods only")
            return
        self._base = dataclasses.replace(base, token=None, cert_file=None, key_file=None, cert_pem=None, key_pem=None)
        store = PairStore(self.cert_dir, "kubelet-client")
        if base.token and initial is None and store.current() is None and not self.s.bootstrap_kubeconfig:
            # a token kubeconfig, no certificates involved
            self.client = SwappableClient(KubeClient(base, on_response=self.metrics.count_response))
            self._client_ready.set()
        elif self.s.rotate_certificates:
            self.client_manager = CertificateManager(
                store,
                lambda: client_template(self.s.node_name),
                authenticated=self._client_authenticated,
                on_update=self._on_client_cert,
                name="client",
            )
            if self.client_manager.current is None and initial is not None:
                # an embedded kubeconfig certificate (kubeadm init's kubelet.conf): use it, rotate to a stored one
                self.client_manager.current = initial
                self.client_manager.force_rotation()
            if self.client_manager.current is not None and not self.client_manager.needs_immediate_rotation():
                await self._on_client_cert(self.client_manager.current)
            elif initial is not None:
                await self._on_client_cert(initial)
            self._spawn(self.client_manager.run())
        else:
            current = store.current() or initial
            if current is not None:
                await self._on_client_cert(current)
            else:
                self._spawn(self._blocking_bootstrap(store))
        self._spawn(self._after_client())

    async def _after_client(self) -> None:
        await self._client_ready.wait()
        client = self.client
        assert client is not None
        node = initial_node(
            self.s.node_name,
            hostname=self.s.node_name,
            node_ip=self.s.node_ip,
            version=self.version,
            root=self.layout.root,
            labels=self.s.node_labels,
            taints=self.s.register_with_taints,
            port=self.s.port,
            max_pods=self.s.max_pods,
            runtime_version=self.runtime.version_url if self.runtime is not None else "",
        )
        self.agent = NodeAgent(
            client,
            node,
            status_every=self.s.node_status_update_frequency,
            lease_duration=self.s.node_lease_duration_seconds,
            network_error=self.network.status if self.network is not None else lambda: None,
        )
        if self.network is not None:
            self._spawn(self.network.watch(self.agent.poke))
        self.agent.root = self.layout.root
        self._spawn(self.agent.lease_loop())
        if self.s.register_node:
            self._spawn(self.agent.register())
            self._spawn(self.agent.status_loop())
        if self.static_pods is not None:
            self.mirror = MirrorPodSyncer(client, self.static_pods, self.s.node_name)
            self._spawn(self._mirror_when_registered())
        self.pods = PodManager(
            lambda: self.client,
            node_name=self.s.node_name,
            pod_ip=self.node_ip,
            layout=self.layout,
            events=self.events,
            max_pods=self.s.max_pods,
            backoff_initial=self.backoff_initial,
            static_count=lambda: len(self.static_pods.pods) if self.static_pods is not None else 0,
            services=ServiceLinks(lambda: self.client),
            cluster_dns=self.s.cluster_dns,
            cluster_domain=self.s.cluster_domain,
            resolv_conf=self._resolv_conf(),
            observer=self.metrics.pod_changed,
            network=self.network,
            runtime=self.runtime,
        )
        self._spawn(self.events.run())
        self._spawn(self.pods.services.run())
        self._spawn(self.pods.status_loop())
        self._spawn(self._pods_when_registered())
        self._spawn(self._start_kubelet_server())

    def _resolv_conf(self) -> Path | None:
        """KubeletConfiguration resolvConf (default /etc/resolv.conf; "" = none): the node's file under its root
        where it has one, else the machine's."""
        path = self.s.raw_config.get("resolvConf", "/etc/resolv.conf")
        if not path:
            return None
        node = self._host(str(path))
        return node if node.exists() else Path(str(path))

    async def _pods_when_registered(self) -> None:
        assert self.agent is not None and self.pods is not None
        if self.s.register_node:
            await self.agent.registered.wait()
        await self.pods.run()

    async def _mirror_when_registered(self) -> None:
        assert self.agent is not None and self.mirror is not None
        await self.agent.registered.wait()
        self.mirror.node_uid = self.agent.uid
        await self.mirror.run()

    # --- servers ----------------------------------------------------------------------------------------------------
    async def _listen(self, app: web.Application, host: str, port: int, ctx: ssl.SSLContext | None = None) -> None:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=ctx, reuse_address=True)
        await site.start()
        self._runners.append(runner)
        log.info("listening on %s://%s:%d", "https" if ctx else "http", host, port)

    async def _start_healthz(self) -> None:
        if self.s.healthz_port > 0:
            await self._listen(healthz_app(), self.s.healthz_address, self.s.healthz_port)

    async def _serving_files(self) -> tuple[str, str]:
        if self.s.tls_cert_file and self.s.tls_private_key_file:
            return str(self._host(self.s.tls_cert_file)), str(self._host(self.s.tls_private_key_file))
        if self.s.server_tls_bootstrap:
            store = PairStore(self.cert_dir, "kubelet-server")

            def template() -> Any:
                addrs = self.agent.node["status"]["addresses"] if self.agent else []
                return serving_template(self.s.node_name, addrs)

            def authenticated(_: CertPair | None) -> ClientConfig | None:
                return self.client.current.config if self.client is not None else None  # the node's credentials

            async def reload(pair: CertPair) -> None:
                if self._serving_ctx is not None:
                    self._serving_ctx.load_cert_chain(str(pair.path))

            self.serving_manager = CertificateManager(
                store, template, authenticated=authenticated, on_update=reload, name="serving"
            )
            self._spawn(self.serving_manager.run())
            pair = await self.serving_manager.wait_for_current()
            return str(pair.path), str(pair.path)
        cert, key = self.cert_dir / "kubelet.crt", self.cert_dir / "kubelet.key"
        if self.agent is not None and self.s.register_node and not cert.exists():
            # two RSA keys take a while: let the Node register first (but never wait on it for long)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.agent.registered.wait(), 2.0)
        await asyncio.to_thread(ensure_self_signed_serving, cert, key, self.s.node_name)
        return str(cert), str(key)

    async def _start_kubelet_server(self) -> None:
        if self.s.port <= 0:
            return
        cert, key = await self._serving_files()
        ca = str(self._host(self.s.client_ca_file)) if self.s.client_ca_file else None
        self._serving_ctx = serving_ssl_context(cert, key, ca)
        server = KubeletServer(
            node_name=self.s.node_name,
            client=lambda: self.client,
            pods=self.pod_list,
            logs=self.container_log,
            containers=self.container_ref,
            anonymous=self.s.anonymous_auth,
            webhook_authn=self.s.webhook_authn,
            authorization_mode=self.s.authorization_mode,
            metrics=self.metrics,
            resource_targets=lambda: container_targets(self._workers()),
            runtime_targets=self._runtime_targets,
            summary=SummaryProvider(
                self.s.node_name,
                targets=self._all_targets,
                pods=self.pod_list,
                image_fs=self._image_fs,
                root_dir=self.layout.kubelet_dir,
            ),
        )
        await self._listen(server.app(), self.s.serve_address, self.s.port, self._serving_ctx)

    async def _all_targets(self) -> list[ContainerTarget]:
        return container_targets(self._workers()) + await self._runtime_targets()

    async def _image_fs(self) -> dict[str, Any] | None:
        """The CRI runtime's image filesystem (/stats/summary's runtime.imageFs), None without one."""
        if self.runtime is None:
            return None
        try:
            return await image_fs_stats(self.runtime)
        except (CRIError, ImageFsError) as e:
            log.info("image filesystem stats from the runtime: %s", e)
            return None

    async def _runtime_targets(self) -> list[ContainerTarget]:
        """The running containers of the CRI runtime, measured by it (ListContainerStats)."""
        if self.runtime is None or self.pods is None:
            return []
        running = {
            ct.container_id: (w, ct)
            for w in list(self.pods.workers.values())
            if isinstance(w, CRIPodWorker)
            for ct in w.all_containers()
            if ct.running
        }
        if not running:
            return []
        try:
            stats = await self.runtime.list_container_stats()
        except CRIError as e:
            log.info("container stats from the runtime: %s", e)
            return []
        out = []
        for s in stats:
            found = running.get(s.attributes.id)
            if found is None:
                continue
            w, ct = found
            cpu = s.cpu.usage_core_nano_seconds.value / 1e9
            out.append(
                ContainerTarget(
                    ct.name,
                    w.namespace,
                    w.name,
                    0,
                    measured=(cpu, s.memory.working_set_bytes.value, ct.started_epoch),
                    stats=s,
                    log_path=ct.log_path(),
                )
            )
        return out

    def _workers(self) -> list[Any]:
        static = [w for _, w in self.static_pods.pods.values()] if self.static_pods is not None else []
        api = list(self.pods.workers.values()) if self.pods is not None else []
        return static + api

    def container_log(self, namespace: str, pod: str, container: str, previous: bool) -> Path | str:
        """The log file of a container of one of our Pods (the current or the previous instance), or why not."""
        found = find_container(self._workers(), namespace, pod, container)
        if isinstance(found, str):
            return found
        _, ct = found
        if not previous:
            return ct.log_path()
        if ct.restart_count == 0:
            return f'previous terminated container "{container}" in pod "{pod}" not found'
        return ct.log_path(ct.restart_count - 1)

    def container_ref(self, namespace: str, pod: str, container: str) -> ContainerRef | str:
        """A running container for exec/attach/port-forward (pid, env, cwd, enter prefix, ...), or why not."""
        found = find_container(self._workers(), namespace, pod, container)
        if isinstance(found, str):
            return found
        w, ct = found
        return ContainerRef.of(w, ct)

    def pod_list(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.static_pods is None and self.pods is None:
            return out
        uid = self.agent.uid if self.agent and self.agent.uid else ""
        for sp, worker in list(self.static_pods.pods.values()) if self.static_pods is not None else []:
            pod = mirror_pod(sp, self.s.node_name, uid)
            pod["metadata"]["uid"] = sp.hash
            pod["status"] = worker.status()
            out.append(pod)
        for api_worker in list(self.pods.workers.values()) if self.pods is not None else []:
            out.append({**api_worker.pod, "status": api_worker.status()})
        return out

    async def shutdown(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self.pods is not None:
            await (
                self.pods.detach_all()
            )  # API Pods' containers outlive the kubelet (their shims); a new one adopts them
        if self.static_pods is not None:
            await self.static_pods.stop_all()
        for r in self._runners:
            with contextlib.suppress(Exception):
                await r.cleanup()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close()


def _pair_from_pem(cert_pem: bytes, key_pem_bytes: bytes) -> CertPair:
    from cryptography import x509

    certs = tuple(x509.load_pem_x509_certificates(cert_pem))
    key = serialization.load_pem_private_key(key_pem_bytes, password=None)
    return CertPair(Path("<kubeconfig>"), certs, key)
