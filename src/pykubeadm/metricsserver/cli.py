"""`pykubeadm component metrics-server --cert-dir=/tmp --secure-port=… --kubelet-insecure-tls …`: the program the image
registry.k8s.io/metrics-server/metrics-server runs here, with metrics-server v0.7's flags and defaults.

The API connection is --kubeconfig, else the Pod's in-cluster credentials (the service-account token, re-read on every
request, as client-go's InClusterConfig; the Pod's projected volume is found beside --cert-dir's volume when the
kubelet ran the Pod without a mount namespace). The kubelets are scraped with the same token, over TLS verified with
--kubelet-certificate-authority (else the cluster CA), or not at all with --kubelet-insecure-tls.

The program keeps to aiohttp for all its HTTP, the kubelet's small API client (kubelet.api) included: no lightkube,
httpx or msgspec in its memory (tests/unit/metricsserver/test_footprint.py).
"""

from __future__ import annotations

import logging
import os
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pykubeadm.controllers.app.flags import GoDuration, bool_flag

if TYPE_CHECKING:
    from pykubeadm.kubelet.api import ClientConfig

__all__ = ["command"]

_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")


@click.command("metrics-server", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--cert-dir",
    default="apiserver.local.config/certificates",
    show_default=True,
    help="The directory where the TLS certs are located (ignored with --tls-cert-file).",
)
@click.option("--secure-port", type=click.IntRange(0, 65535), default=10250, show_default=True)
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--tls-cert-file", default="")
@click.option("--tls-private-key-file", default="")
@click.option(
    "--metric-resolution",
    type=GoDuration(),
    default="1m0s",
    show_default=True,
    help="The resolution at which metrics-server will retain metrics, must set value at least 10s.",
)
@click.option("--kubelet-preferred-address-types", default=",".join(_ADDRESS_TYPES), show_default=True)
@bool_flag(
    "--kubelet-use-node-status-port",
    False,
    "Use the port in the node status. Takes precedence over --kubelet-port flag.",
)
@click.option("--kubelet-port", type=click.IntRange(1, 65535), default=10250, show_default=True)
@bool_flag("--kubelet-insecure-tls", False, "Do not verify CA of serving certificates presented by Kubelets.")
@click.option("--kubelet-certificate-authority", default="")
@click.option("--kubeconfig", default="", help="The path to the kubeconfig used to connect to the Kubernetes API.")
@click.option("--authentication-kubeconfig", default="")
@click.option("--authorization-kubeconfig", default="")
@click.option("-v", "--v", "verbosity", type=int, default=0)
@bool_flag("--logtostderr", True, "log to standard error instead of files")
def command(**opts: Any) -> None:
    """The built-in metrics-server: scrape the kubelets' resource metrics and serve metrics.k8s.io."""
    from datetime import timedelta

    from pykubeadm.controllers.app.daemon import configure_logging

    configure_logging(opts["verbosity"])
    resolution: timedelta = opts["metric_resolution"]
    if resolution.total_seconds() < 10:
        click.echo(f"Error: metric-resolution should be a time duration at least 10s, but value {resolution} "
                   "provided", err=True)  # fmt: skip
        sys.exit(1)
    types = tuple(t.strip() for t in opts["kubelet_preferred_address_types"].split(",") if t.strip())
    bad = [t for t in types if t not in _ADDRESS_TYPES]
    if bad:
        click.echo(f'Error: kubelet-preferred-address-types: unknown address type "{bad[0]}": use '
                   f"{', '.join(_ADDRESS_TYPES)}", err=True)  # fmt: skip
        sys.exit(1)
    if bool(opts["tls_cert_file"]) != bool(opts["tls_private_key_file"]):
        click.echo("Error: --tls-cert-file and --tls-private-key-file must be given together", err=True)
        sys.exit(1)
    try:
        cfg, token = _connection(opts["kubeconfig"], Path(opts["cert_dir"]))
    except ValueError as err:
        click.echo(f"Error: unable to construct client config: {err}", err=True)
        sys.exit(1)
    from pykubeadm.kubelet.api import KubeClient
    from pykubeadm.metricsserver.server import MetricsServer, ServerOptions, new_auth
    from pykubeadm.util import aio

    kubelet_ssl = _kubelet_context(opts, cfg)
    server_opts = ServerOptions(
        bind_address=opts["bind_address"],
        secure_port=opts["secure_port"],
        cert_dir=Path(opts["cert_dir"]),
        tls_cert_file=Path(opts["tls_cert_file"]) if opts["tls_cert_file"] else None,
        tls_private_key_file=Path(opts["tls_private_key_file"]) if opts["tls_private_key_file"] else None,
        resolution=resolution.total_seconds(),
        address_types=types,
        kubelet_port=opts["kubelet_port"],
        use_node_status_port=opts["kubelet_use_node_status_port"],
        kubelet_ssl=kubelet_ssl,
    )

    async def main() -> None:
        client = KubeClient(cfg, timeout=10.0, user_agent="metrics-server/pykubeadm")
        server = MetricsServer(client, new_auth(client), token, server_opts)
        await server.run()

    try:
        aio.run(main(), default="asyncio")  # one scrape per resolution: its RSS budget matters more than uvloop
    except OSError as err:
        logging.getLogger("metrics-server").critical("failed to start: %s", err)
        sys.exit(1)


def _connection(kubeconfig: str, cert_dir: Path) -> tuple[ClientConfig, Callable[[], str]]:
    """(ClientConfig, token()): --kubeconfig, else in-cluster; ValueError saying what is missing."""
    from pykubeadm.kubelet.api import ClientConfig

    if kubeconfig:
        from pykubeadm.errors import KubeconfigError
        from pykubeadm.kubelet.kubeconfig import load_client_config

        try:
            cfg = load_client_config(Path(kubeconfig))
        except (KubeconfigError, OSError) as err:
            raise ValueError(str(err)) from err
    else:
        from pykubeadm.util.incluster import find_service_account_dir, in_cluster_server

        server, sa_dir = in_cluster_server(os.environ, find_service_account_dir(str(cert_dir / "apiserver.crt")))
        try:
            ca = (sa_dir / "ca.crt").read_bytes()
        except OSError as err:
            raise ValueError(f"open {sa_dir / 'ca.crt'}: {err.strerror}") from err
        cfg = ClientConfig(server=server, ca_pem=ca, token_file=str(sa_dir / "token"))
    return cfg, lambda: cfg.bearer_token() or ""


def _kubelet_context(opts: dict[str, Any], cfg: ClientConfig) -> ssl.SSLContext:
    from pykubeadm.util.tlscontext import insecure_client_context

    if opts["kubelet_insecure_tls"]:
        return insecure_client_context()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca = opts["kubelet_certificate_authority"]
    if ca:
        ctx.load_verify_locations(cafile=ca)
    elif cfg.ca_pem:
        ctx.load_verify_locations(cadata=cfg.ca_pem.decode())
    else:
        ctx.load_default_certs()
    return ctx
