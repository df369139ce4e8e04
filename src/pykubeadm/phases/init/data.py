"""The run data of the `init` workflow: the defaulted, validated configuration plus where to write and how to report.

Built once by `pykubeadm.cli.init` from flags and `--config`; phases read it and never parse flags themselves.
In dry-run, `layout` points at a temporary directory (a full mirror of the node's tree), so nothing under the real
root is touched; `real_layout` is the node's own root, for reading what already exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm.layout import Layout

if TYPE_CHECKING:
    from pykubeadm.api import InitConfig

__all__ = ["InitData", "Reporter"]

#: Prints one line of progress output (`[certs] Generating "ca" certificate and key`).
Reporter = Callable[[str], None]


@dataclass
class InitData:
    cfg: InitConfig
    #: Where this run writes (the dry-run directory in dry-run mode).
    layout: Layout
    #: The node's real root (equal to `layout` unless dry-run).
    real_layout: Layout
    out: Reporter = print
    dry_run: bool = False
    ignore_preflight_errors: frozenset[str] = frozenset()
    skip_token_print: bool = False
    upload_certs: bool = False
    skip_certificate_key_print: bool = False
    patches_dir: Path | None = None
    #: --kubeconfig-dir (node path); None means /etc/kubernetes.
    kubeconfig_dir: str | None = None
    #: Filled by phases for later phases (e.g. external CA detection by certs, used by kubeconfig/control-plane).
    state: dict[str, object] = field(default_factory=dict)

    @property
    def external_ca(self) -> bool:
        return bool(self.state.get("external_ca", False))
