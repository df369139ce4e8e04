"""hostPath volumes' type checks, as the kubelet's hostPath plugin makes them: DirectoryOrCreate and FileOrCreate
create what is missing, Directory and File must exist. Used by `volumes` (API Pods) and the built-in pod worker
(static Pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykubeadm.layout import Layout

__all__ = ["MountError", "prepare_host_paths"]


class MountError(Exception):
    """A hostPath volume cannot be prepared (CreateContainerConfigError-like)."""


def prepare_host_paths(pod_spec: Mapping[str, Any], layout: Layout) -> None:
    """Create DirectoryOrCreate (0755) and FileOrCreate (0644) hostPaths; check Directory/File/Socket types exist."""
    for vol in pod_spec.get("volumes") or []:
        hp = vol.get("hostPath")
        if not hp:
            continue
        path = layout.host(hp["path"])
        kind = hp.get("type") or ""
        if kind == "DirectoryOrCreate" or (kind == "" and not path.exists()):
            # type "": no check, but the runtime (containerd's CRI, like Docker) creates a missing source as a dir
            path.mkdir(parents=True, exist_ok=True, mode=0o755)
        elif kind == "FileOrCreate":
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                path.touch(mode=0o644)
        elif kind == "Directory" and not path.is_dir():
            raise MountError(f"hostPath type check failed: {hp['path']} is not a directory")
        elif kind == "File" and not path.is_file():
            raise MountError(f"hostPath type check failed: {hp['path']} is not a file")
