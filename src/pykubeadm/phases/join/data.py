"""The run data of the `join` workflow, and the lazily discovered cluster it joins (TLS-bootstrap kubeconfig).

Discovery runs once, on first use, before any file is written, so a failed discovery leaves the node untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubeadm.layout import Layout

if TYPE_CHECKING:
    from pykubeadm.api import JoinConfiguration

__all__ = ["JoinData"]


@dataclass
class JoinData:
    cfg: JoinConfiguration
    layout: Layout
    real_layout: Layout
    out: Callable[[str], None] = print
    dry_run: bool = False
    ignore_preflight_errors: frozenset[str] = frozenset()
    patches_dir: Path | None = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def control_plane(self) -> bool:
        return self.cfg.control_plane is not None
