"""`pykubeadm component kube-apiserver <flags>`: parse kube-apiserver's flags and run the server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from pykubeadm.apiserver.options import apiserver_flags, options_from_flags
from pykubeadm.layout import default_root

__all__ = ["command"]


@click.command("kube-apiserver", context_settings={"max_content_width": 120})
@apiserver_flags
@click.pass_context
def command(ctx: click.Context, **flags: Any) -> None:
    """Run the built-in Kubernetes API server (kube-apiserver flags)."""
    state = ctx.find_root().obj
    root = getattr(state, "root_dir", None) or default_root()
    if flags.get("v") is not None and flags["v"] >= 2:
        logging.getLogger().setLevel(logging.INFO if flags["v"] < 5 else logging.DEBUG)
    options = options_from_flags(flags, Path(root))
    from pykubeadm.apiserver.server import run

    run(options)
