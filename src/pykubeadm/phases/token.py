"""Bootstrap tokens on a running cluster, for `pykubeadm token`: create, list and delete them through a client, read
them back from their Secrets and print them as kubeadm does (kubeadm's cmd/token.go; kubeadm-facts §8.2, §7.1).

`token_from_secret` is kubeadm's BootstrapTokenFromSecret; the Secret itself is built by
`pykubeadm.phases.bootstraptoken.token_secret` and the join command by `pykubeadm.phases.joincommand`. `token list`
prints a tabwriter table (one writer per token, header with the first, exactly like kubeadm's tokenTextPrinter) or
`output.kubeadm.k8s.io/v1alpha3` BootstrapToken objects in JSON or YAML. Nothing here parses flags or prints: output
goes through the `out` / `err` callables. A token's secret part is never printed in an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubeadm import constants as c
from pykubeadm.bootstrap import secret as bts
from pykubeadm.bootstrap.token import (
    BOOTSTRAP_TOKEN_PATTERN,
    TOKEN_ID_PATTERN,
    is_valid_token,
    is_valid_token_id,
    parse_token,
    secret_name,
)
from pykubeadm.errors import KubeadmError
from pykubeadm.util.humanize import short_human_duration

if TYPE_CHECKING:
    from pykubeadm.api.v1beta4 import BootstrapToken

__all__ = [
    "API_TIMEOUT",
    "OUTPUT_API_VERSION",
    "TOKEN_FORMS",
    "TokenInfo",
    "create_token",
    "delete_token",
    "format_token_table",
    "join_command_line",
    "list_tokens",
    "output_object",
    "render_tokens",
    "token_client",
    "token_from_secret",
    "token_id_of",
]

#: apiVersion/kind of `token list -o json|yaml` objects.
OUTPUT_API_VERSION = "output.kubeadm.k8s.io/v1alpha3"
#: Per-request timeout of the token commands' API calls.
API_TIMEOUT = 10.0
_RETRY_TIMEOUT = 10.0
_COLUMNS = ("TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS")


def _go_quote(s: str) -> str:
    """Go's %q for the ASCII strings used here (backslashes and quotes escaped)."""
    return json.dumps(s)


#: The two forms `token delete` accepts, as kubeadm names them in its errors.
TOKEN_FORMS = f"{_go_quote(BOOTSTRAP_TOKEN_PATTERN)} or {_go_quote(TOKEN_ID_PATTERN)}"


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
    decoded = bts.BootstrapTokenSecret.from_secret({**secret, "type": bts.BOOTSTRAP_TOKEN_SECRET_TYPE})
    tid = (decoded.token_id if decoded else None) or ""
    if not tid:
        raise ValueError(f"bootstrap Token Secret has no token-id data: {name}")
    if name != secret_name(tid):
        raise ValueError(
            f"bootstrap token name is not of the form '{bts.BOOTSTRAP_TOKEN_SECRET_PREFIX}(token-id)'. "
            f"Actual: {_go_quote(name)}. Expected: {_go_quote(secret_name(tid))}"
        )
    assert decoded is not None
    tsecret = (decoded.token_secret or b"").decode("utf-8", "replace")
    if not tsecret:
        raise ValueError(f"bootstrap Token Secret has no token-secret data: {name}")
    token = f"{tid}.{tsecret}"
    if not is_valid_token(token):
        raise ValueError(
            "bootstrap Token Secret is invalid and couldn't be parsed: the bootstrap token "
            f'"{tid}.<redacted>" was not of the form "{BOOTSTRAP_TOKEN_PATTERN}"'
        )
    expires = None
    if decoded.expiration:
        expires = bts.parse_expiration(decoded.expiration)
        if expires is None:
            raw = _go_quote(decoded.expiration)
            raise ValueError(
                f"can't parse expiration time of bootstrap token {_go_quote(name)}: parsing time "
                f'{raw} as "2006-01-02T15:04:05Z07:00": cannot parse {raw} as "2006"'
            )
    return TokenInfo(
        token=token,
        description=decoded.description or "",
        expires=expires,
        usages=tuple(sorted(decoded.usages)),
        groups=decoded.extra_groups,
    )


# --- printing -------------------------------------------------------------------------------------------------------


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


def token_client(kubeconfig: Path) -> Any:
    """The blocking client the token commands use (API_TIMEOUT per request)."""
    from pykubeadm.client import sync_client

    return sync_client(kubeconfig, timeout=API_TIMEOUT)


def create_token(client: Any, bt: BootstrapToken, out: Callable[[str], None], *, dry_run: bool = False) -> None:
    """Create the Secret of one token; `a token with id "<id>" already exists` if it does (kubeadm's CreateNewTokens)."""
    import httpx2
    from lightkube import ApiError, codecs
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.client import is_already_exists
    from pykubeadm.phases.apply import retry_api_call
    from pykubeadm.phases.bootstraptoken import bootstrap_token_secret

    if not bt.token:
        raise KubeadmError("the bootstrap token to create has no token value (<id>.<secret>)")
    tid = bt.token.split(".", 1)[0]
    name = secret_name(tid)
    exists_error = KubeadmError(f'a token with id "{tid}" already exists')
    try:
        client.get(Secret, name, namespace=c.NAMESPACE_SYSTEM)
    except (ApiError, httpx2.HTTPError):
        pass  # NotFound (or the GET failed): go on and create it, as kubeadm does
    else:
        raise exists_error
    secret = bootstrap_token_secret(bt)
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


def token_id_of(value: str) -> str:
    """The token ID a `token delete` argument names: a token ID or a full token; KubeadmError for anything else."""
    if is_valid_token_id(value):
        return value
    if is_valid_token(value):
        return parse_token(value).id
    raise KubeadmError(f"given token didn't match pattern {TOKEN_FORMS}")


def delete_token(client: Any, tid: str, out: Callable[[str], None], *, dry_run: bool = False) -> None:
    """Delete the Secret of one token (kubeadm's RunDeleteTokens, for one ID)."""
    import httpx2
    from lightkube import ApiError
    from lightkube.resources.core_v1 import Secret

    name = secret_name(tid)
    if dry_run:
        out(f"[dryrun] Would delete Secret {name!r} in namespace {c.NAMESPACE_SYSTEM}")
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
