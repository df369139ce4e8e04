"""`pykubeadm component NAME flags…`: run a built-in Kubernetes component in the foreground.

Static Pod manifests name an image; the built-in kubelet maps the image to `pykubeadm component <name>` and passes the
manifest's command/args as flags. Each component's flag parsing lives with the component: module `COMPONENTS[name]`
exposes a click command `command`, imported only when that component starts.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["COMPONENTS", "command"]

#: component name → module exposing `command` (a click.Command parsing the component's real flags).
COMPONENTS: dict[str, str] = {
    "kube-apiserver": "pykubeadm.apiserver.cli",
    "kube-controller-manager": "pykubeadm.controllers.cli",
    "kube-scheduler": "pykubeadm.scheduler.cli",
    "kubelet": "pykubeadm.kubelet.cli",
}


class _Components(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMPONENTS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMPONENTS.get(cmd_name)
        if module is None:
            return None
        cmd: click.Command = importlib.import_module(module).command
        cmd.name = cmd_name
        return cmd


@click.group(cls=_Components, name="component")
def command() -> None:
    """Run a built-in Kubernetes component (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet)."""
