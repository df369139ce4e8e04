"""Deleting what kubeadm wrote, confined to the node's root dir: `clean_dir` (kubeadm's CleanDir), `remove_path`.

Every target is a node path mapped through `Layout.host()`. Before anything is removed the real path (symlinks
resolved) must be the root itself or below it: a symlink or a `..` pointing outside the node's root is refused with
an error naming the path, so reset can never delete anything outside the root. Entries inside a cleaned directory
are removed without following symlinks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pykubeadm.layout import Layout

__all__ = ["OutsideRootError", "clean_dir", "inside_root", "is_dir_empty", "remove_path"]


class OutsideRootError(OSError):
    """The path resolves outside the node's root directory."""


def inside_root(layout: Layout, node_path: str) -> Path:
    """The host path of `node_path`, checked to stay inside the node's root (OutsideRootError otherwise)."""
    host = layout.host(node_path)
    root = os.path.realpath(layout.root)
    real = os.path.realpath(host)
    if root != "/" and real != root and not real.startswith(root + os.sep):
        raise OutsideRootError(f"{node_path} resolves to {real}, outside the node's root directory {root}")
    return host


def _remove_entry(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def clean_dir(layout: Layout, node_path: str) -> None:
    """Remove everything in a directory but not the directory itself; a missing directory is not an error."""
    host = inside_root(layout, node_path)
    if not host.exists():
        return
    if host.is_symlink():
        host = Path(os.path.realpath(host))
    for entry in sorted(host.iterdir()):
        _remove_entry(entry)


def remove_path(layout: Layout, node_path: str) -> None:
    """Remove a file or a whole directory (os.RemoveAll); missing is fine. A symlink is removed, not followed."""
    host = layout.host(node_path)
    if host.is_symlink():
        inside_root(layout, str(Path(node_path).parent))
        host.unlink()
        return
    host = inside_root(layout, node_path)
    if host.exists():
        _remove_entry(host)


def is_dir_empty(layout: Layout, node_path: str) -> bool:
    """True for an empty (or missing) directory."""
    host = layout.host(node_path)
    try:
        return not any(host.iterdir())
    except OSError:
        return True
