"""`pykubeadm component local-path-provisioner [--debug] start --config FILE …`: the local-path provisioner program.

What the `rancher/local-path-provisioner` image runs here (kubelet/builtin/runtime.py maps the image to this component), with
the upstream flags: `--config` (config.json; `setup` and `teardown` are read beside it), `--provisioner-name`
(`rancher.io/local-path`), `--namespace` ($POD_NAMESPACE, default `local-path-storage`), `--helper-image`,
`--configmap-name` (read from the API when the config file is not there), `--service-account-name`,
`--helper-pod-timeout`, `--kubeconfig` (default: the Pod's in-cluster credentials). Only the elected leader (Lease
`rancher.io-local-path` in the namespace) provisions; losing the lease exits 1, as upstream does.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from pykubeadm.client import async_client
from pykubeadm.controllers.app.daemon import new_elector, run_until_signalled
from pykubeadm.controllers.runtime import ControllerContext, run_with_informers
from pykubeadm.localpath.config import ConfigError, ProvisionerConfig, parse_config
from pykubeadm.localpath.provisioner import HELPER_TIMEOUT, PROVISIONER_NAME, LocalPathProvisioner
from pykubeadm.util.goduration import parse_duration

__all__ = ["command"]

log = logging.getLogger("local-path-provisioner")


def _config_from_files(path: Path) -> ProvisionerConfig | None:
    if not path.is_file():
        return None
    data = {"config.json": path.read_text()}
    for script in ("setup", "teardown"):
        candidate = path.parent / script
        if candidate.is_file():
            data[script] = candidate.read_text()
    return parse_config(data)


async def _config_from_api(client: Any, namespace: str, name: str) -> ProvisionerConfig:
    from lightkube.resources.core_v1 import ConfigMap

    found = await client.get(ConfigMap, name, namespace=namespace)
    return parse_config(dict(found.data or {}))


async def _main(opts: dict[str, Any]) -> int:
    from datetime import timedelta

    from pykubeadm.dns.plugins.kubernetes.credentials import kube_config

    config_path = Path(opts["config"])
    cfg = kube_config(
        kubeconfig=opts["kubeconfig"] or None,
        context=None,
        endpoint=None,
        corefile_path=str(config_path),
        env=os.environ,
    )
    client = async_client(cfg)
    try:
        config = _config_from_files(config_path) or await _config_from_api(
            client, opts["namespace"], opts["configmap_name"]
        )
        log.info("provisioner %s: volumes under %s", opts["provisioner_name"], dict(config.node_paths))
        elector = new_elector(
            client,
            opts["namespace"],
            opts["provisioner_name"].replace("/", "-"),
            lease_duration=timedelta(seconds=15),
            renew_deadline=timedelta(seconds=10),
            retry_period=timedelta(seconds=2),
            log=log,
        )

        async def lead() -> None:
            ctx = ControllerContext(client=client)
            provisioner = LocalPathProvisioner(
                ctx,
                namespace=opts["namespace"],
                config=lambda: config,
                helper_image=opts["helper_image"],
                service_account=opts["service_account_name"],
                provisioner_name=opts["provisioner_name"],
                helper_timeout=opts["helper_pod_timeout"],
            )
            await run_with_informers(ctx, [provisioner])

        await elector.run(lead)
        log.error("leaderelection lost")
        return 1
    finally:
        await client.close()


@click.group(name="local-path-provisioner")
@click.option("--debug", is_flag=True, help="enable debug logging level")
def command(debug: bool) -> None:
    """Local Path Provisioner: dynamic hostPath volumes on the Node a claim's Pod runs on."""
    logging.basicConfig(
        stream=sys.stdout,
        level=logging.DEBUG if debug else logging.INFO,
        format="time=%(asctime)s level=%(levelname)s msg=%(message)s",
    )
    for noisy in ("httpx", "httpcore", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@command.command("start")
@click.option("--config", default="", help="Required. Provisioner configuration file.")
@click.option("--provisioner-name", default=PROVISIONER_NAME, show_default=True, help="Specify Provisioner name.")
@click.option(
    "--namespace",
    default=lambda: os.environ.get("POD_NAMESPACE", "local-path-storage"),
    help="The namespace that Provisioner is running in (default $POD_NAMESPACE).",
)
@click.option("--helper-image", default="busybox", show_default=True, help="The helper image used for volumes.")
@click.option("--configmap-name", default="local-path-config", show_default=True, help="Provisioner configmap name.")
@click.option(
    "--service-account-name",
    default=lambda: os.environ.get("SERVICE_ACCOUNT_NAME", "local-path-provisioner-service-account"),
    help="Provisioner service account name (default $SERVICE_ACCOUNT_NAME).",
)
@click.option("--helper-pod-timeout", default="2m0s", help="Helper pod command execution timeout.")
@click.option("--kubeconfig", default="", help="Paths to a kubeconfig. Only required when it is out-of-cluster.")
def start(**opts: Any) -> None:
    """Start the provisioner."""
    if not opts["config"]:
        raise click.UsageError("invalid empty flag --config and it also does not exist at ConfigMap")
    try:
        opts["helper_pod_timeout"] = parse_duration(opts["helper_pod_timeout"]).total_seconds() or HELPER_TIMEOUT
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--helper-pod-timeout") from err
    try:
        code = run_until_signalled(lambda: _main(opts), log)
    except (ConfigError, ValueError) as err:
        raise click.ClickException(f"failed to start provisioner: {err}") from err
    sys.exit(code)
