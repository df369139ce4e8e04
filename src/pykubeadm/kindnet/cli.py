"""`pykubeadm component kindnetd`: the network addon's program, run by the built-in kubelet for kind's
`docker.io/kindest/kindnetd` image in the addon's hostNetwork DaemonSet (kindnet.manifests).

The node is `--hostname-override`, else $NODE_NAME (the DaemonSet's downward API). Credentials: `--kubeconfig`, else
the Pod's service account (in-cluster: $KUBERNETES_SERVICE_HOST/PORT and the token), with the API server at
$CONTROL_PLANE_ENDPOINT (host:port) when set, as kind points kindnet at its control plane. $POD_SUBNET (kubeadm's
podSubnet, comma-separated) is what is not masqueraded (default: every node's podCIDRs).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from pykubeadm import constants as c
from pykubeadm.controllers.app.daemon import configure_logging, run_until_signalled

__all__ = ["command"]

log = logging.getLogger("kindnetd")


@click.command("kindnetd", context_settings={"max_content_width": 120})
@click.option("--kubeconfig", default="", help="kubeconfig of the API server (default: in-cluster).")
@click.option("--hostname-override", default="", help="This node's name. [default: $NODE_NAME]")
@click.option("--cni-conf-dir", default=c.DEFAULT_CNI_CONF_DIR, show_default=True, help="Where the conflist goes.")
@click.option("-v", "--v", "verbosity", type=int, default=0, help="Log level verbosity.")
def command(kubeconfig: str, hostname_override: str, cni_conf_dir: str, verbosity: int) -> None:
    """Write this node's CNI configuration from its podCIDR and route the other nodes' pod CIDRs."""
    configure_logging(verbosity)
    name = hostname_override or os.environ.get("NODE_NAME", "")
    if not name:
        raise click.UsageError("no node name: set --hostname-override or $NODE_NAME (fieldRef spec.nodeName)")
    from pykubeadm.client import async_client
    from pykubeadm.dns.plugins.kubernetes.credentials import kube_config
    from pykubeadm.kindnet.agent import NetworkAgent

    endpoint = os.environ.get("CONTROL_PLANE_ENDPOINT", "")
    try:
        cfg = kube_config(
            kubeconfig=kubeconfig or None,
            context=None,
            endpoint=f"https://{endpoint}" if endpoint else None,
            corefile_path=cni_conf_dir,
            env=os.environ,
        )
    except ValueError as e:
        raise click.ClickException(str(e)) from e

    async def main() -> int:
        client = async_client(cfg)
        log.info("kindnetd for node %s, CNI configuration in %s", name, cni_conf_dir)
        try:
            cluster = [x for x in os.environ.get("POD_SUBNET", "").split(",") if x]
            await NetworkAgent(client, name, Path(cni_conf_dir), cluster_cidrs=cluster).run()
        finally:
            await client.close()
        return 0

    raise SystemExit(run_until_signalled(main, log))
