"""`pykubeadm component kube-controller-manager <flags>`: the built-in kube-controller-manager.

Parses the flags kubeadm writes into the static Pod manifest (Go pflag syntax: `--name=value`, bare booleans), rejects
unknown flags naming them, serves HTTPS /healthz on --bind-address:--secure-port, and runs the enabled controllers —
behind leader election on the Lease kube-system/kube-controller-manager when --leader-elect (the default).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import click
from lightkube.core.exceptions import ConfigError

from pykubeadm import constants as c
from pykubeadm.client import load_kubeconfig
from pykubeadm.controllers.app.credentials import ClientBuilder
from pykubeadm.controllers.app.daemon import (
    configure_logging,
    leader_election_flags,
    leader_health_check,
    new_elector,
    run_until_signalled,
    serve_and_lead,
)
from pykubeadm.controllers.app.delegatedauth import new_delegating_auth
from pykubeadm.controllers.app.flags import GoDuration, bool_flag, path_or_none, reject_unknown_flags
from pykubeadm.controllers.app.manager import ControllerSelectionError, enabled_controllers, run_controllers
from pykubeadm.controllers.app.serving import HealthServer
from pykubeadm.controllers.metrics import ComponentMetrics
from pykubeadm.controllers.nodeipam.controller import parse_cluster_cidrs
from pykubeadm.controllers.runtime import ControllerContext, ControllerStartError
from pykubeadm.errors import KubeconfigError
from pykubeadm.featuregates import click_feature_gates
from pykubeadm.util.leaderelection import LeaderElector

__all__ = ["KCMOptions", "command", "run_kcm", "validate"]

log = logging.getLogger("kube-controller-manager")


@dataclass
class KCMOptions:
    kubeconfig: Path
    authentication_kubeconfig: Path | None
    authorization_kubeconfig: Path | None
    bind_address: str
    secure_port: int
    tls_cert_file: Path | None
    tls_private_key_file: Path | None
    client_ca_file: Path | None
    requestheader_client_ca_file: Path | None
    cluster_signing_cert_file: Path | None
    cluster_signing_key_file: Path | None
    cluster_signing_duration: timedelta
    controllers: list[str]
    leader_elect: bool
    leader_elect_lease_duration: timedelta
    leader_elect_renew_deadline: timedelta
    leader_elect_retry_period: timedelta
    leader_elect_resource_namespace: str
    leader_elect_resource_name: str
    root_ca_file: Path | None
    service_account_private_key_file: Path | None
    use_service_account_credentials: bool
    allocate_node_cidrs: bool
    cluster_cidr: str
    node_cidr_mask_size: int | None
    node_cidr_mask_size_ipv4: int | None
    node_cidr_mask_size_ipv6: int | None
    service_cluster_ip_range: str
    cluster_name: str
    node_monitor_period: float
    node_monitor_grace_period: float
    node_startup_grace_period: float
    terminated_pod_gc_threshold: int = 12500
    max_endpoints_per_slice: int = 100
    profiling: bool = True
    horizontal_pod_autoscaler_sync_period: float = 15.0
    horizontal_pod_autoscaler_downscale_stabilization: float = 300.0
    horizontal_pod_autoscaler_tolerance: float = 0.1
    horizontal_pod_autoscaler_cpu_initialization_period: float = 300.0
    horizontal_pod_autoscaler_initial_readiness_delay: float = 30.0


def validate(opts: KCMOptions) -> list[str]:
    """Every startup problem at once (files that must be readable, consistent signing flags)."""
    problems = []
    missing_kubeconfig = opts.kubeconfig == Path()  # Path("") is ".", which is truthy
    if missing_kubeconfig:
        problems.append("--kubeconfig is required")
    for flag, path in (
        ("--kubeconfig", None if missing_kubeconfig else opts.kubeconfig),
        ("--authentication-kubeconfig", opts.authentication_kubeconfig),
        ("--authorization-kubeconfig", opts.authorization_kubeconfig),
        ("--root-ca-file", opts.root_ca_file),
        ("--service-account-private-key-file", opts.service_account_private_key_file),
        ("--cluster-signing-cert-file", opts.cluster_signing_cert_file),
        ("--cluster-signing-key-file", opts.cluster_signing_key_file),
        ("--client-ca-file", opts.client_ca_file),
        ("--requestheader-client-ca-file", opts.requestheader_client_ca_file),
    ):
        if path is not None and not path.is_file():
            problems.append(f"{flag}: open {path}: no such file or directory")
    if opts.kubeconfig.is_file():
        try:
            load_kubeconfig(opts.kubeconfig).get()
        except (KubeconfigError, ConfigError, KeyError) as err:
            problems.append(f"--kubeconfig: invalid kubeconfig {opts.kubeconfig}: {err}")
    if bool(opts.cluster_signing_cert_file) != bool(opts.cluster_signing_key_file):
        problems.append("--cluster-signing-cert-file and --cluster-signing-key-file must be set together")
    if opts.allocate_node_cidrs and not opts.cluster_cidr:
        problems.append("--allocate-node-cidrs requires --cluster-cidr")
    elif opts.allocate_node_cidrs:
        try:
            parse_cluster_cidrs(
                opts.cluster_cidr,
                opts.node_cidr_mask_size_ipv4 or opts.node_cidr_mask_size,
                opts.node_cidr_mask_size_ipv6 or opts.node_cidr_mask_size,
            )
        except ValueError as err:
            problems.append(f"--cluster-cidr/--node-cidr-mask-size: {err}")
    try:
        enabled_controllers(opts.controllers)
    except ControllerSelectionError as err:
        problems.append(f"--controllers: {err}")
    return problems


async def run_kcm(opts: KCMOptions) -> int:
    """Serve health, elect a leader, run the controllers; the exit code (1 when leadership is lost)."""
    names = enabled_controllers(opts.controllers)
    builder = ClientBuilder(opts.kubeconfig, opts.use_service_account_credentials)
    elector: LeaderElector | None = None
    if opts.leader_elect:
        elector = new_elector(
            builder.root,
            opts.leader_elect_resource_namespace,
            opts.leader_elect_resource_name,
            lease_duration=opts.leader_elect_lease_duration,
            renew_deadline=opts.leader_elect_renew_deadline,
            retry_period=opts.leader_elect_retry_period,
            log=log,
        )
    metrics = ComponentMetrics()
    if elector is not None:
        metrics.watch_leader_election(opts.leader_elect_resource_name, elector)
    server = HealthServer(
        opts.bind_address,
        opts.secure_port,
        cert_file=opts.tls_cert_file,
        key_file=opts.tls_private_key_file,
        checks={"healthz": {"leaderElection": leader_health_check(elector)}},
        auth=new_delegating_auth(opts.client_ca_file, opts.authentication_kubeconfig, opts.authorization_kubeconfig),
        metrics=metrics,
        profiling=opts.profiling,
    )

    async def lead() -> None:
        await builder.probe("certificate-controller")
        ctx = ControllerContext(client=builder.root, options=opts, client_for=builder.client_for, metrics=metrics)
        await run_controllers(ctx, names)

    try:
        return await serve_and_lead(server, elector, lead, log)
    finally:
        await builder.close()


@click.command(
    name="kube-controller-manager",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]},
)
@click.option(
    "--kubeconfig", default="", help="Path to kubeconfig file with authorization and master location information."
)
@click.option("--authentication-kubeconfig", default="", help="kubeconfig with rights to create tokenreviews.")
@click.option("--authorization-kubeconfig", default="", help="kubeconfig with rights to create subjectaccessreviews.")
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="IP address to serve --secure-port on.")
@click.option("--secure-port", type=int, default=c.KUBE_CONTROLLER_MANAGER_PORT, show_default=True)
@click.option("--tls-cert-file", default="", help="Serving certificate (self-signed in memory when empty).")
@click.option("--tls-private-key-file", default="")
@click.option("--cert-dir", default="", help="Accepted for compatibility; the self-signed pair stays in memory.")
@click.option("--client-ca-file", default="")
@click.option("--requestheader-client-ca-file", default="")
@click.option("--cluster-signing-cert-file", default="", help="CA certificate for the csrsigning controller.")
@click.option("--cluster-signing-key-file", default="", help="CA key; empty (external CA): nothing is signed.")
@click.option("--cluster-signing-duration", type=GoDuration(), default="8760h0m0s", show_default=True)
@click.option("--controllers", default="*", show_default=True, help="Comma-separated: *, name, -name.")
@leader_election_flags(c.KUBE_CONTROLLER_MANAGER, "Run leader election before executing the main loop.")
@click.option("--root-ca-file", default="")
@click.option("--service-account-private-key-file", default="")
@bool_flag("--use-service-account-credentials", False, "Use a separate service account per controller.")
@bool_flag("--allocate-node-cidrs", False, "Allocate and set Pod CIDRs on Nodes.")
@click.option("--cluster-cidr", default="")
@click.option("--node-cidr-mask-size", type=int, default=None)
@click.option("--node-cidr-mask-size-ipv4", type=int, default=None)
@click.option("--node-cidr-mask-size-ipv6", type=int, default=None)
@click.option("--service-cluster-ip-range", default="")
@click.option("--cluster-name", default=c.DEFAULT_CLUSTER_NAME, show_default=True)
@click.option("--node-monitor-period", type=GoDuration(), default="5s", show_default=True)
@click.option("--node-monitor-grace-period", type=GoDuration(), default="40s", show_default=True)
@click.option("--node-startup-grace-period", type=GoDuration(), default="1m0s", show_default=True)
@click.option("--terminated-pod-gc-threshold", type=int, default=12500, show_default=True)
@click.option("--max-endpoints-per-slice", type=click.IntRange(1, 1000), default=100, show_default=True)
@click.option("--horizontal-pod-autoscaler-sync-period", type=GoDuration(), default="15s", show_default=True)
@click.option("--horizontal-pod-autoscaler-downscale-stabilization", type=GoDuration(), default="5m0s",
              show_default=True)  # fmt: skip
@click.option("--horizontal-pod-autoscaler-tolerance", type=float, default=0.1, show_default=True)
@click.option("--horizontal-pod-autoscaler-cpu-initialization-period", type=GoDuration(), default="5m0s",
              show_default=True)  # fmt: skip
@click.option("--horizontal-pod-autoscaler-initial-readiness-delay", type=GoDuration(), default="30s",
              show_default=True)  # fmt: skip
@bool_flag("--profiling", True, "Serve /debug/pprof/ to authorized callers.")
@click.option("--feature-gates", default="", callback=click_feature_gates, help="Known v1.33 gates are accepted.")
@click.option("--flex-volume-plugin-dir", default="", help="Accepted for compatibility.")
@click.option("-v", "--v", "verbosity", type=int, default=0)
@click.pass_context
def command(ctx: click.Context, **flags: Any) -> None:
    """Run the built-in kube-controller-manager."""
    reject_unknown_flags(ctx.args)
    if flags["leader_elect_resource_lock"] != "leases":
        raise click.UsageError(
            f'--leader-elect-resource-lock: only "leases" is supported, got {flags["leader_elect_resource_lock"]!r}'
        )
    opts = KCMOptions(
        kubeconfig=Path(flags["kubeconfig"]) if flags["kubeconfig"] else Path(),
        authentication_kubeconfig=path_or_none(flags["authentication_kubeconfig"]),
        authorization_kubeconfig=path_or_none(flags["authorization_kubeconfig"]),
        bind_address=flags["bind_address"],
        secure_port=flags["secure_port"],
        tls_cert_file=path_or_none(flags["tls_cert_file"]),
        tls_private_key_file=path_or_none(flags["tls_private_key_file"]),
        client_ca_file=path_or_none(flags["client_ca_file"]),
        requestheader_client_ca_file=path_or_none(flags["requestheader_client_ca_file"]),
        cluster_signing_cert_file=path_or_none(flags["cluster_signing_cert_file"]),
        cluster_signing_key_file=path_or_none(flags["cluster_signing_key_file"]),
        cluster_signing_duration=flags["cluster_signing_duration"],
        controllers=flags["controllers"].split(","),
        leader_elect=flags["leader_elect"],
        leader_elect_lease_duration=flags["leader_elect_lease_duration"],
        leader_elect_renew_deadline=flags["leader_elect_renew_deadline"],
        leader_elect_retry_period=flags["leader_elect_retry_period"],
        leader_elect_resource_namespace=flags["leader_elect_resource_namespace"],
        leader_elect_resource_name=flags["leader_elect_resource_name"],
        root_ca_file=path_or_none(flags["root_ca_file"]),
        service_account_private_key_file=path_or_none(flags["service_account_private_key_file"]),
        use_service_account_credentials=flags["use_service_account_credentials"],
        allocate_node_cidrs=flags["allocate_node_cidrs"],
        cluster_cidr=flags["cluster_cidr"],
        node_cidr_mask_size=flags["node_cidr_mask_size"],
        node_cidr_mask_size_ipv4=flags["node_cidr_mask_size_ipv4"],
        node_cidr_mask_size_ipv6=flags["node_cidr_mask_size_ipv6"],
        service_cluster_ip_range=flags["service_cluster_ip_range"],
        cluster_name=flags["cluster_name"],
        node_monitor_period=flags["node_monitor_period"].total_seconds(),
        node_monitor_grace_period=flags["node_monitor_grace_period"].total_seconds(),
        node_startup_grace_period=flags["node_startup_grace_period"].total_seconds(),
        terminated_pod_gc_threshold=flags["terminated_pod_gc_threshold"],
        max_endpoints_per_slice=flags["max_endpoints_per_slice"],
        profiling=flags["profiling"],
        horizontal_pod_autoscaler_sync_period=flags["horizontal_pod_autoscaler_sync_period"].total_seconds(),
        horizontal_pod_autoscaler_downscale_stabilization=flags[
            "horizontal_pod_autoscaler_downscale_stabilization"
        ].total_seconds(),
        horizontal_pod_autoscaler_tolerance=flags["horizontal_pod_autoscaler_tolerance"],
        horizontal_pod_autoscaler_cpu_initialization_period=flags[
            "horizontal_pod_autoscaler_cpu_initialization_period"
        ].total_seconds(),
        horizontal_pod_autoscaler_initial_readiness_delay=flags[
            "horizontal_pod_autoscaler_initial_readiness_delay"
        ].total_seconds(),
    )
    problems = validate(opts)
    if problems:
        raise click.UsageError("; ".join(problems))
    configure_logging(flags["verbosity"])
    with contextlib.suppress(KeyboardInterrupt):
        try:
            code = run_until_signalled(lambda: run_kcm(opts), log)
        except ControllerStartError as err:
            log.error('"Error starting controllers" err="%s"', err)
            code = 1
        sys.exit(code)
