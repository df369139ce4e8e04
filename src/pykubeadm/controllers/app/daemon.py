"""The process shell kube-controller-manager and kube-scheduler share (controllers/app/cli.py, scheduler/cli.py).

Logging setup, SIGTERM/SIGINT handling, the leader-election flags with the elector they build, the `leaderElection`
health check (client-go's healthz adaptor: unhealthy once the leader has not renewed for lease duration + 20 s), and
the serve → elect → lead sequence: exit code 0 when the work ends by itself, 1 when leadership is lost.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pykubeadm import constants as c
from pykubeadm.controllers.app.flags import GoDuration, bool_flag
from pykubeadm.util import gctuning

if TYPE_CHECKING:  # kube-proxy and CoreDNS use this shell's logging and signals only: not the HTTPS health server's
    # imports (cryptography, delegated authentication), nor the leader election's
    from pykubeadm.controllers.app.serving import HealthCheck, HealthServer
    from pykubeadm.util.leaderelection import LeaderElector

__all__ = [
    "configure_logging",
    "leader_election_flags",
    "leader_health_check",
    "new_elector",
    "run_until_signalled",
    "serve_and_lead",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Libraries whose per-request INFO lines would drown the components' own log.
_NOISY_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "aiohttp.access")
#: How long past the lease duration a leader may go without renewing before `leaderElection` fails.
_LEADER_HEALTH_TIMEOUT = 20


def configure_logging(verbosity: int) -> None:
    """klog-like lines on stderr: DEBUG at -v 5 and above, else INFO; HTTP client chatter only from WARNING."""
    logging.basicConfig(
        level=logging.DEBUG if verbosity >= 5 else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        force=True,
    )
    for noisy in _NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)


def leader_election_flags(lock_name: str, leader_elect_help: str) -> Callable[[F], F]:
    """--leader-elect and its tuning flags, with the components' defaults (Lease kube-system/<lock_name>)."""
    options = (
        bool_flag("--leader-elect", True, leader_elect_help),
        click.option("--leader-elect-lease-duration", type=GoDuration(), default="15s", show_default=True),
        click.option("--leader-elect-renew-deadline", type=GoDuration(), default="10s", show_default=True),
        click.option("--leader-elect-retry-period", type=GoDuration(), default="2s", show_default=True),
        click.option("--leader-elect-resource-lock", default="leases", show_default=True),
        click.option("--leader-elect-resource-namespace", default=c.NAMESPACE_SYSTEM, show_default=True),
        click.option("--leader-elect-resource-name", default=lock_name, show_default=True),
    )

    def decorate(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def new_elector(
    client: Any,
    namespace: str,
    name: str,
    *,
    lease_duration: timedelta,
    renew_deadline: timedelta,
    retry_period: timedelta,
    log: logging.Logger,
) -> LeaderElector:
    """An elector on the Lease `namespace/name` with a fresh identity; new leaders are logged."""
    from pykubeadm.util.leaderelection import LeaderElector, LeaseLock, new_identity

    return LeaderElector(
        LeaseLock(client, namespace, name, new_identity()),
        lease_duration=lease_duration.total_seconds(),
        renew_deadline=renew_deadline.total_seconds(),
        retry_period=retry_period.total_seconds(),
        on_new_leader=lambda who: log.info("new leader elected: %s", who),
    )


def leader_health_check(elector: LeaderElector | None) -> HealthCheck:
    """The `leaderElection` check: healthy unless this process leads and has not renewed in time."""

    def check() -> str | None:
        if elector is None or not elector.is_leader():
            return None
        if time.monotonic() - elector.observed_time > elector.lease_duration + _LEADER_HEALTH_TIMEOUT:
            return "failed election to renew leadership on lease"
        return None

    return check


async def serve_and_lead(
    server: HealthServer,
    elector: LeaderElector | None,
    lead: Callable[[], Awaitable[Any]],
    log: logging.Logger,
) -> int:
    """Start the health server, run `lead` (behind `elector` when there is one), stop the server; the exit code."""
    await server.start()
    log.info("serving securely on %s:%d", server.bind_address, server.port)
    try:
        if elector is None:
            await lead()
            return 0
        await elector.run(lead)
        log.error("leaderelection lost")
        return 1
    finally:
        await server.stop()


def run_until_signalled(main: Callable[[], Awaitable[int]], log: logging.Logger | None = None) -> int:
    """Run `main()` in a fresh event loop; SIGTERM/SIGINT cancel it and the exit code is then 0."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None  # guarded() runs as the loop's main task
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        try:
            return await main()
        except asyncio.CancelledError:
            if log is not None:
                log.info("shutting down")
            return 0

    gctuning.for_service()
    return asyncio.run(guarded())
