"""`pykubeadm upgrade plan|apply|node|diff`: flags → UpgradeConfiguration + what the cluster says → upgrade phases.

The CLI only wires flags: it loads the UpgradeConfiguration (`pykubeadm.api.load_upgrade_config`), reads the cluster
through `--kubeconfig` (`phases.upgrade.cluster`), builds `UpgradeData` once and runs the phase trees of
`pykubeadm.phases.upgrade`; `plan` and `diff` print what `phases.upgrade.plan` / `.diff` compute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from pykubeadm import constants as c
from pykubeadm.api import ClusterConfiguration, UpgradeConfiguration, dump_cluster_configuration, load_upgrade_config
from pykubeadm.api.flags import parse_feature_gates
from pykubeadm.api.versions import resolve_kubernetes_version
from pykubeadm.cli.main import CliState, current_state
from pykubeadm.errors import KubeadmError, ValidationError
from pykubeadm.layout import Layout
from pykubeadm.manifests import STATIC_PODS
from pykubeadm.options import FlagSpec, flags_from_click, option
from pykubeadm.phases.upgrade import UpgradeData, apply_phases, node_phases
from pykubeadm.phases.upgrade.cluster import fetch_cluster_configuration, kubeconfig_client, node_name, server_version
from pykubeadm.phases.upgrade.data import node_inputs
from pykubeadm.phases.upgrade.diff import diff_static_pods
from pykubeadm.phases.upgrade.plan import format_plan, plan_as_dict
from pykubeadm.phases.upgrade.planner import plan_upgrade
from pykubeadm.phases.upgrade.preflight import run_health_checks
from pykubeadm.preflight import RealHost, root_check, run_checks
from pykubeadm.workflow import Runner

__all__ = ["command"]

_ADMIN_CONF = f"{c.KUBERNETES_DIR}/{c.ADMIN_KUBECONFIG_FILE}"
_KUBELET_CONF = f"{c.KUBERNETES_DIR}/{c.KUBELET_KUBECONFIG_FILE}"

_LOCAL_FLAGS: dict[str, Any] = {
    "allow-experimental-upgrades": FlagSpec(
        "allow-experimental-upgrades",
        "Show unstable versions of Kubernetes as an upgrade alternative and allow upgrading to an alpha/beta/release "
        "candidate versions of Kubernetes.",
        False,
        "bool",
    ),
    "allow-release-candidate-upgrades": FlagSpec(
        "allow-release-candidate-upgrades",
        "Show release candidate versions of Kubernetes as an upgrade alternative and allow upgrading to a release "
        "candidate versions of Kubernetes.",
        False,
        "bool",
    ),
    "print-config": FlagSpec(
        "print-config",
        "Specifies whether the configuration file that will be used in the upgrade should be printed or not.",
        False,
        "bool",
    ),
}


def _bool_option(name: str, help_text: str) -> Any:
    """A `--name[=true|false]` flag defaulting to true (pflag's bool with NoOptDefVal)."""
    return click.option(
        f"--{name}",
        name.replace("-", "_"),
        type=click.BOOL,
        default=True,
        is_flag=False,
        flag_value=True,
        show_default=True,
        help=help_text,
    )


def upgrade_option(name: str) -> Any:
    """The click option of an upgrade flag."""
    if name == "certificate-renewal":
        return _bool_option(name, "Perform the renewal of certificates used by component changed during upgrades.")
    if name == "etcd-upgrade":
        return _bool_option(name, "Perform the upgrade of etcd.")
    if name == "force":
        return click.option(
            "-f",
            "--force",
            "force",
            is_flag=True,
            default=False,
            help="Force upgrading although some requirements might not be met. This also implies non-interactive mode.",
        )
    if name == "yes":
        return click.option(
            "-y",
            "--yes",
            "yes",
            is_flag=True,
            default=False,
            help="Perform the upgrade and do not prompt for confirmation (non-interactive mode).",
        )
    if name == "dry-run":
        return FlagSpec(
            "dry-run", "Do not change any state, just output what actions would be performed.", False, "bool"
        ).decorator()
    if name == "kubeconfig":
        return FlagSpec(
            "kubeconfig",
            "The kubeconfig file to use when talking to the cluster. If the flag is not "
            "set, a set of standard locations can be searched for an existing kubeconfig file.",
            _ADMIN_CONF,
        ).decorator()
    if name in _LOCAL_FLAGS:
        return _LOCAL_FLAGS[name].decorator()
    return option(name)


def _options(names: tuple[str, ...]) -> Any:
    def deco(f: Any) -> Any:
        for name in reversed(names):
            f = upgrade_option(name)(f)
        return f

    return deco


def _state() -> CliState:
    return current_state()


def _load_config(flags: dict[str, Any]) -> UpgradeConfiguration:
    config = flags.get("config")
    passed = {k: v for k, v in flags.items() if k not in ("kubeconfig", "yes") and v is not None}
    return load_upgrade_config(Path(config) if config else None, passed)


def _resolve(version: str) -> str:
    try:
        return resolve_kubernetes_version(version)
    except ValueError as err:
        raise ValidationError([str(err)]) from err


def _root_preflight(layout: Layout, ignore: frozenset[str]) -> None:
    if layout.root == Path("/"):
        run_checks(root_check(RealHost()), ignore, lambda line: click.echo(line, err=True, nl=False))


def _print_config(cluster: ClusterConfiguration) -> None:
    click.echo("[upgrade/config] Configuration used:")
    for line in dump_cluster_configuration(cluster).splitlines():
        click.echo(f"\t{line}")


def _client(layout: Layout, kubeconfig: str) -> Any:
    path = layout.host(kubeconfig)
    if not path.is_file():
        raise KubeadmError(
            f'couldn\'t create a Kubernetes client from file "{kubeconfig}": failed to load admin kubeconfig: '
            f"open {kubeconfig}: no such file or directory"
        )
    return kubeconfig_client(path, layout)


# --- apply and node ----------------------------------------------------------------------------------------------------


def _ignore(flags: dict[str, Any], cfg_values: list[str]) -> frozenset[str]:
    return frozenset(e.lower() for e in [*flags.get("ignore-preflight-errors", ()), *cfg_values])


def _build_data(
    command: str, state: CliState, flags: dict[str, Any], version: str | None, *, phase: bool = False
) -> UpgradeData:
    """The run data; a single `apply phase` without a version in --config targets the cluster's kubernetesVersion."""
    cfg = _load_config(flags)
    sec = cfg.apply if command == "apply" else cfg.node
    root_layout = Layout(state.root_dir)
    control_plane = root_layout.manifest(c.KUBE_APISERVER).is_file()
    default_kubeconfig = _ADMIN_CONF if command == "apply" or control_plane else _KUBELET_CONF
    wanted = version or (cfg.apply.kubernetes_version if command == "apply" else "")
    if command == "apply" and not wanted and not phase:
        raise ValidationError(["missing one or more required arguments. Required arguments: [version]"])
    client = _client(root_layout, flags.get("kubeconfig") or default_kubeconfig)
    cluster = fetch_cluster_configuration(client, click.echo, "[upgrade]")
    target = _resolve(wanted or cluster.kubernetes_version) if command == "apply" else ""
    if command == "apply":
        cluster.kubernetes_version = target
        if flags.get("feature-gates"):  # kubeadm lets apply change the cluster's feature gates
            cluster.feature_gates.update(parse_feature_gates(flags["feature-gates"]))
    else:
        target = cluster.kubernetes_version
    cluster_version = server_version(client) if command == "apply" else cluster.kubernetes_version
    layout = Layout(state.root_dir, cluster.certificates_dir)
    patches = sec.patches.directory if sec.patches else ""
    data = UpgradeData(
        command=command,
        cfg=cfg,
        layout=layout,
        client=client,
        cluster=cluster,
        cluster_version=cluster_version,
        target=target,
        node_name=node_name(layout),
        control_plane=control_plane,
        out=click.echo,
        dry_run=bool(sec.dry_run),
        force=bool(getattr(sec, "force_upgrade", False)),
        yes=bool(flags.get("yes")),
        certificate_renewal=bool(sec.certificate_renewal),
        etcd_upgrade=bool(sec.etcd_upgrade),
        allow_experimental=bool(getattr(sec, "allow_experimental_upgrades", False)),
        allow_rc=bool(getattr(sec, "allow_rc_upgrades", False)),
        patches_dir=Path(patches) if patches else None,
        ignore_preflight_errors=_ignore(flags, sec.ignore_preflight_errors),
    )
    if command == "apply" and cfg.apply.print_config:
        _print_config(cluster)
    return data


_APPLY_FLAGS = (
    "allow-experimental-upgrades",
    "allow-release-candidate-upgrades",
    "certificate-renewal",
    "config",
    "dry-run",
    "etcd-upgrade",
    "feature-gates",
    "force",
    "ignore-preflight-errors",
    "kubeconfig",
    "patches",
    "print-config",
    "skip-phases",
    "yes",
)
_NODE_FLAGS = (
    "certificate-renewal",
    "config",
    "dry-run",
    "etcd-upgrade",
    "ignore-preflight-errors",
    "kubeconfig",
    "patches",
    "skip-phases",
)


_APPLY_HELP = "Upgrade your Kubernetes cluster to the specified version"
_NODE_HELP = "Upgrade commands for a node in the cluster"


class _ApplyGroup(click.Group):
    """`upgrade apply [version] [flags]` and `upgrade apply phase <name>`: the optional version may stand anywhere
    among the flags (click groups otherwise stop parsing at the first positional)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] != ["phase"]:
            ctx.allow_interspersed_args = True
        rest = super().parse_args(ctx, args)
        protected = list(ctx._protected_args)
        if protected and protected[0] not in self.commands:
            extra = protected[1:] + list(ctx.args)
            if extra:
                raise click.UsageError(f"accepts at most 1 arg(s), received {1 + len(extra)}", ctx)
            ctx.meta["upgrade_version"] = protected[0]
            ctx._protected_args = []
            ctx.args = []
        return rest

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Runner.without_data(apply_phases()).write_help(formatter, _APPLY_HELP, "upgrade apply")

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[version] [flags] | phase <name> [flags]")


class _NodeGroup(click.Group):
    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Runner.without_data(node_phases()).write_help(formatter, _NODE_HELP, "upgrade node")


@click.group(name="upgrade", help="Upgrade your cluster smoothly to a newer version with this command")
def command() -> None:
    """Upgrade your cluster smoothly to a newer version with this command"""


@command.group(name="apply", cls=_ApplyGroup, invoke_without_command=True, help=_APPLY_HELP)
@_options(_APPLY_FLAGS)
@click.pass_context
def apply_cmd(ctx: click.Context, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    flags = flags_from_click(params, ctx)
    version = ctx.meta.get("upgrade_version")
    runner = Runner(apply_phases(), lambda: _build_data("apply", _state(), flags, version))
    data = runner.data
    skip = list(flags.get("skip-phases", ())) or list(data.cfg.apply.skip_phases)
    runner.run(skip)
    if data.dry_run:
        click.echo("[upgrade/successful] Finished dryrunning successfully!")
        return
    click.echo(f'\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "{data.target}".\n')
    click.echo("[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.")


def _invoke_apply_phase(runner: Runner[UpgradeData], path: str, params: dict[str, Any]) -> None:
    flags = flags_from_click(params, click.get_current_context())
    Runner(runner.phases, lambda: _build_data("apply", _state(), flags, None, phase=True)).run_phase(path)


apply_cmd.add_command(Runner.without_data(apply_phases()).phase_commands(upgrade_option, _invoke_apply_phase))


def _invoke_node_phase(runner: Runner[UpgradeData], path: str, params: dict[str, Any]) -> None:
    flags = flags_from_click(params, click.get_current_context())
    Runner(runner.phases, lambda: _build_data("node", _state(), flags, None)).run_phase(path)


@command.group(name="node", cls=_NodeGroup, invoke_without_command=True, help=_NODE_HELP)
@_options(_NODE_FLAGS)
@click.pass_context
def node_cmd(ctx: click.Context, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    flags = flags_from_click(params, ctx)
    runner = Runner(node_phases(), lambda: _build_data("node", _state(), flags, None))
    skip = list(flags.get("skip-phases", ())) or list(runner.data.cfg.node.skip_phases)
    runner.run(skip)


node_cmd.add_command(Runner.without_data(node_phases()).phase_commands(upgrade_option, _invoke_node_phase))


# --- plan ---------------------------------------------------------------------------------------------------------------

_PLAN_FLAGS = (
    "allow-experimental-upgrades",
    "allow-release-candidate-upgrades",
    "config",
    "ignore-preflight-errors",
    "kubeconfig",
    "print-config",
)


@command.command(
    name="plan",
    help="Check which versions are available to upgrade to and validate whether your current cluster is upgradeable.",
)
@click.argument("version", required=False)
@_options(_PLAN_FLAGS)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Choice(["text", "json", "yaml"]),
    default="text",
    show_default=True,
    help="Output format. One of: text|json|yaml.",
)
@click.pass_context
def plan_cmd(ctx: click.Context, version: str | None, output: str, **params: Any) -> None:
    flags = flags_from_click(params, ctx)
    cfg = _load_config(flags)
    state = _state()
    root_layout = Layout(state.root_dir)
    ignore = _ignore(flags, cfg.plan.ignore_preflight_errors)
    text = output == "text"
    say = click.echo if text else (lambda _line: None)
    say("[preflight] Running pre-flight checks.")
    _root_preflight(root_layout, ignore)
    client = _client(root_layout, flags.get("kubeconfig") or _ADMIN_CONF)
    cluster = fetch_cluster_configuration(client, say, "[upgrade/config]")
    layout = Layout(state.root_dir, cluster.certificates_dir)
    if cfg.plan.print_config:
        _print_config(cluster)
    run_health_checks(client, layout, ignore, say, manifests=False)
    target = _resolve(version or cfg.plan.kubernetes_version or c.DEFAULT_KUBERNETES_VERSION_LABEL)
    versions, plan = plan_upgrade(client, cluster, target, cfg, say)
    if text:
        click.echo(format_plan(plan), nl=False)
    elif output == "json":
        click.echo(json.dumps(plan_as_dict(plan, versions), indent=2))
    else:
        click.echo(yaml.safe_dump(plan_as_dict(plan, versions), sort_keys=False), nl=False)


# --- diff ---------------------------------------------------------------------------------------------------------------


@command.command(
    name="diff",
    help="Show what differences would be applied to existing static pod manifests. See also: kubeadm upgrade apply "
    "--dry-run",
)
@click.argument("version", required=False)
@click.option(
    "--api-server-manifest",
    default=f"{c.KUBERNETES_DIR}/{c.MANIFESTS_SUBDIR}/{c.KUBE_APISERVER}.yaml",
    show_default=True,
    help="path to API server manifest",
)
@click.option(
    "--controller-manager-manifest",
    default=f"{c.KUBERNETES_DIR}/{c.MANIFESTS_SUBDIR}/{c.KUBE_CONTROLLER_MANAGER}.yaml",
    show_default=True,
    help="path to controller manifest",
)
@click.option(
    "--scheduler-manifest",
    default=f"{c.KUBERNETES_DIR}/{c.MANIFESTS_SUBDIR}/{c.KUBE_SCHEDULER}.yaml",
    show_default=True,
    help="path to scheduler manifest",
)
@click.option(
    "-c",
    "--context-lines",
    "context_lines",
    type=int,
    default=3,
    show_default=True,
    help="How many lines of context in the diff",
)
@_options(("config", "kubeconfig"))
@click.pass_context
def diff_cmd(
    ctx: click.Context,
    version: str | None,
    api_server_manifest: str,
    controller_manager_manifest: str,
    scheduler_manifest: str,
    context_lines: int,
    **params: Any,
) -> None:
    flags = flags_from_click(params, ctx)
    cfg = _load_config(flags)
    state = _state()
    root_layout = Layout(state.root_dir)
    client = _client(root_layout, flags.get("kubeconfig") or _ADMIN_CONF)
    cluster = fetch_cluster_configuration(client, lambda line: click.echo(line, err=True), "[upgrade/config]")
    wanted = version or cfg.diff.kubernetes_version or cluster.kubernetes_version
    cluster.kubernetes_version = _resolve(wanted)
    if ctx.get_parameter_source("context_lines") not in (click.core.ParameterSource.COMMANDLINE,):
        context_lines = cfg.diff.context_lines or context_lines
    layout = Layout(state.root_dir, cluster.certificates_dir)
    manifests = dict(
        zip(
            (spec.component for spec in STATIC_PODS),
            (api_server_manifest, controller_manager_manifest, scheduler_manifest),
            strict=True,
        )
    )
    inputs = node_inputs(cluster, layout, node_name(layout), cfg.timeouts)
    click.echo(diff_static_pods(layout, inputs, manifests, context_lines), nl=False)
