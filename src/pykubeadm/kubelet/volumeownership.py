"""A Pod's fsGroup on its volumes, as the kubelet's SetVolumeOwnership does it (pkg/volume/volume_linux.go).

Called by `volumes.PodVolumes` after it set up (or refreshed) an emptyDir, ConfigMap, Secret, projected or downward
API volume of a Pod whose securityContext has an fsGroup: every file and directory gets the fsGroup as its group and
the group's read (read-only volumes) or read-write bits; directories also the group's search bit and setgid, so files
made later inherit the group. `fsGroupChangePolicy: OnRootMismatch` skips the walk when the volume's root already has
the group and the bits; `Always` (the default) walks every time. hostPath volumes are never changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["set_volume_ownership"]

_RW, _RO, _EXEC = 0o660, 0o440, 0o110


def _mask(is_dir: bool, read_only: bool) -> int:
    mask = _RO if read_only else _RW
    return mask | stat.S_ISGID | _EXEC if is_dir else mask


def _root_matches(root: Path, fs_group: int, read_only: bool) -> bool:
    st = root.stat()
    mask = _mask(True, read_only)
    return st.st_gid == fs_group and stat.S_IMODE(st.st_mode) & mask == mask


def set_volume_ownership(root: Path, fs_group: int, *, read_only: bool, policy: str = "Always") -> None:
    """Give the volume at `root` to group `fs_group` (blocking; OSError when a file cannot be changed)."""
    if policy == "OnRootMismatch" and _root_matches(root, fs_group, read_only):
        return
    for dirpath, dirnames, filenames in os.walk(root):  # symlinks are not followed: their own group changes
        _own(dirpath, fs_group, read_only)
        for name in filenames:
            _own(os.path.join(dirpath, name), fs_group, read_only)
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)):
                os.lchown(os.path.join(dirpath, name), -1, fs_group)


def _own(path: str, fs_group: int, read_only: bool) -> None:
    st = os.lstat(path)
    os.lchown(path, -1, fs_group)
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(path, stat.S_IMODE(st.st_mode) | _mask(stat.S_ISDIR(st.st_mode), read_only))
