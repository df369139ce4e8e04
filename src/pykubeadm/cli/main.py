"""The `pykubeadm` command: global flags, lazily loaded sub-commands, and the one exit point mapping errors to codes.

Also what every sub-command shares: its global flags (`current_state`) and the dry-run root (`dry_run_layout`).

Each top-level command lives in its own module `pykubeadm.cli.<name>` exposing a click command named `command`;
`COMMANDS` maps command names to those modules so `pykubeadm --help` does not import the whole control plane.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.util import gctuning

__all__ = ["COMMANDS", "CliState", "current_state", "dry_run_layout", "main", "pass_state"]

#: command name → (module, short help). Modules are imported only when the command runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("pykubeadm.cli.init", "Run this command in order to set up the Kubernetes control plane"),
    "join": ("pykubeadm.cli.join", "Run this on any machine you wish to join an existing cluster"),
    "reset": (
        "pykubeadm.cli.reset",
        "Performs a best effort revert of changes made to this host by 'kubeadm init' or 'kubeadm join'",
    ),
    "upgrade": ("pykubeadm.cli.upgrade", "Upgrade your cluster smoothly to a newer version with this command"),
    "token": ("pykubeadm.cli.token", "Manage bootstrap tokens"),
    "certs": ("pykubeadm.cli.certs", "Commands related to handling Kubernetes certificates"),
    "kubeconfig": ("pykubeadm.cli.kubeconfig", "Kubeconfig file utilities"),
    "config": (
        "pykubeadm.cli.config",
        "Manage configuration for a kubeadm cluster persisted in a ConfigMap in the cluster",
    ),
    "version": ("pykubeadm.cli.version", "Print the version of kubeadm"),
    "lab": ("pykubeadm.cli.lab", "Run a local multi-node cluster on loopback addresses"),
    "component": ("pykubeadm.cli.component", "Run a built-in Kubernetes component (kube-apiserver, kubelet, ...)"),
}


class CliState:
    """Global flags shared by every sub-command (`--root-dir`, `-v`)."""

    def __init__(self, root_dir: Path, verbosity: int):
        self.root_dir = root_dir
        self.verbosity = verbosity


pass_state = click.make_pass_decorator(CliState, ensure=False)


def current_state() -> CliState:
    """The running command's global flags; the defaults (root "/", -v 0) when a sub-command is invoked on its own."""
    state = click.get_current_context().find_object(CliState)
    return state if state is not None else CliState(Path("/"), 0)


def dry_run_layout(command: str, cert_dir: str, out: Callable[[str], None]) -> Layout:
    """The layout of `<command> --dry-run`: a temporary directory stands in for the node's root (kubeadm's dry-run dir,
    $KUBEADM_<COMMAND>_DRYRUN_DIR when set)."""
    import tempfile

    tmp = os.environ.get(c.DRYRUN_DIR_ENV[command]) or tempfile.mkdtemp(prefix=f"kubeadm-{command}-dryrun")
    out(f"[dryrun] Using a temporary directory instead of the node's root: {tmp}")
    return Layout(root=Path(tmp), cert_dir=cert_dir)


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[cmd_name][0])
        return module.command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Available Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.option(
    "--root-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar=c.ROOT_DIR_ENV,
    default="/",
    show_default=True,
    help="Root directory of the node: every well-known path (/etc/kubernetes, /var/lib/kubelet, ...) resolves under it.",
)
@click.option("-v", "--v", "verbosity", type=int, default=0, help="number for the log level verbosity")
@click.pass_context
def cli(ctx: click.Context, root_dir: Path, verbosity: int) -> None:
    """pykubeadm: easily bootstrap a secure Kubernetes cluster."""
    logging.basicConfig(
        level=logging.DEBUG if verbosity >= 5 else logging.INFO if verbosity >= 1 else logging.WARNING,
        format="%(levelname).1s%(asctime)s %(name)s] %(message)s",
    )
    ctx.obj = CliState(root_dir=root_dir.absolute(), verbosity=verbosity)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn errors into kubeadm's exit codes (1 default, 2 preflight, 3 validation)."""
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run the CLI in this process (as `main`, for a forked child that ends with os._exit); its exit code."""
    gctuning.for_startup()
    try:
        code = _run(argv)
    except SystemExit as e:  # a command's own sys.exit()
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    gctuning.before_exit()  # shutdown would spend 50-80 ms collecting objects that live until exit
    return code


def _run(argv: list[str] | None) -> int:
    try:
        cli.main(
            args=_hoist_verbosity(sys.argv[1:] if argv is None else argv), prog_name="pykubeadm", standalone_mode=False
        )
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.Abort:
        return 1
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except KubeadmError as e:
        if _verbosity() >= 5:
            import traceback

            traceback.print_exc()
        click.echo(str(e), err=True)
        if _verbosity() < 5:
            click.echo("To see the stack trace of this error execute with --v=5 or higher", err=True)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


_V_FLAGS = ("-v", "--v")


def _hoist_verbosity(args: list[str]) -> list[str]:
    """kubeadm's `-v/--v` is a persistent flag: accept it after the subcommand too (`join ... --v=5`, `-v5`) by moving
    it in front. `component` commands parse their own `--v` (kube-apiserver, kubelet, ...) and are left alone."""
    if _command_word(args) == "component":
        return args
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in _V_FLAGS and i + 1 < len(args) and args[i + 1].lstrip("-").isdigit():
            hoisted += ["--v", args[i + 1]]
            i += 2
            continue
        if arg.startswith(("--v=", "-v=")) or (arg.startswith("-v") and arg[2:].isdigit()):
            hoisted += ["--v", arg.split("=", 1)[1] if "=" in arg else arg[2:]]
        else:
            rest.append(arg)
        i += 1
    return hoisted + rest


def _command_word(args: list[str]) -> str | None:
    """The sub-command's name: the first word that is neither a global flag nor a global flag's value."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--root-dir", *_V_FLAGS):
            i += 2
            continue
        if not arg.startswith("-"):
            return arg
        i += 1
    return None


def _verbosity() -> int:
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(CliState) if ctx else None
    if state is not None:
        return state.verbosity
    for i, arg in enumerate(sys.argv):
        if arg.startswith(("--v=", "-v=")):
            return int(arg.split("=", 1)[1] or 0)
        if arg in ("-v", "--v") and i + 1 < len(sys.argv) and sys.argv[i + 1].isdigit():
            return int(sys.argv[i + 1])
    return int(os.environ.get("PYKUBEADM_V", "0") or 0)
