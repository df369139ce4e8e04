"""`pykubeadm component coredns -conf /etc/coredns/Corefile`: the built-in DNS server the CoreDNS image runs as.

Accepts CoreDNS's flags (Go style, one dash; `--flag` and `-flag=value` too): `-conf` (default `Corefile` in the
working directory), `-dns.port` (53; the port of server keys that name none), `-pidfile`, `-quiet`, `-version`,
`-plugins`. Logs go to stdout as CoreDNS writes them (`[INFO] plugin/reload: …`, `.:53`, `CoreDNS-1.12.0`), so
`kubectl logs` shows them. A Corefile that fails to load exits 1 with CoreDNS's message.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from pykubeadm import constants as c
from pykubeadm.dns.corefile import CorefileError
from pykubeadm.dns.plugin import PluginError
from pykubeadm.dns.setup import ORDER
from pykubeadm.util import aio

__all__ = ["command", "configure_logging", "coredns_version"]

#: The image tag the kubelet passes (`v1.12.0`); the version we report as CoreDNS's.
VERSION_ENV = "PYKUBEADM_COMPONENT_VERSION"


def coredns_version(env: dict[str, str] | None = None) -> str:
    tag = (env if env is not None else os.environ).get(VERSION_ENV) or c.COREDNS_VERSION
    return tag.removeprefix("v")


class _Formatter(logging.Formatter):
    """`[INFO] plugin/reload: msg` for plugins, `[INFO] msg` otherwise, bare lines for the start-up banner."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.name == "coredns.banner":
            return message
        level = "FATAL" if record.levelno >= logging.CRITICAL else record.levelname
        prefix = f"{record.name}: " if record.name.startswith("plugin/") else ""
        text = f"[{level}] {prefix}{message}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure_logging(quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_Formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    if quiet:
        logging.getLogger("coredns.banner").setLevel(logging.WARNING)
    for noisy in ("httpx", "httpcore", "aiohttp.access", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _plugins_text() -> str:
    names = "\n".join(f"  dns.{n}" for n in sorted(ORDER))
    return f"Server types:\n  dns\n\nCaddyfile loaders:\n  flag\n  default\n\nOther plugins:\n{names}\n"


class _GoFlags(click.Command):
    """Go's flag package errors: an undefined flag is `flag provided but not defined: -xyz` (not click's `-x`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = {name for param in self.get_params(ctx) for name in (*param.opts, *param.secondary_opts)}
        for arg in args:
            if arg == "--":
                break
            if arg.startswith("-") and len(arg) > 1 and arg.split("=", 1)[0] not in known:
                raise click.UsageError(f"flag provided but not defined: {arg.split('=', 1)[0]}", ctx)
        return super().parse_args(ctx, args)


@click.command("coredns", cls=_GoFlags, context_settings={"help_option_names": ["-h", "-help", "--help"]})
@click.option("-conf", "--conf", "conf", default="Corefile", show_default=True, help="Corefile to load.")
@click.option(
    "-dns.port",
    "--dns.port",
    "dns_port",
    type=click.IntRange(0, 65535),
    default=53,
    show_default=True,
    help="Default port for server keys that name none.",
)
@click.option("-pidfile", "--pidfile", "pidfile", default="", help="Path to write pid file.")
@click.option("-quiet", "--quiet", "quiet", is_flag=True, help="Quiet mode (no initialization output).")
@click.option("-version", "--version", "show_version", is_flag=True, help="Show version.")
@click.option("-plugins", "--plugins", "show_plugins", is_flag=True, help="List installed plugins.")
def command(conf: str, dns_port: int, pidfile: str, quiet: bool, show_version: bool, show_plugins: bool) -> None:
    """The built-in CoreDNS: serve the Corefile's zones (kubernetes, forward, cache …)."""
    from pykubeadm.dns.server import DnsServer, version_lines

    version = coredns_version()
    if show_version:
        click.echo("\n".join(version_lines(version)))
        return
    if show_plugins:
        click.echo(_plugins_text(), nl=False)
        return
    try:
        text = Path(conf).read_text(encoding="utf-8")
    except OSError as err:
        click.echo(f"Error: Corefile: {err.strerror}: {conf}", err=True)
        sys.exit(1)
    configure_logging(quiet)
    if pidfile:
        Path(pidfile).write_text(f"{os.getpid()}\n")
    server = DnsServer(conf, dns_port=dns_port, env=dict(os.environ), version=version)
    try:
        code = aio.run(server.run(text))
    except (CorefileError, PluginError) as err:
        logging.getLogger("coredns.fatal").critical("%s", err)
        sys.exit(1)
    except OSError as err:
        logging.getLogger("coredns.fatal").critical("listen: %s", err)
        sys.exit(1)
    finally:
        if pidfile:
            Path(pidfile).unlink(missing_ok=True)
    sys.exit(code)
