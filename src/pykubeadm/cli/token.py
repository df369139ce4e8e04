"""`pykubeadm token`: bootstrap token commands — create, list, delete (through `--kubeconfig`) and generate (offline).

Mirrors kubeadm's cmd/token.go (kubeadm-facts §8.2, §7.1). The Secret itself is built by
`pykubeadm.phases.bootstraptoken.token_secret`, the join command by `pykubeadm.phases.joincommand`; this module wires
the flags, reads the tokens back from their Secrets (`token_from_secret`, kubeadm's BootstrapTokenFromSecret) and
prints them as kubeadm does: a tabwriter table (one writer per token, header with the first, exactly like kubeadm's
tokenTextPrinter) or `output.kubeadm.k8s.io/v1alpha3` BootstrapToken objects in JSON or YAML.

`--kubeconfig` defaults to /etc/kubernetes/admin.conf under `--root-dir`; when the flag is not given and $KUBECONFIG
is set, its first file is used (kubeadm's GetKubeConfigPath). A token's secret part is never printed in an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.bootstrap import secret as bts
from pykubeadm.bootstrap.token import (
    BOOTSTRAP_TOKEN_PATTERN,
    TOKEN_ID_PATTERN,
    generate_token,
    is_valid_token,
    is_valid_token_id,
    parse_token,
    secret_name,
)
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.options import GoDuration

__all__ = ["TokenInfo", "command", "format_token_table", "output_object", "token_from_secret"]

#: apiVersion/kind of `token list -o json|yaml` objects.
OUTPUT_API_VERSION = "output.kubeadm.k8s.io/v1alpha3"
#: Per-request timeout of the token commands' API calls.
API_TIMEOUT = 10.0
_RETRY_TIMEOUT = 10.0
_COLUMNS = ("TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS")


def _go_quote(s: str) -> str:
    """Go's %q for the ASCII strings used here (backslashes and quotes escaped)."""
    return json.dumps(s)


# --- reading tokens back --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenInfo:
    """A bootstrap token as kubeadm reads it from its Secret."""

    token: str
    description: str = ""
    expires: datetime | None = None
    usages: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.token.split(".", 1)[0]


def token_from_secret(secret: dict[str, Any]) -> TokenInfo:
    """kubeadm's BootstrapTokenFromSecret; ValueError with kubeadm's message (the token secret redacted)."""
    name = str((secret.get("metadata") or {}).get("name", ""))
    data = bts.decode_secret_data(secret) or {}

    def text(key: str) -> str:
        return data.get(key, b"").decode("utf-8", "replace")

    tid = text(bts.TOKEN_ID_KEY)
    if not tid:
        raise ValueError(f"bootstrap Token Secret has no token-id data: {name}")
    if name != secret_name(tid):
        raise ValueError(
            f"bootstrap token name is not of the form '{bts.BOOTSTRAP_TOKEN_SECRET_PREFIX}(token-id)'. "
            f"Actual: {_go_quote(name)}. Expected: {_go_quote(secret_name(tid))}"
        )
    tsecret = text(bts.TOKEN_SECRET_KEY)
    if not tsecret:
        raise ValueError(f"bootstrap Token Secret has no token-secret data: {name}")
    token = f"{tid}.{tsecret}"
    if not is_valid_token(token):
        raise ValueError(
            "bootstrap Token Secret is invalid and couldn't be parsed: the bootstrap token "
            f'"{tid}.<redacted>" was not of the form "{BOOTSTRAP_TOKEN_PATTERN}"'
        )
    expires = None
    raw_exp = text(bts.EXPIRATION_KEY)
    if raw_exp:
        expires = bts.parse_expiration(raw_exp)
        if expires is None:
            raise ValueError(
                f"can't parse expiration time of bootstrap token {_go_quote(name)}: parsing time "
                f'{_go_quote(raw_exp)} as "2006-01-02T15:04:05Z07:00": cannot parse {_go_quote(raw_exp)} as "2006"'
            )
    usages = sorted(
        k[len(bts.USAGE_PREFIX) :] for k, v in data.items() if k.startswith(bts.USAGE_PREFIX) and v == b"true"
    )
    groups = text(bts.AUTH_EXTRA_GROUPS_KEY)
    return TokenInfo(
        token=token,
        description=text(bts.DESCRIPTION_KEY),
        expires=expires,
        usages=tuple(usages),
        groups=tuple(groups.split(",")) if groups else (),
    )


# --- printing -------------------------------------------------------------------------------------------------------


def short_human_duration(d: timedelta) -> str:
    from pykubeadm.cli.certs import short_human_duration as shd

    return shd(d)


def _rfc3339(t: datetime) -> str:
    """Go's time.Format(time.RFC3339): seconds precision, `Z` for a zero offset."""
    off = t.utcoffset() or timedelta(0)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if off == timedelta(0):
        return base + "Z"
    sign = "+" if off > timedelta(0) else "-"
    minutes = abs(int(off.total_seconds())) // 60
    return f"{base}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _row(info: TokenInfo, now: datetime) -> str:
    ttl, expires = "<forever>", "<never>"
    if info.expires is not None:
        ttl = short_human_duration(info.expires - now)
        expires = _rfc3339(info.expires)
    usages = ",".join(info.usages) or "<none>"
    description = info.description or "<none>"
    groups = ",".join(info.groups) or "<none>"
    return f"{info.token}\t{ttl:<9}\t{expires}\t{usages:<22}\t{description:<56}\t{groups}\n"


def format_token_table(tokens: Sequence[TokenInfo], now: datetime | None = None) -> str:
    """`token list` text output: kubeadm flushes one tabwriter per token, the header going with the first."""
    from pykubeadm.util.tabwriter import TabWriter

    now = now or datetime.now(UTC)
    out = []
    for i, info in enumerate(tokens):
        tw = TabWriter(minwidth=10, tabwidth=4, padding=3)
        if i == 0:
            tw.write("\t".join(_COLUMNS) + "\n")
        tw.write(_row(info, now))
        out.append(tw.flush())
    return "".join(out)


def output_object(info: TokenInfo) -> dict[str, Any]:
    """The output.kubeadm.k8s.io/v1alpha3 BootstrapToken of a token (Go field order, empty fields omitted)."""
    obj: dict[str, Any] = {"kind": "BootstrapToken", "apiVersion": OUTPUT_API_VERSION, "token": info.token}
    if info.description:
        obj["description"] = info.description
    if info.expires is not None:
        obj["expires"] = _rfc3339(info.expires.astimezone(UTC))
    if info.usages:
        obj["usages"] = list(info.usages)
    if info.groups:
        obj["groups"] = list(info.groups)
    return obj


def _go_json(obj: Any) -> str:
    """json.MarshalIndent(obj, "", "    ") + newline, with Go's HTML escaping of <, > and &."""
    text = json.dumps(obj, indent=4, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def render_tokens(tokens: Sequence[TokenInfo], output: str, now: datetime | None = None) -> str:
    if output == "text":
        return format_token_table(tokens, now)
    if output == "json":
        return "".join(_go_json(output_object(t)) for t in tokens)
    if output == "yaml":
        from pykubeadm.api.yamlio import dump_yaml

        return "---\n".join(dump_yaml(output_object(t)) for t in tokens)
    raise KubeadmError(
        f'could not construct output printer: unable to match a printer suitable for the output format "{output}", '
        "allowed formats are: json,text,yaml"
    )


# --- cluster calls --------------------------------------------------------------------------------------------------


def _client(kubeconfig: Path) -> Any:
    from pykubeadm.client import sync_client

    return sync_client(kubeconfig, timeout=API_TIMEOUT)


def create_token(client: Any, bt: Any, out: Callable[[str], None], *, dry_run: bool = False) -> None:
    """Create the Secret of one token; `a token with id "<id>" already exists` if it does (kubeadm's CreateNewTokens)."""
    import httpx2
    from lightkube import ApiError, codecs
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.client import is_already_exists
    from pykubeadm.phases.apply import retry_api_call
    from pykubeadm.phases.bootstraptoken import token_secret

    tid = bt.token.split(".", 1)[0]
    name = secret_name(tid)
    exists_error = KubeadmError(f'a token with id "{tid}" already exists')
    try:
        client.get(Secret, name, namespace=c.NAMESPACE_SYSTEM)
    except (ApiError, httpx2.HTTPError):
        pass  # NotFound (or the GET failed): go on and create it, as kubeadm does
    else:
        raise exists_error
    secret = token_secret(
        bt.token,
        description=bt.description,
        ttl=bt.ttl,
        expires=bt.expires,
        usages=list(bt.usages),
        groups=list(bt.groups),
    )
    if dry_run:
        out(f"[dryrun] Would create Secret {name!r} in namespace {c.NAMESPACE_SYSTEM}")
        return

    def create() -> Any:
        try:
            return client.create(codecs.from_dict(secret))
        except ApiError as err:
            if is_already_exists(err):
                raise exists_error from err
            raise

    retry_api_call(create, f"create or update bootstrap token with name {name}", timeout=_RETRY_TIMEOUT)


def list_tokens(client: Any, err: Callable[[str], None]) -> list[TokenInfo]:
    """Every bootstrap token in kube-system (Secrets of the bootstrap type); unparseable ones go to `err`."""
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.phases.apply import retry_api_call

    def fetch() -> list[Any]:
        return list(client.list(Secret, namespace=c.NAMESPACE_SYSTEM, fields={"type": bts.BOOTSTRAP_TOKEN_SECRET_TYPE}))

    try:
        secrets = retry_api_call(fetch, "list bootstrap tokens", timeout=_RETRY_TIMEOUT)
    except KubeadmError as e:
        raise KubeadmError(f"failed to list bootstrap tokens: {e}") from e
    out = []
    for s in secrets:
        try:
            out.append(token_from_secret(s.to_dict()))
        except ValueError as e:
            err(str(e))
    return out


def delete_token(client: Any, tid: str, *, dry_run: bool = False) -> None:
    import httpx2
    from lightkube import ApiError
    from lightkube.resources.core_v1 import Secret

    name = secret_name(tid)
    if dry_run:
        return
    try:
        client.delete(Secret, name, namespace=c.NAMESPACE_SYSTEM)
    except ApiError as e:
        raise KubeadmError(f'failed to delete bootstrap token "{tid}": {e.status.message or e}') from e
    except httpx2.HTTPError as e:
        raise KubeadmError(f'failed to delete bootstrap token "{tid}": {e}') from e


def join_command_line(kubeconfig: Path, token: str, certificate_key: str = "") -> str:
    """The one-line `kubeadm join` command for `token`: endpoint and CA pins from the kubeconfig's current cluster."""
    from cryptography import x509

    from pykubeadm.kubeconfig.config import current_cluster, load_kubeconfig
    from pykubeadm.phases.joincommand import join_command, one_line
    from pykubeadm.pki.keys import public_key_pin

    try:
        cfg = load_kubeconfig(kubeconfig)
        _, cluster, ca_pem = current_cluster(cfg, str(kubeconfig))
        if not ca_pem:
            raise KubeadmError("no CA certificates found in kubeconfig")
        try:
            certs = x509.load_pem_x509_certificates(ca_pem)
        except ValueError as err:
            raise KubeadmError(f"failed to parse CA certificate from kubeconfig: {err}") from err
    except KubeadmError as err:
        raise KubeadmError(f"failed to get join command: {err}") from err
    pins = [public_key_pin(cert.public_key()) for cert in certs]
    endpoint = str(cluster.get("server", "")).replace("https://", "")
    return one_line(
        join_command(endpoint, token, pins, control_plane=bool(certificate_key), certificate_key=certificate_key)
    )


# --- CLI ------------------------------------------------------------------------------------------------------------

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
    from pykubeadm.cli.main import CliState

    ctx = click.get_current_context()
    group = ctx.parent.meta.get("token_flags", {}) if ctx.parent is not None else {}
    kubeconfig = kubeconfig or group.get("kubeconfig")
    dry = bool(dry_run if dry_run is not None else group.get("dry_run"))
    state = ctx.find_object(CliState)
    layout = Layout(state.root_dir if state is not None else Path("/"))
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
    client = _client(path)
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
    tokens = list_tokens(_client(path), lambda line: click.echo(line, err=True))
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
    patterns = f"{_go_quote(BOOTSTRAP_TOKEN_PATTERN)} or {_go_quote(TOKEN_ID_PATTERN)}"
    if not tokens:
        raise KubeadmError(f"missing argument; 'token delete' is missing token of form {patterns}")
    path, dry = _settings(kubeconfig, dry_run)
    client = _client(path)
    for value in tokens:
        if is_valid_token_id(value):
            tid = value
        elif is_valid_token(value):
            tid = parse_token(value).id
        else:
            raise KubeadmError(f"given token didn't match pattern {patterns}")
        if dry:
            click.echo(f"[dryrun] Would delete Secret {secret_name(tid)!r} in namespace {c.NAMESPACE_SYSTEM}")
        delete_token(client, tid, dry_run=dry)
        click.echo(f'bootstrap token "{tid}" deleted')
