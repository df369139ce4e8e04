"""The run data of the `reset` workflow: the ResetConfiguration, the node's layout, and what was read from the cluster.

Built once by `pykubeadm.cli.reset` (before the first phase runs, so the kubeadm-config lines come before the prompt,
as in kubeadm). `cluster` is None when the cluster could not be read; phases then fall back to what is on disk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubeadm.api import ClusterConfiguration, ResetConfiguration
from pykubeadm.layout import Layout

__all__ = ["ResetData", "ask_stdin", "read_stdin_line"]


def read_stdin_line() -> str:
    """One line from stdin without its newline ("" at end of input), like bufio.Scanner.Scan + Text."""
    line = sys.stdin.readline()
    return line.rstrip("\r\n")


def ask_stdin(prompt: str) -> str:
    """Write `prompt` (no newline) to stdout and read the answer line from stdin."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    return read_stdin_line()


@dataclass
class ResetData:
    """Everything the reset phases need; `layout` is the node's real layout with the effective certificates dir."""

    cfg: ResetConfiguration
    layout: Layout
    kubeconfig: Path
    out: Callable[[str], None] = print
    #: Prints the confirmation prompt (no newline) and returns the answer line.
    ask: Callable[[str], str] = ask_stdin
    cluster: ClusterConfiguration | None = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def dry_run(self) -> bool:
        return self.cfg.dry_run

    @property
    def force(self) -> bool:
        return self.cfg.force

    @property
    def cleanup_tmp_dir(self) -> bool:
        return self.cfg.cleanup_tmp_dir

    @property
    def cert_dir(self) -> str:
        """certificatesDir as a node path (what kubeadm prints)."""
        return self.layout.cert_dir

    @property
    def ignore_preflight_errors(self) -> frozenset[str]:
        return frozenset(e.lower() for e in self.cfg.ignore_preflight_errors)
