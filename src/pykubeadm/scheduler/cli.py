"""`pykubeadm component kube-scheduler <flags>`: the built-in kube-scheduler.

Accepts the flags kubeadm writes (--kubeconfig, --authentication-kubeconfig, --authorization-kubeconfig,
--bind-address, --leader-elect) plus --secure-port and the leader-election tuning flags; unknown flags are a startup
error. Serves HTTPS /healthz, /livez and /readyz on --bind-address:--secure-port (10259) and, while holding the Lease
kube-system/kube-scheduler, binds pending Pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import click
from lightkube.core.exceptions import ConfigError

from pykubeadm import constants as c
from pykubeadm.client import async_client, load_kubeconfig
from pykubeadm.controllers.flags import GoDuration, bool_flag, path_or_none, reject_unknown_flags
from pykubeadm.controllers.runtime import ControllerContext
from pykubeadm.controllers.serving import HealthServer
from pykubeadm.errors import KubeconfigError
from pykubeadm.scheduler.scheduler import SchedulerController
from pykubeadm.util.leaderelection import LeaderElector, LeaseLock, new_identity

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


async def _run_scheduling(client: Any) -> None:
    ctx = ControllerContext(client=client)
    scheduler = SchedulerController(ctx)
    tasks = [asyncio.create_task(inf.run()) for inf in ctx.informers]
    tasks.append(asyncio.create_task(scheduler.run()))
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def run_scheduler(opts: SchedulerOptions) -> int:
    client = async_client(opts.kubeconfig)
    elector: LeaderElector | None = None
    if opts.leader_elect:
        elector = LeaderElector(
            LeaseLock(client, opts.lock_namespace, opts.lock_name, new_identity()),
            lease_duration=opts.lease_duration.total_seconds(),
            renew_deadline=opts.renew_deadline.total_seconds(),
            retry_period=opts.retry_period.total_seconds(),
            on_new_leader=lambda who: log.info("new leader elected: %s", who),
        )

    def leader_check() -> str | None:
        if elector is None or not elector.is_leader():
            return None
        if time.monotonic() - elector.observed_time > elector.lease_duration + 20:
            return "failed election to renew leadership on lease"
        return None

    checks = {"leaderElection": leader_check}
    server = HealthServer(
        opts.bind_address,
        opts.secure_port,
        cert_file=opts.tls_cert_file,
        key_file=opts.tls_private_key_file,
        checks={"healthz": dict(checks), "livez": dict(checks), "readyz": {}},
    )
    await server.start()
    log.info("serving securely on %s:%d", opts.bind_address, opts.secure_port)
    try:
        if elector is None:
            await _run_scheduling(client)
            return 0
        await elector.run(lambda: _run_scheduling(client))
        log.error("leaderelection lost")
        return 1
    finally:
        await server.stop()
        await client.close()


def _main(opts: SchedulerOptions) -> int:
    async def guarded() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
        try:
            return await run_scheduler(opts)
        except asyncio.CancelledError:
            return 0

    return asyncio.run(guarded())


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
@bool_flag("--leader-elect", True, "Run leader election before scheduling.")
@click.option("--leader-elect-lease-duration", type=GoDuration(), default="15s", show_default=True)
@click.option("--leader-elect-renew-deadline", type=GoDuration(), default="10s", show_default=True)
@click.option("--leader-elect-retry-period", type=GoDuration(), default="2s", show_default=True)
@click.option("--leader-elect-resource-lock", default="leases", show_default=True)
@click.option("--leader-elect-resource-namespace", default=c.NAMESPACE_SYSTEM, show_default=True)
@click.option("--leader-elect-resource-name", default=c.KUBE_SCHEDULER, show_default=True)
@click.option("--client-ca-file", default="")
@click.option("--requestheader-client-ca-file", default="")
@bool_flag("--profiling", True, "Accepted for compatibility.")
@click.option("--feature-gates", default="")
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
    )
    logging.basicConfig(
        level=logging.DEBUG if flags["verbosity"] >= 5 else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        force=True,
    )
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(_main(opts))
