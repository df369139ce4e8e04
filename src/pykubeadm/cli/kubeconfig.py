"""`pykubeadm kubeconfig user`: print a kubeconfig for an additional user (client cert signed by ca.key, or a token).

Wires flags to the config loader and kubeconfig.create.user_kubeconfig; writes only to stdout.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from pykubeadm import constants as c
from pykubeadm.api import load_init_config
from pykubeadm.cli.main import current_state
from pykubeadm.kubeconfig.create import user_kubeconfig
from pykubeadm.layout import Layout
from pykubeadm.options import GoDuration, option
from pykubeadm.phases.init.kubeconfig import kubeconfig_params

__all__ = ["command"]


@click.group(name="kubeconfig", help="Kubeconfig file utilities.")
def command() -> None:
    """Kubeconfig file utilities"""


@command.command(
    name="user",
    help="Output a kubeconfig file for an additional user.",
    short_help="Output a kubeconfig file for an additional user",
    epilog="Examples:\n  # Output a kubeconfig file for an additional user named foo\n"
    "  kubeadm kubeconfig user --client-name=foo\n\n"
    "  # Output a kubeconfig file for an additional user named foo using a kubeadm config file bar\n"
    "  kubeadm kubeconfig user --client-name=foo --config=bar",
)
@click.option(
    "--client-name", default="", help="The name of user. It will be used as the CN if client certificates are created"
)
@option("config")
@click.option(
    "--org",
    multiple=True,
    metavar="strings",
    help="The organizations of the client certificate. It will be used as the O if client certificates are created",
)
@click.option(
    "--token",
    default="",
    help="The token that should be used as the authentication mechanism for this kubeconfig, instead of client certificates",
)
@click.option(
    "--validity-period",
    type=GoDuration(),
    default=c.CERTIFICATE_VALIDITY_PERIOD,
    show_default="8760h0m0s",
    help="The validity period of the client certificate. It is an offset from the current time.",
)
def user(client_name: str, config: str | None, org: tuple[str, ...], token: str, validity_period: timedelta) -> None:
    if not client_name:
        raise click.UsageError('required flag(s) "client-name" not set')
    if config:
        cfg = load_init_config(Path(config), {})
    else:
        cfg = load_init_config(None, {"kubernetes-version": c.KUBERNETES_VERSION})
    orgs = [o.strip() for value in org for o in value.split(",") if o.strip()]
    pki_dir = Layout(current_state().root_dir, cfg.cluster.certificates_dir).pki_dir
    text = user_kubeconfig(
        client_name,
        orgs,
        kubeconfig_params(cfg.init, cfg.cluster),
        pki_dir,
        token=token,
        validity_period=validity_period,
    )
    click.echo(text)
