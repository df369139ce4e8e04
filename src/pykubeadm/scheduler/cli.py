"""`pykubeadm component kube-scheduler <flags>`: the built-in kube-scheduler.

Accepts the flags kubeadm writes (--kubeconfig, --authentication-kubeconfig, --authorization-kubeconfig,
--bind-address, --leader-elect) plus --secure-port and the leader-election tuning flags; unknown flags are a startup
error. Serves HTTPS /healthz, /livez and /readyz on --bind-address:--secure-port (10259), /metrics there behind
delegated authentication and authorization (controllers/app/delegatedauth.py) and, while holding the Lease
kube-system/kube-scheduler, binds pending Pods.
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
from pykubeadm.client import async_client, load_kubeconfig
from pykubeadm.controllers.app.daemon import (
    configure_logging,
    leader_election_flags,
    leader_health_check,
    new_elector,
    run_until_signalled,
    serve_and_lead,
)
from pykubeadm.controllers.app.delegatedauth import new_delegating_auth
from pykubeadm.controllers.app.flags import bool_flag, path_or_none, reject_unknown_flags
from pykubeadm.controllers.app.serving import HealthServer
from pykubeadm.controllers.runtime import ControllerContext, run_with_informers
from pykubeadm.errors import KubeconfigError
from pykubeadm.featuregates import click_feature_gates
from pykubeadm.scheduler.metrics import SchedulerMetrics
from pykubeadm.scheduler.scheduler import SchedulerController
from pykubeadm.util.leaderelection import LeaderElector

__all__ = ["SchedulerOptions", "command", "run_scheduler"]

log = logging.getLogger("kube-scheduler")


@dataclass
class SchedulerOptions:
    kubeconfig: Path
    bind_address: str
    secure_port: int
    tls_cert_file: Path | None
    tls_private_key_file: Path | None
    leader_elect: bool
    lease_duration: timedelta
    renew_deadline: timedelta
    retry_period: timedelta
    lock_namespace: str
    lock_name: str
    client_ca_file: Path | None = None
    authentication_kubeconfig: Path | None = None
    authorization_kubeconfig: Path | None = None
    profiling: bool = True


async def _run_scheduling(client: Any, metrics: SchedulerMetrics) -> None:
    ctx = ControllerContext(client=client)
    scheduler = SchedulerController(ctx)
    scheduler.metrics = metrics
    metrics.watch_pending(scheduler.pending_counts)
    await run_with_informers(ctx, [scheduler])


async def run_scheduler(opts: SchedulerOptions) -> int:
    client = async_client(opts.kubeconfig)
    elector: LeaderElector | None = None
    if opts.leader_elect:
        elector = new_elector(
            client,
            opts.lock_namespace,
            opts.lock_name,
            lease_duration=opts.lease_duration,
            renew_deadline=opts.renew_deadline,
            retry_period=opts.retry_period,
            log=log,
        )
    checks = {"leaderElection": leader_health_check(elector)}
    metrics = SchedulerMetrics()
    if elector is not None:
        metrics.component.watch_leader_election(opts.lock_name, elector)
    server = HealthServer(
        opts.bind_address,
        opts.secure_port,
        cert_file=opts.tls_cert_file,
        key_file=opts.tls_private_key_file,
        checks={"healthz": dict(checks), "livez": dict(checks), "readyz": {}},
        auth=new_delegating_auth(opts.client_ca_file, opts.authentication_kubeconfig, opts.authorization_kubeconfig),
        metrics=metrics.component,
        profiling=opts.profiling,
    )
    try:
        return await serve_and_lead(server, elector, lambda: _run_scheduling(client, metrics), log)
    finally:
        await client.close()


@click.command(
    name="kube-scheduler",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]},
)
@click.option("--kubeconfig", default="", help="Path to kubeconfig file with authorization and master location.")
@click.option("--authentication-kubeconfig", default="")
@click.option("--authorization-kubeconfig", default="")
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--secure-port", type=int, default=c.KUBE_SCHEDULER_PORT, show_default=True)
@click.option("--tls-cert-file", default="")
@click.option("--tls-private-key-file", default="")
@click.option("--cert-dir", default="")
@leader_election_flags(c.KUBE_SCHEDULER, "Run leader election before scheduling.")
@click.option("--client-ca-file", default="")
@click.option("--requestheader-client-ca-file", default="")
@bool_flag("--profiling", True, "Serve /debug/pprof/ to authorized callers.")
@click.option("--feature-gates", default="", callback=click_feature_gates)
@click.option("-v", "--v", "verbosity", type=int, default=0)
@click.pass_context
def command(ctx: click.Context, **flags: Any) -> None:
    """Run the built-in kube-scheduler."""
    reject_unknown_flags(ctx.args)
    if not flags["kubeconfig"]:
        raise click.UsageError("--kubeconfig is required")
    if not Path(flags["kubeconfig"]).is_file():
        raise click.UsageError(f"--kubeconfig: open {flags['kubeconfig']}: no such file or directory")
    try:
        load_kubeconfig(flags["kubeconfig"]).get()
    except (KubeconfigError, ConfigError, KeyError) as err:
        raise click.UsageError(f"--kubeconfig: invalid kubeconfig {flags['kubeconfig']}: {err}") from err
    opts = SchedulerOptions(
        kubeconfig=Path(flags["kubeconfig"]),
        bind_address=flags["bind_address"],
        secure_port=flags["secure_port"],
        tls_cert_file=path_or_none(flags["tls_cert_file"]),
        tls_private_key_file=path_or_none(flags["tls_private_key_file"]),
        leader_elect=flags["leader_elect"],
        lease_duration=flags["leader_elect_lease_duration"],
        renew_deadline=flags["leader_elect_renew_deadline"],
        retry_period=flags["leader_elect_retry_period"],
        lock_namespace=flags["leader_elect_resource_namespace"],
        lock_name=flags["leader_elect_resource_name"],
        client_ca_file=path_or_none(flags["client_ca_file"]),
        authentication_kubeconfig=path_or_none(flags["authentication_kubeconfig"]),
        authorization_kubeconfig=path_or_none(flags["authorization_kubeconfig"]),
        profiling=flags["profiling"],
    )
    configure_logging(flags["verbosity"])
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(run_until_signalled(lambda: run_scheduler(opts)))
