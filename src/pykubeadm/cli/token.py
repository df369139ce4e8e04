"""`pykubeadm token`: bootstrap token commands — create, list, delete (through `--kubeconfig`) and generate (offline).

Mirrors kubeadm's cmd/token.go (kubeadm-facts §8.2, §7.1). This module wires the flags and builds the tokens to
create from them (or from `--config`); the work — creating, listing, deleting, formatting, the join command line —
is `pykubeadm.phases.token`'s.

`--kubeconfig` defaults to /etc/kubernetes/admin.conf under `--root-dir`; when the flag is not given and $KUBECONFIG
is set, its first file is used (kubeadm's GetKubeConfigPath). A token's secret part is never printed in an error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.bootstrap.token import generate_token, parse_token
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.options import GoDuration
from pykubeadm.phases.token import (
    TOKEN_FORMS,
    create_token,
    delete_token,
    join_command_line,
    list_tokens,
    render_tokens,
    token_client,
    token_id_of,
)

__all__ = ["command"]

_KUBECONFIG_HELP = (
    "The kubeconfig file to use when talking to the cluster. If the flag is not set, a set of standard locations can "
    "be searched for an existing kubeconfig file."
)


def _common(f: Any) -> Any:
    """kubeadm's persistent flags of `token`, accepted after the sub-command too."""
    f = click.option("--dry-run", "dry_run", is_flag=True, default=None, help="Whether to enable dry-run mode or not")(
        f
    )
    return click.option(
        "--kubeconfig",
        "kubeconfig",
        default=None,
        metavar="string",
        help=_KUBECONFIG_HELP + f' (default "{c.KUBERNETES_DIR}/{c.ADMIN_KUBECONFIG_FILE}")',
    )(f)


def _settings(kubeconfig: str | None, dry_run: bool | None) -> tuple[Path, bool]:
    """The effective kubeconfig path (host path) and dry-run, merging the group's and the sub-command's flags."""
    from pykubeadm.cli.main import current_state

    ctx = click.get_current_context()
    group = ctx.parent.meta.get("token_flags", {}) if ctx.parent is not None else {}
    kubeconfig = kubeconfig or group.get("kubeconfig")
    dry = bool(dry_run if dry_run is not None else group.get("dry_run"))
    layout = Layout(current_state().root_dir)
    if kubeconfig:
        return layout.host(kubeconfig), dry
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), "")
    return (Path(first) if first else layout.admin_kubeconfig), dry


@click.group(
    name="token",
    help="""This command manages bootstrap tokens. It is optional and needed only for advanced use cases.

In short, bootstrap tokens are used for establishing bidirectional trust between a client and a server.
A bootstrap token can be used when a client (for example a node that is about to join the cluster) needs
to trust the server it is talking to. Then a bootstrap token with the "signing" usage can be used.
bootstrap tokens can also function as a way to allow short-lived authentication to the API Server
(the token serves as a way for the API Server to trust the client), for example for doing the TLS Bootstrap.

What is a bootstrap token more exactly?
 - It is a Secret in the kube-system namespace of type "bootstrap.kubernetes.io/token".
 - A bootstrap token must be of the form "[a-z0-9]{6}.[a-z0-9]{16}". The former part is the public token ID,
   while the latter is the Token Secret and it must be kept private at all circumstances!
 - The name of the Secret must be named "bootstrap-token-(token-id)".""",
)
@_common
@click.pass_context
def command(ctx: click.Context, kubeconfig: str | None, dry_run: bool | None) -> None:
    """Manage bootstrap tokens"""
    ctx.meta["token_flags"] = {"kubeconfig": kubeconfig, "dry_run": dry_run}


@command.command(name="generate")
@_common
def generate(kubeconfig: str | None, dry_run: bool | None) -> None:
    """Generate and print a bootstrap token, but do not create it on the server

    This command will print out a randomly-generated bootstrap token that can be used with
    the "init" and "join" commands.

    You don't have to use this command in order to generate a token. You can do so
    yourself as long as it is in the format "[a-z0-9]{6}.[a-z0-9]{16}". This
    command is provided for convenience to generate tokens in the given format.

    You can also use "kubeadm init" without specifying a token and it will
    generate and print one for you.
    """
    click.echo(generate_token())


def _tokens_to_create(
    config: str | None,
    token: str | None,
    ttl: timedelta,
    usages: Sequence[str],
    groups: Sequence[str],
    description: str,
) -> list[Any]:
    """The BootstrapTokens to create: from --config (all of them), else one from the flags; validated."""
    from pykubeadm.api import BootstrapToken
    from pykubeadm.api.loader import load_init_config
    from pykubeadm.api.validation import raise_if, validate_bootstrap_tokens

    if config:
        tokens = list(load_init_config(Path(config), {}, dynamic=False).init.bootstrap_tokens)
    else:
        if token:
            try:
                parse_token(token)
            except ValueError as err:
                raise KubeadmError(str(err)) from err
        tokens = [
            BootstrapToken(
                token=token or None,
                ttl=ttl,
                usages=[u for v in usages for u in v.split(",") if u],
                groups=[g for v in groups for g in v.split(",") if g],
                description=description,
            )
        ]
    for bt in tokens:
        bt.token = bt.token or generate_token()
    raise_if(validate_bootstrap_tokens(tokens))
    return tokens


@command.command(name="create", no_args_is_help=False)
@click.argument("token", required=False)
@click.option("--config", default=None, metavar="string", help="Path to a kubeadm configuration file.")
@click.option(
    "--print-join-command",
    is_flag=True,
    help="Instead of printing only the token, print the full 'kubeadm join' flag needed to join the cluster using the "
    "token.",
)
@click.option(
    "--certificate-key",
    default="",
    metavar="string",
    help="When used together with '--print-join-command', print the full 'kubeadm join' flag needed to join the "
    "cluster as a control-plane. To create a new certificate key you must use 'kubeadm init phase upload-certs "
    "--upload-certs'.",
)
@click.option(
    "--ttl",
    type=GoDuration(),
    default="24h0m0s",
    show_default=True,
    help="The duration before the token is automatically deleted (e.g. 1s, 2m, 3h). If set to '0', the token will "
    "never expire",
)
@click.option(
    "--usages",
    multiple=True,
    metavar="strings",
    help="Describes the ways in which this token can be used. You can pass --usages multiple times or provide a comma "
    "separated list of options. Valid options: [signing,authentication] (default [signing,authentication])",
)
@click.option(
    "--groups",
    multiple=True,
    metavar="strings",
    help="Extra groups that this token will authenticate as when used for authentication. Must match "
    f'"\\\\Asystem:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9]\\\\z" (default [{c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP}])',
)
@click.option(
    "--description", default="", metavar="string", help="A human friendly description of how this token is used."
)
@_common
@click.pass_context
def create(
    ctx: click.Context,
    token: str | None,
    config: str | None,
    print_join_command: bool,
    certificate_key: str,
    ttl: timedelta,
    usages: tuple[str, ...],
    groups: tuple[str, ...],
    description: str,
    kubeconfig: str | None,
    dry_run: bool | None,
) -> None:
    """Create bootstrap tokens on the server

    This command will create a bootstrap token for you.
    You can specify the usages for this token, the "time to live" and an optional human friendly description.

    The [token] is the actual token to write.
    This should be a securely generated random token of the form "[a-z0-9]{6}.[a-z0-9]{16}".
    If no [token] is given, kubeadm will generate a random token instead.
    """
    from pykubeadm.api.flags import check_mixed_arguments

    set_flags = [
        name.replace("_", "-")
        for name in ctx.params
        if name != "token" and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    if config:
        check_mixed_arguments(set_flags)
    if certificate_key and not print_join_command:
        raise KubeadmError("cannot use --certificate-key without --print-join-command")
    path, dry = _settings(kubeconfig, dry_run)
    tokens = _tokens_to_create(config, token, ttl, usages, groups, description)
    client = token_client(path)
    for bt in tokens:
        create_token(client, bt, click.echo, dry_run=dry)
    if print_join_command:
        click.echo(join_command_line(path, tokens[0].token, certificate_key))
    else:
        click.echo(tokens[0].token)


@command.command(name="list")
@click.option("-o", "--output", default="text", show_default=True, help="Output format. One of: text|json|yaml.")
@_common
def list_command(output: str, kubeconfig: str | None, dry_run: bool | None) -> None:
    """List bootstrap tokens on the server

    This command will list all bootstrap tokens for you.
    """
    if output not in ("text", "json", "yaml"):
        render_tokens([], output)
    path, _ = _settings(kubeconfig, dry_run)
    tokens = list_tokens(token_client(path), lambda line: click.echo(line, err=True))
    click.echo(render_tokens(tokens, output), nl=False)


@command.command(name="delete")
@click.argument("tokens", nargs=-1)
@_common
def delete(tokens: tuple[str, ...], kubeconfig: str | None, dry_run: bool | None) -> None:
    """Delete bootstrap tokens on the server

    This command will delete a list of bootstrap tokens for you.

    The [token-value] is the full Token of the form "[a-z0-9]{6}.[a-z0-9]{16}" or the
    Token ID of the form "[a-z0-9]{6}" to delete.
    """
    if not tokens:
        raise KubeadmError(f"missing argument; 'token delete' is missing token of form {TOKEN_FORMS}")
    path, dry = _settings(kubeconfig, dry_run)
    client = token_client(path)
    for value in tokens:
        tid = token_id_of(value)
        delete_token(client, tid, click.echo, dry_run=dry)
        click.echo(f'bootstrap token "{tid}" deleted')
