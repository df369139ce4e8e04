"""`pykubeadm join [api-server-endpoint]` and `join phase …`: flags → JoinConfiguration → the join phase runner."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pykubeadm.cli.main import CliState, dry_run_layout
from pykubeadm.layout import Layout
from pykubeadm.options import JOIN_FLAGS, flags_from_click, join_option
from pykubeadm.phases.kubeletservice import discard_prewarmed_kubelets, kubelet_will_start, prewarm_kubelet
from pykubeadm.workflow import Runner

if TYPE_CHECKING:
    from pykubeadm.phases.join import JoinData

# The config API and the phases (~0.3 s of imports) are imported when a command runs, so that `join` can start the
# kubelet's interpreter first (phases/kubeletservice.prewarm_kubelet).

__all__ = ["build_join_data", "command"]

_WORKER_DONE = """
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
"""

_CONTROL_PLANE_DONE = """
This node has joined the cluster and a new control plane instance was created:

* Certificate signing request was sent to apiserver and approval was received.
* The Kubelet was informed of the new secure connection details.
* Control plane label and taint were applied to the new node.
* The Kubernetes control plane instances scaled up.
{etcd}

To start administering your cluster from this node, you need to run the following as a regular user:

	mkdir -p $HOME/.kube
	sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
	sudo chown $(id -u):$(id -g) $HOME/.kube/config

Run 'kubectl get nodes' to see this node join the cluster.
"""


def build_join_data(state: CliState, flags: dict[str, Any], out: Any = click.echo) -> JoinData:
    from pykubeadm.api import load_join_config
    from pykubeadm.phases.join import JoinData

    config_file = flags.get("config")
    cfg = load_join_config(Path(config_file) if config_file else None, flags)
    real = Layout(root=state.root_dir)
    layout = real
    dry_run = bool(flags.get("dry-run")) or cfg.dry_run
    if dry_run:
        layout = dry_run_layout("join", real.cert_dir, out)
    patches = flags.get("patches") or (cfg.patches.directory if cfg.patches else "")
    ignore = {
        e.lower() for e in [*flags.get("ignore-preflight-errors", ()), *cfg.node_registration.ignore_preflight_errors]
    }
    return JoinData(
        cfg=cfg,
        layout=layout,
        real_layout=real,
        out=out,
        dry_run=dry_run,
        ignore_preflight_errors=frozenset(ignore),
        patches_dir=Path(patches) if patches else None,
    )


def _flags(params: dict[str, Any], ctx: click.Context) -> dict[str, Any]:
    endpoints = params.pop("api_server_endpoint", ()) or ()
    flags = flags_from_click(params, ctx)
    if endpoints:
        if len(endpoints) > 1:
            click.echo(
                "[preflight] WARNING: More than one API server endpoint supplied on command line "
                f"{list(endpoints)}. Using the first one.",
                err=True,
            )
        flags["api-server-endpoint"] = endpoints[0]
    return flags


def _invoke_phase(runner: Runner[JoinData], path: str, params: dict[str, Any]) -> None:
    ctx = click.get_current_context()
    state = ctx.find_object(CliState)
    assert state is not None
    flags = _flags(dict(params), ctx)
    Runner(runner.phases, lambda: build_join_data(state, flags)).run_phase(path)


def _join_phases() -> list[Any]:
    from pykubeadm.phases.join import join_phases

    return join_phases()


@cache
def _phase_commands() -> click.Group:
    return Runner.without_data(_join_phases()).phase_commands(join_option, _invoke_phase)


class _JoinCommand(click.Command):
    """`join` takes an optional positional endpoint with options anywhere (like cobra), and `join phase …` runs the
    phase sub-commands; click groups can't have both, so `phase` is dispatched by hand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["join_args"] = list(args)
        if args and args[0] == "phase":
            ctx.meta["join_phase"] = True
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.meta.get("join_phase"):
            args = ctx.meta["join_args"][1:]
            phases = _phase_commands()
            with phases.make_context("phase", args, parent=ctx) as sub:
                return phases.invoke(sub)
        return super().invoke(ctx)

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        Runner.without_data(_join_phases()).write_help(
            formatter, "Run this on any machine you wish to join an existing cluster", "join [api-server-endpoint]"
        )
        formatter.write_paragraph()
        formatter.write_text("Use 'join phase <name> --help' for a single phase.")


def _join_options(f: Any) -> Any:
    for name in reversed(JOIN_FLAGS):
        f = join_option(name)(f)
    return f


@click.command(cls=_JoinCommand, name="join", context_settings={"allow_interspersed_args": True})
@click.argument("api_server_endpoint", nargs=-1, required=False)
@_join_options
@click.pass_context
def command(ctx: click.Context, **params: Any) -> None:
    """Run this on any machine you wish to join an existing cluster."""
    state = ctx.find_object(CliState)
    assert state is not None
    flags = _flags(dict(params), ctx)
    if kubelet_will_start(bool(flags.get("dry-run")), flags.get("skip-phases", ())):
        prewarm_kubelet(Layout(root=state.root_dir), control_plane=bool(flags.get("control-plane")))
    runner = Runner(_join_phases(), lambda: build_join_data(state, flags))
    skip = list(flags.get("skip-phases", ())) or list(runner.data.cfg.skip_phases)
    if not kubelet_will_start(runner.data.dry_run, skip):  # the config file said so
        discard_prewarmed_kubelets()
    data = runner.run(skip)
    if data.control_plane:
        external = data.state.get("init_data") is not None and data.state["init_data"].cfg.cluster.etcd.external
        etcd = "" if external else "* A new etcd member was added to the local/stacked etcd cluster."
        click.echo(_CONTROL_PLANE_DONE.format(etcd=etcd))
    else:
        click.echo(_WORKER_DONE)
