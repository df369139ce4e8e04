"""Filesystem figures as the kubelet's stats provider gives them (stats.k8s.io/v1alpha1 `FsStats`): capacity,
available bytes and inodes from statfs of the filesystem holding a path (cAdvisor's GetDirFsInfo: available is what an
unprivileged user may still write, `f_bavail`), used bytes as the caller measured them.

`image_fs_stats` is the runtime's image filesystem as the CRI stats provider builds it: ImageFsInfo names the
filesystem (its mountpoint) and the bytes and inodes the images use; statfs of that mountpoint gives its capacity and
what is available. Image garbage collection (kubelet.imagegc) and `/stats/summary`'s `runtime.imageFs` both read it.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubeadm.util.apitime import format_time, now_time

if TYPE_CHECKING:
    from pykubeadm.kubelet.runtimeapi import ImageService

__all__ = ["ImageFsError", "fs_stats", "image_fs_stats"]


class ImageFsError(Exception):
    """The runtime could not say where its images are, or that filesystem cannot be measured."""


def fs_stats(
    path: str | Path, *, used_bytes: int | None = None, inodes_used: int | None = None, time: str | None = None
) -> dict[str, Any]:
    """FsStats of the filesystem holding `path`; `usedBytes`/`inodesUsed` default to the whole filesystem's use."""
    st = os.statvfs(path)
    capacity, available = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    used = used_bytes if used_bytes is not None else (st.f_blocks - st.f_bfree) * st.f_frsize
    inodes_total, inodes_free = st.f_files, st.f_ffree
    return {
        "time": time or now_time(),
        "availableBytes": available,
        "capacityBytes": capacity,
        "usedBytes": used,
        "inodesFree": inodes_free,
        "inodes": inodes_total,
        "inodesUsed": inodes_used if inodes_used is not None else inodes_total - inodes_free,
    }


async def image_fs_stats(runtime: ImageService) -> dict[str, Any]:
    """The image filesystem's FsStats (ImageFsInfo + statfs of its mountpoint); ImageFsError when there is none."""
    info = await runtime.image_fs_info()
    if not info.image_filesystems:
        raise ImageFsError(f"missing image stats: {info}")
    usage = info.image_filesystems[0]
    mountpoint = usage.fs_id.mountpoint
    if not mountpoint:
        raise ImageFsError(f"the runtime's image filesystem has no mountpoint: {usage}")
    when = (
        format_time(datetime.datetime.fromtimestamp(usage.timestamp / 1e9, datetime.UTC)) if usage.timestamp else None
    )
    try:
        return fs_stats(
            mountpoint,
            used_bytes=usage.used_bytes.value if usage.HasField("used_bytes") else None,
            inodes_used=usage.inodes_used.value if usage.HasField("inodes_used") else None,
            time=when,
        )
    except OSError as e:
        raise ImageFsError(f"failed to get the image filesystem info of {mountpoint}: {e.strerror}") from e
