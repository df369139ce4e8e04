"""`pykubeadm config`: print defaults, migrate old configs, validate a config file, list the images kubeadm uses and
pull them through the node's CRI runtime."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.api import images, loader, v1beta4
from pykubeadm.api.defaults import get_hostname
from pykubeadm.api.yamlio import dump_documents, dump_yaml
from pykubeadm.errors import KubeadmError
from pykubeadm.options import flags_from_click, option

__all__ = ["command"]

PLACEHOLDER_TOKEN = "abcdef.0123456789abcdef"
_COMPONENT_CONFIG_KINDS = ("KubeProxyConfiguration", "KubeletConfiguration")


@click.group(
    name="config",
    help="""There is a ConfigMap in the kube-system namespace called "kubeadm-config" that kubeadm uses to store internal configuration about the
cluster. kubeadm CLI v1.8.0+ automatically creates this ConfigMap with the config used with 'kubeadm init'.

Using this command, you can manage the kubeadm configuration persisted in that ConfigMap.""",
)
@option("kubeconfig")
def command(kubeconfig: str) -> None:
    """Manage configuration for a kubeadm cluster persisted in a ConfigMap in the cluster"""


# --- print ----------------------------------------------------------------------------------------------------------


@command.group(name="print", help="This command prints configurations for subcommands provided.")
def print_group() -> None:
    pass


def _default_init_config() -> loader.InitConfig:
    """kubeadm's DefaultedStaticInitConfiguration with its placeholders."""
    init = v1beta4.InitConfiguration()
    init.bootstrap_tokens[0].token = PLACEHOLDER_TOKEN
    init.local_api_endpoint.advertise_address = "1.2.3.4"
    init.node_registration.name = "node"
    init.node_registration.cri_socket = c.DEFAULT_CRI_SOCKET
    cluster = v1beta4.ClusterConfiguration(kubernetes_version=c.KUBERNETES_VERSION.removeprefix("v"))
    kubelet, proxy = loader.component_configs(init, cluster)
    return loader.InitConfig(init=init, cluster=cluster, kubelet=kubelet, kube_proxy=proxy)


def _component_config_docs(names: tuple[str, ...], cfg: loader.InitConfig) -> list[dict[str, Any]]:
    wanted: list[str] = []
    for value in names:
        wanted += [s.strip() for s in value.split(",") if s.strip()]
    docs = []
    for name in wanted:
        if name == "KubeletConfiguration":
            docs.append(cfg.kubelet)
        elif name == "KubeProxyConfiguration":
            docs.append(cfg.kube_proxy)
        else:
            raise KubeadmError(f"--component-configs needs to contain some of [{' '.join(_COMPONENT_CONFIG_KINDS)}]")
    return docs


_COMPONENT_CONFIGS_OPTION = click.option(
    "--component-configs",
    multiple=True,
    metavar="strings",
    help="A comma-separated list for component config API objects to print the default values for. Available values: "
    f"[{' '.join(_COMPONENT_CONFIG_KINDS)}]. If this flag is not set, no component configs will be printed.",
)


@print_group.command(name="init-defaults")
@_COMPONENT_CONFIGS_OPTION
def init_defaults(component_configs: tuple[str, ...]) -> None:
    """Print default init configuration, that can be used for 'kubeadm init'"""
    cfg = _default_init_config()
    docs: list[Any] = [cfg.init, cfg.cluster, *_component_config_docs(component_configs, cfg)]
    click.echo(dump_documents(docs), nl=False)


@print_group.command(name="join-defaults")
@_COMPONENT_CONFIGS_OPTION
def join_defaults(component_configs: tuple[str, ...]) -> None:
    """Print default join configuration, that can be used for 'kubeadm join'"""
    join = v1beta4.JoinConfiguration(
        discovery=v1beta4.Discovery(
            bootstrap_token=v1beta4.BootstrapTokenDiscovery(
                token=PLACEHOLDER_TOKEN, api_server_endpoint="kube-apiserver:6443", unsafe_skip_ca_verification=True
            )
        ),
        node_registration=v1beta4.NodeRegistrationOptions(cri_socket=c.DEFAULT_CRI_SOCKET),
    )
    join.node_registration.name = get_hostname()
    docs: list[Any] = [join, *_component_config_docs(component_configs, _default_init_config())]
    click.echo(dump_documents(docs), nl=False)


@print_group.command(name="reset-defaults")
@_COMPONENT_CONFIGS_OPTION
def reset_defaults(component_configs: tuple[str, ...]) -> None:
    """Print default reset configuration, that can be used for 'kubeadm reset'"""
    reset = v1beta4.ResetConfiguration(cri_socket=c.DEFAULT_CRI_SOCKET)
    click.echo(dump_documents([reset, *_component_config_docs(component_configs, _default_init_config())]), nl=False)


@print_group.command(name="upgrade-defaults")
@_COMPONENT_CONFIGS_OPTION
def upgrade_defaults(component_configs: tuple[str, ...]) -> None:
    """Print default upgrade configuration, that can be used for 'kubeadm upgrade'"""
    up = v1beta4.UpgradeConfiguration()
    click.echo(dump_documents([up, *_component_config_docs(component_configs, _default_init_config())]), nl=False)


# --- migrate / validate ---------------------------------------------------------------------------------------------

_ALLOW_EXPERIMENTAL = click.option(
    "--allow-experimental-api",
    is_flag=True,
    help="Allow migration to experimental, unreleased APIs.",
)


@command.command(name="migrate")
@click.option(
    "--old-config",
    default="",
    help="Path to the kubeadm config file that is using an old API version and should be converted. This flag is mandatory.",
)
@click.option(
    "--new-config",
    default="",
    help="Path to the resulting equivalent kubeadm config file using the new API version. Optional, if not specified output will be sent to STDOUT.",
)
@_ALLOW_EXPERIMENTAL
def migrate(old_config: str, new_config: str, allow_experimental_api: bool) -> None:
    """Read an older version of the kubeadm configuration API types from a file, and output the similar config object
    for the newer version"""
    if not old_config:
        raise KubeadmError("the --old-config flag is mandatory")
    try:
        text = Path(old_config).read_text()
    except OSError as e:
        raise KubeadmError(f"{e}") from None
    out = loader.migrate_config(text)
    if new_config:
        fd = os.open(new_config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, c.PUBLIC_FILE_MODE)
        with os.fdopen(fd, "w") as f:
            f.write(out)
    else:
        click.echo(out, nl=False)


@command.command(name="validate")
@option("config")
@_ALLOW_EXPERIMENTAL
def validate(config: str | None, allow_experimental_api: bool) -> None:
    """Read a file containing the kubeadm configuration API and report any validation problems"""
    if not config:
        raise KubeadmError("the --config flag is mandatory")
    loader.validate_config_file(Path(config))
    click.echo("ok")


# --- images ---------------------------------------------------------------------------------------------------------


@command.group(name="images", help="Interact with container images used by kubeadm")
def images_group() -> None:
    pass


@images_group.command(name="list")
@option("config")
@option("feature-gates")
@option("image-repository")
@option("kubernetes-version")
@click.option(
    "-o",
    "--output",
    "output",
    default="text",
    show_default=True,
    help="Output format. One of: text|json|yaml.",
)
@click.option("--allow-missing-template-keys", is_flag=True, default=True, hidden=True)
@click.pass_context
def images_list(ctx: click.Context, output: str, **params: Any) -> None:
    """Print a list of images kubeadm will use. The configuration file is used in case any images or image repositories
    are customized"""
    flags = flags_from_click(params, ctx)
    flags.pop("allow-missing-template-keys", None)
    config = flags.pop("config", None)
    if config is not None:
        flags["config"] = config
    cfg = loader.load_init_config(Path(config) if config else None, flags, systemd_resolved=False)
    names = images.images_list(cfg.cluster)
    if output == "text":
        click.echo("\n".join(names))
    elif output == "json":
        obj = {"kind": "Images", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "images": names}
        click.echo(json.dumps(obj, indent=4))
    elif output == "yaml":
        obj = {"kind": "Images", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "images": names}
        click.echo(dump_yaml(obj), nl=False)
    else:
        raise KubeadmError(
            f'unable to match a printer suitable for the output format "{output}", allowed formats are: json,text,yaml'
        )


@images_group.command(name="pull")
@option("config")
@option("cri-socket")
@option("feature-gates")
@option("image-repository")
@option("kubernetes-version")
@click.pass_context
def images_pull(ctx: click.Context, **params: Any) -> None:
    """Pull images used by kubeadm"""
    from pykubeadm.cri.kubeadmruntime import ContainerRuntime

    flags = flags_from_click(params, ctx)
    config = flags.pop("config", None)
    if config is not None:
        flags["config"] = config
    cfg = loader.load_init_config(Path(config) if config else None, flags, systemd_resolved=False)
    runtime = ContainerRuntime(cfg.init.node_registration.cri_socket)
    for image in images.images_list(cfg.cluster):
        try:
            runtime.pull_image(image)
        except KubeadmError as err:
            raise KubeadmError(f'failed to pull image "{image}": {err}') from err
        click.echo(f"[config/images] Pulled {image}")
