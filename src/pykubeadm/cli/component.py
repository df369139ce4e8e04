"""`pykubeadm component NAME …flags`: run a built-in control-plane component the way the kubelet runs its image.

Each component's click command lives in its own package as `pykubeadm.<pkg>.cli:command`; register it in
`COMPONENTS` (one line) and it is imported only when run.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["COMPONENTS", "command"]

#: component name → module exposing a click command named `command`.
COMPONENTS: dict[str, str] = {
    "kube-apiserver": "pykubeadm.apiserver.cli",
    "kube-controller-manager": "pykubeadm.controllers.app.cli",
    "kube-scheduler": "pykubeadm.scheduler.cli",
    "kubelet": "pykubeadm.kubelet.cli",
    "kube-proxy": "pykubeadm.proxy.cli",
    "coredns": "pykubeadm.dns.cli",
    "kindnetd": "pykubeadm.kindnet.cli",
    "local-path-provisioner": "pykubeadm.localpath.cli",
    "metrics-server": "pykubeadm.metricsserver.cli",
}


class _LazyComponents(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMPONENTS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMPONENTS.get(cmd_name)
        if module is None:
            return None
        from pykubeadm.util.lazytls import import_aiohttp

        import_aiohttp()  # every component serves with aiohttp; this import skips loading the system CA bundle
        try:
            return importlib.import_module(module).command
        except ModuleNotFoundError as e:
            if e.name == module:
                raise click.UsageError(f"component {cmd_name!r} is not available yet ({module} is missing)") from None
            raise


@click.group("component", cls=_LazyComponents)
def command() -> None:
    """Run a built-in Kubernetes component (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet)."""
