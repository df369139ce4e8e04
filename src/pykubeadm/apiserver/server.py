"""Runs the apiserver: opens the store, wires auth, creates the built-in objects, serves HTTPS until SIGTERM/SIGINT,
then shuts down gracefully (readyz fails, in-flight requests finish, watches end, the store closes)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import ssl
import sys
from typing import Any

from aiohttp import web

from pykubeadm import constants as c
from pykubeadm.apiserver.aggregator import Aggregator, ProxyTransport
from pykubeadm.apiserver.app import build_app
from pykubeadm.apiserver.audit.logbackend import LogBackend
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.bootstrap import ensure_builtin_objects, namespace_controller, reconcile_rbac_policy
from pykubeadm.apiserver.clusterauthtrust import HOOK_NAME as CLUSTER_AUTH_HOOK
from pykubeadm.apiserver.clusterauthtrust import ClusterAuthenticationTrustController, authentication_info_from_options
from pykubeadm.apiserver.crd.controller import CRDController
from pykubeadm.apiserver.discovery import group_versions, version_info
from pykubeadm.apiserver.endpointreconciler import LeaseEndpointReconciler
from pykubeadm.apiserver.eventttl import event_ttl_sweeper
from pykubeadm.apiserver.handlers.podlog import KubeletClient
from pykubeadm.apiserver.middleware import InflightLimits
from pykubeadm.apiserver.middleware.audit import Auditor
from pykubeadm.apiserver.objectsource import StoreObjectSource
from pykubeadm.apiserver.options import ServerOptions
from pykubeadm.apiserver.registry import STRATEGIES
from pykubeadm.apiserver.registry.service import IPAllocator, ServiceStrategy
from pykubeadm.apiserver.state import ApiState
from pykubeadm.apiserver.tokenrequest import TokenIssuer
from pykubeadm.apiserver.wiring import wire_auth
from pykubeadm.storage import Store, open_store
from pykubeadm.storage.transformed import TransformedStore
from pykubeadm.util import aio
from pykubeadm.util.gotls import apply_tls_options
from pykubeadm.util.tlsclientauth import request_client_certificates

__all__ = ["build_ssl_context", "run", "serve"]

log = logging.getLogger("pykubeadm.apiserver")


def build_ssl_context(options: ServerOptions) -> ssl.SSLContext | None:
    if options.tls_cert_file is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # kube's default; --tls-min-version may lower or raise it
    apply_tls_options(ctx, options.tls_min_version, options.tls_cipher_suites)
    ctx.load_cert_chain(str(options.tls_cert_file), str(options.tls_private_key_file))
    if options.client_ca_file is not None or options.requestheader_client_ca_file is not None:
        # Like kube-apiserver (tls.RequestClientCert): any certificate passes the handshake and the x509 and
        # front-proxy authenticators judge it, so a foreign, expired or server-only certificate gets 401 Unauthorized.
        # The CertificateRequest names the --client-ca-file issuers, as Go's ClientCAs does.
        hint = options.client_ca_file or options.requestheader_client_ca_file
        request_client_certificates(ctx, str(hint))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


async def _deny(attrs: Attributes) -> tuple[Decision, str]:
    return Decision.NO_OPINION, ""


async def _nobody(req: Any) -> None:
    return None


def _bind_host(options: ServerOptions) -> str:
    if options.bind_address not in ("", "0.0.0.0"):
        return options.bind_address
    # Lab nodes share the standard ports on distinct loopback addresses: bind to the advertised loopback address.
    if options.advertise_address and ipaddress.ip_address(options.advertise_address).is_loopback:
        return options.advertise_address
    return options.bind_address or "0.0.0.0"


async def serve(options: ServerOptions, stop: asyncio.Event, started: asyncio.Event | None = None) -> None:
    backend: Store = await open_store(
        options.etcd_servers,
        ca_file=options.etcd_cafile,
        cert_file=options.etcd_certfile,
        key_file=options.etcd_keyfile,
    )
    encryption = None
    if options.encryption_config is not None and options.encryption_provider_config is not None:
        # Only with --encryption-provider-config: the providers (and their cryptography) are not paid otherwise.
        from pykubeadm.apiserver.encryption.runtime import EncryptionRuntime

        encryption = EncryptionRuntime(
            options.encryption_provider_config,
            options.encryption_config,
            ((s.key_prefix, s.group, s.plural) for s in STRATEGIES),
        )
        backend = TransformedStore(backend, encryption.resolve)
    state = ApiState(
        backend=backend, version_info=version_info(options.version), authenticator=_nobody, authorizer=_deny
    )
    state.profiling = options.profiling
    state.feature_gates = dict(options.feature_gates)
    if options.feature_gates:  # accepted; the v1.33 default behaviour is what we implement
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(options.feature_gates.items()))
        print(f"feature gates: {gates}", file=sys.stderr, flush=True)
    state.kubelet_client = KubeletClient(
        options.kubelet_client_certificate, options.kubelet_client_key, options.kubelet_certificate_authority
    )
    source = StoreObjectSource(state.by_resource)
    allocator = IPAllocator(options.service_cluster_ip_range, in_use=lambda: set())
    for s in STRATEGIES:
        if isinstance(s, ServiceStrategy):
            s.allocator = allocator
    tasks: list[asyncio.Task[None]] = []
    runner: web.AppRunner | None = None
    audit_backend: LogBackend | None = None
    try:
        if encryption is not None and options.encryption_provider_config_automatic_reload:
            tasks.append(asyncio.create_task(encryption.watch_file(), name="encryption-config-reload"))
        await source.start()

        def services_in_use() -> set[str]:
            cache = source._caches.get("services")
            return {(o.get("spec") or {}).get("clusterIP", "") for o in (cache.items.values() if cache else [])}

        allocator.in_use = services_in_use
        await wire_auth(state, options, source)
        if options.service_account_signing_key_file is not None and options.service_account_issuer:
            state.reviews["TokenRequest"] = TokenIssuer(
                options.service_account_signing_key_file, options.service_account_issuer[0], options.api_audiences
            )
        await ensure_builtin_objects(state, options.advertise_address, options.secure_port, allocator.first())
        await reconcile_rbac_policy(state)
        tasks.append(asyncio.create_task(namespace_controller(state), name="namespace-controller"))
        tasks.append(asyncio.create_task(event_ttl_sweeper(state, options.event_ttl_seconds), name="event-ttl"))
        trust = ClusterAuthenticationTrustController(state, lambda: authentication_info_from_options(options))
        tasks.append(asyncio.create_task(trust.run(), name="cluster-authentication-trust-controller"))
        state.crds = CRDController(state)
        tasks.append(asyncio.create_task(state.crds.run(), name="crd-controller"))
        if options.advertise_address and (options.raw_flags.get("endpoint-reconciler-type") or "lease") == "lease":
            reconciler = LeaseEndpointReconciler(state, options.advertise_address, options.secure_port)
            tasks.append(asyncio.create_task(reconciler.run(), name="endpoint-reconciler"))
        transport = ProxyTransport(options.proxy_client_cert_file, options.proxy_client_key_file)
        state.aggregator = Aggregator(state, transport, group_versions())
        tasks.append(asyncio.create_task(state.aggregator.run(), name="aggregator"))

        async def ok() -> str | None:
            return None

        async def etcd() -> str | None:
            try:
                await asyncio.wait_for(backend.current_revision(), 2)
            except Exception as e:
                return str(e)
            return None

        async def informers() -> str | None:
            return None if source.synced() else "caches not synced"

        async def shutdown() -> str | None:
            return "shutting down" if state.shutting_down else None

        live = {
            "ping": ok,
            "log": ok,
            "etcd": etcd,
            "poststarthook/start-apiserver-admission-initializer": ok,
            f"poststarthook/{CLUSTER_AUTH_HOOK}": ok,
        }
        state.health_checks = {
            "healthz": dict(live),
            "livez": dict(live),
            "readyz": {**live, "informer-sync": informers, "shutdown": shutdown},
        }
        auditor = None
        if options.audit_log_path and options.audit_policy is not None:
            audit_backend = LogBackend(
                options.audit_log_path,
                options.audit_log_format,
                options.audit_log_maxsize,
                options.audit_log_maxbackup,
                options.audit_log_maxage,
            )
            auditor = Auditor(options.audit_policy, audit_backend)
        limits = InflightLimits(options.max_requests_inflight, options.max_mutating_requests_inflight)
        app = build_app(state, auditor, limits, options.request_timeout_seconds)
        # Request bodies are read as sent: kube-apiserver never decompresses them (Content-Encoding is ignored).
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS,
            auto_decompress=False,
        )
        await runner.setup()
        host = _bind_host(options)
        site = web.TCPSite(
            runner, host, options.secure_port, ssl_context=build_ssl_context(options), backlog=1024, reuse_address=True
        )
        await site.start()
        state.ready = True
        bound = runner.addresses  # the socket names of the listening sockets (the bound port when it was 0)
        addr = bound[0] if bound else (host, options.secure_port)
        print(f"Serving securely on {addr[0]}:{addr[1]}", file=sys.stderr, flush=True)
        if started is not None:
            started.set()
        await stop.wait()
        state.shutting_down = True
        if options.shutdown_delay_seconds:
            await asyncio.sleep(options.shutdown_delay_seconds)
    finally:
        state.shutting_down = True
        # Every watch ends now (its client re-watches elsewhere), not when its next bookmark interval is up: otherwise
        # the runner waits out its shutdown timeout for the open watches.
        for w in list(state.open_watchers):
            w.close()
        if runner is not None:
            await runner.cleanup()
        for t in tasks:
            t.cancel()
            with contextlib.suppress(BaseException):
                await t
        await source.stop()
        await backend.close()
        if audit_backend is not None:
            audit_backend.close()


def run(options: ServerOptions) -> None:
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(options, stop)

    aio.run(main())
