"""`upgrade diff`: unified diffs between the static Pod manifests on disk and the ones a target version would produce.

`manifest_diff` is pure text work (difflib); `diff_static_pods` builds the new manifests in a temporary directory with
`pykubeadm.manifests` and diffs each against the file on the node.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.manifests import ClusterInputs
from pykubeadm.phases.upgrade.staticpods import write_new_manifests

__all__ = ["diff_static_pods", "manifest_diff"]


def manifest_diff(current: str, new: str, path: str, context_lines: int = 3) -> str:
    """The unified diff of one manifest (`--- <path>` / `+++ new manifest`), "" when they are equal."""
    lines = difflib.unified_diff(
        current.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=path,
        tofile="new manifest",
        n=context_lines,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def diff_static_pods(
    layout: Layout, inputs: ClusterInputs, manifests: Mapping[str, str], context_lines: int = 3
) -> str:
    """The diffs of every component in `manifests` (component → node path of its current manifest), in order."""
    out = []
    with tempfile.TemporaryDirectory(prefix="kubeadm-upgrade-diff") as tmp:
        write_new_manifests(Path(tmp), inputs, list(manifests), None)
        for component, node_path in manifests.items():
            current = layout.host(node_path)
            try:
                text = current.read_text()
            except OSError as err:
                raise KubeadmError(f"failed to read manifest {node_path}: {err.strerror}") from err
            out.append(manifest_diff(text, (Path(tmp) / f"{component}.yaml").read_text(), node_path, context_lines))
    return "".join(out)
