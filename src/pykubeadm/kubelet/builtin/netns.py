"""A Pod sandbox's network namespace as a file: made, recognised and removed.

As containerd with `netns_mounts_under_state_dir`, a Pod's network namespace is pinned by bind-mounting its nsfs
file on a file of its own (`<pod dir>/netns`), so that it outlives every process in it (a restarted kubelet finds it
again) and CNI plugins get a path (CNI_NETNS). `create` makes it with util-linux's `unshare --net=FILE`, `remove`
unmounts (lazily) and deletes the file, `is_netns` tells a pinned namespace from a stale file (after a reboot).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["NetnsError", "create", "is_netns", "remove"]

#: umount2's MNT_DETACH: a namespace a process still holds goes once it is gone.
_MNT_DETACH = 2
#: ioctl_ns(2): the type of a namespace file descriptor, and a network namespace's type.
_NS_GET_NSTYPE = 0xB703
_CLONE_NEWNET = 0x40000000


class NetnsError(OSError):
    """The network namespace file cannot be made or removed; the message names the file."""


def is_netns(path: Path) -> bool:
    """True when `path` is a network namespace pinned there (not merely a file left behind): nsfs answers the
    NS_GET_NSTYPE ioctl with CLONE_NEWNET (os.path.ismount cannot tell: it answers False for every file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, _NS_GET_NSTYPE) == _CLONE_NEWNET
    except OSError:
        return False
    finally:
        os.close(fd)


def create(path: Path) -> None:
    """A new network namespace pinned at `path` (which must not exist yet); its loopback comes up through CNI."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise NetnsError(f'cannot create the network namespace {path}: no "unshare" command (util-linux)')
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o444)
    os.close(fd)
    res = subprocess.run([unshare, f"--net={path}", "true"], capture_output=True, text=True, timeout=30, check=False)
    if res.returncode != 0 or not is_netns(path):
        path.unlink(missing_ok=True)
        raise NetnsError(f"cannot create the network namespace {path}: {res.stderr.strip() or 'not mounted'}")


def remove(path: Path) -> None:
    """Unmount and delete `path` (nothing when it does not exist)."""
    if is_netns(path):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.umount2(str(path).encode(), _MNT_DETACH) != 0:
            err = ctypes.get_errno()
            raise NetnsError(err, f"cannot unmount the network namespace {path}: {os.strerror(err)}")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
