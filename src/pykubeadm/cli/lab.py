"""`pykubeadm lab up|join|status|down`: a local multi-node cluster on loopback addresses (see pykubeadm.lab)."""

from __future__ import annotations

from pathlib import Path

import click

from pykubeadm.lab.cluster import lab_down, lab_join, lab_status, lab_up

__all__ = ["command"]

_DIR = click.option(
    "--dir",
    "lab_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="lab",
    show_default=True,
    help="Directory holding one root directory per node.",
)


@click.group(name="lab")
def command() -> None:
    """Run a local multi-node cluster: a control plane and workers on 127.0.10.x, each node in its own root dir."""


@command.command("up")
@_DIR
@click.option("--workers", type=int, default=2, show_default=True, help="Number of worker nodes.")
@click.option(
    "--datastore",
    type=click.Choice(["sqlite", "etcd"]),
    default="sqlite",
    show_default=True,
    help="sqlite: the built-in apiserver's embedded store; etcd: a real etcd static Pod.",
)
def up(lab_dir: Path, workers: int, datastore: str) -> None:
    """Create the lab: `init` on the control plane, `join` on every worker, wait until all Nodes are Ready."""
    lab_up(lab_dir, workers, datastore, click.echo)


@command.command("join")
@_DIR
def join(lab_dir: Path) -> None:
    """Add one worker node to the lab."""
    node = lab_join(lab_dir, click.echo)
    click.echo(f"[lab] {node.name} is Ready")


@command.command("status")
@_DIR
def status(lab_dir: Path) -> None:
    """Show the lab's nodes, their kubelets and readiness."""
    rows = lab_status(lab_dir)
    if not rows:
        click.echo(f"no lab in {lab_dir.absolute()}")
        return
    click.echo(f"{'NODE':<20} {'ADDRESS':<14} {'KUBELET':<12} STATUS")
    for r in rows:
        pid = f"pid {r.kubelet_pid}" if r.kubelet_pid else "stopped"
        click.echo(f"{r.node.name:<20} {r.node.address:<14} {pid:<12} {r.ready}")


@command.command("down")
@_DIR
def down(lab_dir: Path) -> None:
    """Reset every node and leave the lab directory empty."""
    lab_down(lab_dir, click.echo)
