"""`pykubeadm init` and `pykubeadm init phase …`: flags → defaulted, validated config → the init phase runner.

The CLI only wires flags: it loads the configuration (`pykubeadm.api.load_init_config`), builds the run data once
(`InitData`), and hands it to the runner over the phase tree of `pykubeadm.phases.init`. In dry-run the data's layout
points at a temporary directory, so nothing under the node's root is touched.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pykubeadm.cli.main import CliState, dry_run_layout
from pykubeadm.errors import ValidationError
from pykubeadm.layout import Layout
from pykubeadm.options import INIT_FLAGS, apply_options, flags_from_click, option
from pykubeadm.phases.kubeletservice import discard_prewarmed_kubelets, kubelet_will_start, prewarm_kubelet
from pykubeadm.workflow import Runner

if TYPE_CHECKING:
    from pykubeadm.phases.init import InitData

# The config API and the phases (~0.3 s of imports) are imported when a command runs, so that `init` can start the
# kubelet's interpreter first (phases/kubeletservice.prewarm_kubelet).

__all__ = ["build_init_data", "command"]


def build_init_data(state: CliState, flags: dict[str, Any], out: Any = click.echo) -> InitData:
    """The run data of `init` from the flags the user set (kubeadm flag name → value)."""
    from pykubeadm.api import load_init_config
    from pykubeadm.phases.init import InitData
    from pykubeadm.phases.init.certs import detect_external_ca

    config_file = flags.get("config")
    cfg = load_init_config(Path(config_file) if config_file else None, flags)
    real = Layout(root=state.root_dir, cert_dir=cfg.cluster.certificates_dir)
    dry_run = bool(flags.get("dry-run")) or cfg.init.dry_run
    layout = real
    if dry_run:
        layout = dry_run_layout("init", cfg.cluster.certificates_dir, out)
    patches = flags.get("patches") or (cfg.init.patches.directory if cfg.init.patches else "")
    ignore = {
        e.lower()
        for e in [*flags.get("ignore-preflight-errors", ()), *cfg.init.node_registration.ignore_preflight_errors]
    }
    data = InitData(
        cfg=cfg,
        layout=layout,
        real_layout=real,
        out=out,
        dry_run=dry_run,
        ignore_preflight_errors=frozenset(ignore),
        skip_token_print=bool(flags.get("skip-token-print")),
        upload_certs=bool(flags.get("upload-certs")),
        skip_certificate_key_print=bool(flags.get("skip-certificate-key-print")),
        patches_dir=Path(patches) if patches else None,
        kubeconfig_dir=flags.get("kubeconfig-dir"),
    )
    if detect_external_ca(data) and data.upload_certs:
        raise ValidationError(
            ["--upload-certs: the CA key ca.key is missing (external CA mode); certificates cannot be uploaded"]
        )
    return data


def _runner(state: CliState, flags: dict[str, Any]) -> Runner[InitData]:
    def build() -> InitData:
        data = build_init_data(state, flags)
        data.out(f"[init] Using Kubernetes version: {data.cfg.cluster.kubernetes_version}")
        return data

    return Runner(_init_phases(), build)


def _init_phases() -> list[Any]:
    from pykubeadm.phases.init import init_phases

    return init_phases()


def _invoke_phase(runner: Runner[InitData], path: str, params: dict[str, Any]) -> None:
    ctx = click.get_current_context()
    state = ctx.find_object(CliState)
    assert state is not None
    flags = flags_from_click(params, ctx)
    data = build_init_data(state, flags)  # config errors are reported before any phase, as kubeadm does
    Runner(runner.phases, lambda: data).run_phase(path)


_HELP_HEAD = "Run this command in order to set up the Kubernetes control plane"


@cache
def _phase_commands() -> click.Group:
    return Runner.without_data(_init_phases()).phase_commands(option, _invoke_phase)


class _InitGroup(click.Group):
    """`init` with its one sub-command, `phase`, built when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["phase"]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _phase_commands() if cmd_name == "phase" else None

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Runner.without_data(_init_phases()).write_help(formatter, _HELP_HEAD, "init")


@click.group(cls=_InitGroup, name="init", invoke_without_command=True, help=_HELP_HEAD)
@apply_options(INIT_FLAGS)
@click.pass_context
def command(ctx: click.Context, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    state = ctx.find_object(CliState)
    assert state is not None
    flags = flags_from_click(params, ctx)
    if kubelet_will_start(bool(flags.get("dry-run")), flags.get("skip-phases", ())):
        prewarm_kubelet(Layout(root=state.root_dir), control_plane=True)
    runner = _runner(state, flags)
    data = runner.data  # config errors are reported before any phase, as kubeadm does
    skip = list(flags.get("skip-phases", ())) or list(data.cfg.init.skip_phases)
    if not kubelet_will_start(data.dry_run, skip):  # the config file said so
        discard_prewarmed_kubelets()
    runner.run(skip)
