"""`pykubeadm reset` and `reset phase …`: flags → ResetConfiguration (+ the cluster's kubeadm-config) → reset phases.

The CLI only wires flags: it loads the ResetConfiguration (`pykubeadm.api.load_reset_config`), reads the cluster's
ClusterConfiguration through `--kubeconfig` when it can (`phases.reset.cluster`), builds `ResetData` once and runs the
phase tree of `pykubeadm.phases.reset`; after a full run it prints kubeadm's closing text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.api import load_reset_config
from pykubeadm.cli.main import CliState
from pykubeadm.layout import Layout
from pykubeadm.options import FlagSpec, flags_from_click, option
from pykubeadm.phases.reset import CLEANUP_INSTRUCTIONS, ResetData, reset_phases
from pykubeadm.phases.reset.cluster import fetch_cluster_configuration
from pykubeadm.workflow import Runner

__all__ = ["RESET_FLAGS", "build_reset_data", "command", "reset_option"]

#: The flags of `kubeadm reset`, in kubeadm's help order.
RESET_FLAGS: tuple[str, ...] = (
    "cert-dir",
    "cleanup-tmp-dir",
    "config",
    "cri-socket",
    "dry-run",
    "force",
    "ignore-preflight-errors",
    "kubeconfig",
    "skip-phases",
)

_CERT_DIR = FlagSpec(
    "cert-dir",
    "The path to the directory where the certificates are stored. If specified, clean this directory.",
    c.DEFAULT_CERTIFICATES_DIR,
)


def reset_option(name: str) -> Any:
    """The click option of a `reset` flag (`-f/--force`, reset's own --cert-dir help; the shared spec otherwise)."""
    if name == "force":
        return click.option(
            "-f",
            "--force",
            "force",
            is_flag=True,
            default=False,
            help="Reset the node without prompting for confirmation.",
        )
    if name == "cert-dir":
        return _CERT_DIR.decorator()
    return option(name)


def _kubeconfig_path(state: CliState, flags: dict[str, Any]) -> Path:
    value = flags.get("kubeconfig") or f"{c.KUBERNETES_DIR}/{c.ADMIN_KUBECONFIG_FILE}"
    return Layout(state.root_dir).host(str(value))


def build_reset_data(state: CliState, flags: dict[str, Any], out: Any = click.echo) -> ResetData:
    """The run data of `reset` from the flags the user set (kubeadm flag name → value)."""
    config_file = flags.get("config")
    cfg_flags = {k: v for k, v in flags.items() if k != "kubeconfig"}
    cfg = load_reset_config(Path(config_file) if config_file else None, cfg_flags)
    kubeconfig = _kubeconfig_path(state, flags)
    cluster = fetch_cluster_configuration(kubeconfig, out)
    if "cert-dir" in flags or config_file:
        cert_dir = cfg.certificates_dir
    elif cluster is not None and cluster.certificates_dir:
        cert_dir = cluster.certificates_dir
    else:
        cert_dir = c.DEFAULT_CERTIFICATES_DIR
    cfg.certificates_dir = cert_dir
    return ResetData(cfg=cfg, layout=Layout(state.root_dir, cert_dir), kubeconfig=kubeconfig, out=out, cluster=cluster)


def _state() -> CliState:
    state = click.get_current_context().find_object(CliState)
    assert state is not None
    return state


def _invoke_phase(runner: Runner[ResetData], path: str, params: dict[str, Any]) -> None:
    ctx = click.get_current_context()
    flags = flags_from_click(params, ctx)
    Runner(runner.phases, lambda: build_reset_data(_state(), flags)).run_phase(path)


_HELP_HEAD = "Performs a best effort revert of changes made to this host by 'kubeadm init' or 'kubeadm join'"


class _ResetGroup(click.Group):
    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Runner.without_data(reset_phases()).write_help(formatter, _HELP_HEAD, "reset")


def _reset_options(f: Any) -> Any:
    for name in reversed(RESET_FLAGS):
        f = reset_option(name)(f)
    return f


@click.group(cls=_ResetGroup, name="reset", invoke_without_command=True, help=_HELP_HEAD)
@_reset_options
@click.pass_context
def command(ctx: click.Context, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    flags = flags_from_click(params, ctx)
    runner = Runner(reset_phases(), lambda: build_reset_data(_state(), flags))
    skip = list(flags.get("skip-phases", ())) or list(runner.data.cfg.skip_phases)
    runner.run(skip)
    click.echo(CLEANUP_INSTRUCTIONS, nl=False)


command.add_command(Runner.without_data(reset_phases()).phase_commands(reset_option, _invoke_phase))
