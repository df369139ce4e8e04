"""`pykubeadm certs`: certificate-key, check-expiration, renew all|<name>, generate-csr (file-based, no cluster needed).

Wires flags to the config loader and to pki.renewal / pki.csr / kubeconfig.csr; printing happens here.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import yaml

from pykubeadm import constants as c
from pykubeadm.api import load_init_config
from pykubeadm.api.loader import InitConfig
from pykubeadm.cli.main import current_state
from pykubeadm.kubeconfig.csr import create_kubeconfigs_and_csrs
from pykubeadm.layout import Layout
from pykubeadm.options import option
from pykubeadm.phases.clusterconfig import announce_config_read
from pykubeadm.phases.init.certs import encryption_algorithm, pki_params
from pykubeadm.phases.init.kubeconfig import kubeconfig_params
from pykubeadm.pki.autorenewal import next_renewal, renewal_window_from_flags
from pykubeadm.pki.csr import create_default_keys_and_csrs
from pykubeadm.pki.renewal import ExpirationInfo, expiration_report, renew_handlers, renew_using_local_ca
from pykubeadm.util.humanize import short_human_duration
from pykubeadm.util.tabwriter import TabWriter

__all__ = ["command"]

_RENEW_LONG = (
    "Renew the {long}.\n\n"
    "Renewals run unconditionally, regardless of certificate expiration date; extra attributes such as SANs will be "
    "based on the existing file/certificates, there is no need to resupply them.\n\n"
    "Renewal by default tries to use the certificate authority in the local PKI managed by kubeadm; as alternative it "
    "is possible to use K8s certificate API for certificate renewal, or as a last option, to generate a CSR request.\n\n"
    "After renewal, in order to make changes effective, is required to restart control-plane components and "
    "eventually re-distribute the renewed certificate in case the file is used elsewhere."
)
_DONE = (
    "Done renewing certificates. You must restart the kube-apiserver, kube-controller-manager, kube-scheduler and "
    "etcd, so that they can use the new certificates."
)


@click.group(name="certs", help="Commands related to handling Kubernetes certificates")
def command() -> None:
    """Commands related to handling Kubernetes certificates"""


def _fetch_cluster_configuration(kubeconfig: Path) -> str | None:
    """The ClusterConfiguration YAML of kube-system/kubeadm-config, or None when the cluster cannot be read."""
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.client import sync_client

    try:
        client = sync_client(kubeconfig, timeout=3.0)
        cm = client.get(ConfigMap, c.KUBEADM_CONFIG_CONFIGMAP, namespace=c.NAMESPACE_SYSTEM)
    except Exception:  # kubeadm falls back to the defaults on any error
        return None
    text = (cm.data or {}).get(c.CLUSTER_CONFIGURATION_CONFIGMAP_KEY)
    return text if isinstance(text, str) and text.strip() else None


def _load(
    config: str | None,
    cert_dir: str | None,
    cert_dir_set: bool,
    kubeconfig: str | None = None,
    prefix: str = "",
    say: Callable[[str], None] | None = None,
) -> InitConfig:
    """kubeadm's getInternalCfg for the certs commands: --config if given; else the ClusterConfiguration of the
    cluster the --kubeconfig file points at (when that file exists); else the defaults. --cert-dir wins over the
    cluster's certificatesDir (as in kubeadm) and, when given explicitly, over the config file's."""
    say = say or (lambda _line: None)
    if not config and kubeconfig:
        path = Layout(current_state().root_dir).host(kubeconfig)
        if path.exists():
            announce_config_read(say, f"[{prefix}]")
            text = _fetch_cluster_configuration(path)
            if text is not None:
                say("")
                with tempfile.TemporaryDirectory(prefix="pykubeadm-certs") as tmp:
                    doc = Path(tmp) / "cluster.yaml"
                    doc.write_text(text)
                    cfg = load_init_config(doc, {})
                cfg.cluster.certificates_dir = cert_dir or c.DEFAULT_CERTIFICATES_DIR
                return cfg
            say(f"[{prefix}] Error reading configuration from the Cluster. Falling back to default configuration")
            say("")
    if config:
        cfg = load_init_config(Path(config), {})
    else:
        cfg = load_init_config(None, {"kubernetes-version": c.KUBERNETES_VERSION})
    if cert_dir and (cert_dir_set or not config):
        cfg.cluster.certificates_dir = cert_dir
    return cfg


def _was_set(name: str) -> bool:
    src = click.get_current_context().get_parameter_source(name)
    return src in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


def _layout(cfg: InitConfig) -> Layout:
    return Layout(current_state().root_dir, cfg.cluster.certificates_dir)


# --- certificate-key -------------------------------------------------------------------------------------------------


@command.command(
    name="certificate-key",
    help="This command will print out a secure randomly-generated certificate key that can be used with\n"
    'the "init" command.\n\nYou can also use "kubeadm init --upload-certs" without specifying a certificate key and '
    "it will\ngenerate and print one for you.",
    short_help="Generate certificate keys",
)
def certificate_key() -> None:
    click.echo(secrets.token_hex(c.CERTIFICATE_KEY_SIZE))


# --- check-expiration ------------------------------------------------------------------------------------------------


def _yes_no(b: bool) -> str:
    return "yes" if b else "no"


def _expires(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%b %d, %Y %H:%M UTC")


def _text_report(certs: list[ExpirationInfo], cas: list[ExpirationInfo], now: datetime) -> str:
    tw = TabWriter(minwidth=10, tabwidth=4, padding=3)
    tw.write("CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tCERTIFICATE AUTHORITY\tEXTERNALLY MANAGED\n")
    for e in certs:
        if e.missing or e.expiration is None:
            tw.write(f"!MISSING! {e.name}\t\t\t\t\n")
            continue
        residual = short_human_duration(e.residual(now))
        tw.write(f"{e.name}\t{_expires(e.expiration)}\t{residual}\t{e.ca_name}\t{_yes_no(e.externally_managed):<8}\n")
    tw.write("\n")
    tw.write("CERTIFICATE AUTHORITY\tEXPIRES\tRESIDUAL TIME\tEXTERNALLY MANAGED\n")
    for e in cas:
        if e.missing or e.expiration is None:
            tw.write(f"!MISSING! {e.name}\t\t\t\n")
            continue
        residual = short_human_duration(e.residual(now))
        tw.write(f"{e.name}\t{_expires(e.expiration)}\t{residual}\t{_yes_no(e.externally_managed):<8}\n")
    return tw.flush()


def _structured(certs: list[ExpirationInfo], cas: list[ExpirationInfo], now: datetime) -> dict[str, Any]:
    def row(e: ExpirationInfo, with_ca: bool) -> dict[str, Any]:
        r: dict[str, Any] = {"name": e.name}
        r["expirationDate"] = e.expiration.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if e.expiration else None
        r["residualTimeSeconds"] = int(e.residual(now).total_seconds())
        if with_ca and e.ca_name:
            r["caName"] = e.ca_name
        r["externallyManaged"] = e.externally_managed
        if e.missing:
            r["missing"] = True
        return r

    return {
        "kind": "CertificateExpirationInfo",
        "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
        "certificates": [row(e, True) for e in certs],
        "certificateAuthorities": [row(e, False) for e in cas],
    }


def _auto_renewal_line(layout: Layout, certs: list[ExpirationInfo], now: datetime) -> str:
    """Not in kubeadm: when the kubelet renews these certificates (--control-plane-cert-renewal-window in
    kubeadm-flags.env), when that next happens and for which; nothing when automatic renewal is off."""
    try:
        window = renewal_window_from_flags(layout.kubelet_env_file.read_text())
    except (OSError, ValueError):
        window = None
    if window is None:
        return ""
    upcoming = next_renewal(certs, window)
    head = f"\nAutomatic renewal by the kubelet: {short_human_duration(window)} before expiry"
    if upcoming is None:
        return head + "; nothing it can renew (external CA or missing certificates)\n"
    when, names = upcoming
    due = "now" if when <= now else f"{_expires(when)} (in {short_human_duration(when - now)})"
    return f"{head}; next renewal due {due}: {', '.join(names)}\n"


@command.command(
    name="check-expiration",
    help="Checks expiration for the certificates in the local PKI managed by kubeadm.",
    short_help="Check certificates expiration for a Kubernetes cluster",
)
@option("cert-dir")
@option("config")
@option("kubeconfig")
@click.option("-o", "--output", default="text", show_default=True, help="Output format. One of: text|json|yaml.")
def check_expiration(cert_dir: str, config: str | None, kubeconfig: str, output: str) -> None:
    say = click.echo if output == "text" else None
    cfg = _load(config, cert_dir, _was_set("cert_dir"), kubeconfig, "check-expiration", say)
    layout = _layout(cfg)
    now = datetime.now(UTC)
    certs, cas = expiration_report(layout.pki_dir, layout.kubernetes_dir, cfg.cluster.etcd.external is not None)
    if output == "text":
        click.echo(_text_report(certs, cas, now), nl=False)
        click.echo(_auto_renewal_line(layout, certs, now), nl=False)
    elif output == "json":
        click.echo(json.dumps(_structured(certs, cas, now), indent=4))
    elif output == "yaml":
        click.echo(yaml.safe_dump(_structured(certs, cas, now), sort_keys=False), nl=False)
    else:
        raise click.BadParameter(
            f'unable to match a printer suitable for the output format "{output}"', param_hint="--output"
        )


# --- renew -----------------------------------------------------------------------------------------------------------


@command.group(
    name="renew",
    help="This command is not meant to be run on its own. See list of available subcommands.",
    short_help="Renew certificates for a Kubernetes cluster",
)
def renew() -> None:
    pass


def _renew(
    names: list[str] | None, cert_dir: str, config: str | None, cert_dir_set: bool, kubeconfig: str | None
) -> None:
    cfg = _load(config, cert_dir, cert_dir_set, kubeconfig, "renew", click.echo)
    layout = _layout(cfg)
    handlers = renew_handlers(layout.pki_dir, layout.kubernetes_dir, cfg.cluster.etcd.external is not None)
    algorithm = encryption_algorithm(cfg.cluster)
    validity = cfg.cluster.certificate_validity_period or c.CERTIFICATE_VALIDITY_PERIOD
    start = datetime.now(UTC)
    for h in handlers:
        if names is not None and h.name not in names:
            continue
        if not h.readwriter.exists():
            click.echo(f"MISSING! {h.long_name}")
            continue
        if renew_using_local_ca(h, layout.pki_dir, algorithm, validity, start):
            click.echo(f"{h.long_name} renewed")
        else:
            click.echo(f"Detected external {h.ca_base_name}, {h.long_name} can't be renewed")
    if names is None:  # only `renew all` prints the closing advice
        click.echo()
        click.echo(_DONE)


def _renew_command(name: str, short: str, long: str, names: list[str] | None) -> click.Command:
    @click.command(name=name, help=long, short_help=short)
    @option("cert-dir")
    @option("config")
    @option("kubeconfig")
    def cmd(cert_dir: str, config: str | None, kubeconfig: str) -> None:
        _renew(names, cert_dir, config, _was_set("cert_dir"), kubeconfig)

    return cmd


renew.add_command(
    _renew_command(
        "all",
        "Renew all available certificates",
        "Renew all known certificates necessary to run the control plane. Renewals are run unconditionally, regardless "
        "of expiration date. Renewals can also be run individually for more control.",
        None,
    )
)
for _h in renew_handlers(Path("/"), Path("/")):
    renew.add_command(
        _renew_command(_h.name, f"Renew the {_h.long_name}", _RENEW_LONG.format(long=_h.long_name), [_h.name])
    )


# --- generate-csr ----------------------------------------------------------------------------------------------------

_CSR_LONG = (
    "Generates keys and certificate signing requests (CSRs) for all the certificates required to run the control "
    'plane. This command also generates partial kubeconfig files with private key data in the  "users > user > '
    'client-key-data" field, and for each kubeconfig file an accompanying ".csr" file is created.\n\n'
    "This command is designed for use in [Kubeadm External CA Mode](https://kubernetes.io/docs/tasks/administer-"
    "cluster/kubeadm/kubeadm-certs/#external-ca-mode). It generates CSRs which you can then submit to your external "
    "certificate authority for signing.\n\n"
    'The PEM encoded signed certificates should then be saved alongside the key files, using ".crt" as the file '
    "extension, or in the case of kubeconfig files, the PEM encoded signed certificate should be base64 encoded and "
    'added to the kubeconfig file in the "users > user > client-certificate-data" field.'
)


@command.command(
    name="generate-csr",
    help=_CSR_LONG,
    short_help="Generate keys and certificate signing requests",
    epilog="Examples:\n  # The following command will generate keys and CSRs for all control-plane certificates and "
    "kubeconfig files:\n  kubeadm certs generate-csr --kubeconfig-dir /tmp/etc-k8s --cert-dir /tmp/etc-k8s/pki",
)
@option("cert-dir")
@option("config")
@option("kubeconfig-dir")
def generate_csr(cert_dir: str, config: str | None, kubeconfig_dir: str) -> None:
    cfg = _load(config, cert_dir, _was_set("cert_dir"))
    layout = _layout(cfg)
    params = pki_params(cfg.init, cfg.cluster)
    create_default_keys_and_csrs(params, layout.pki_dir, click.echo, cfg.cluster.certificates_dir)
    create_kubeconfigs_and_csrs(
        kubeconfig_params(cfg.init, cfg.cluster), layout.host(kubeconfig_dir), click.echo, kubeconfig_dir
    )
