"""Entering a lab node's network and UTS namespaces, kept as bind-mounted namespace files in one directory.

A node of a network-namespace lab (lab.network) is a directory holding `net` and `uts`: files on which the node's
namespaces are mounted. Whatever runs as the node enters both before it runs: a command the lab forks (lab.forkcli),
a warm kubelet or command the kubelet zygote forks (kubelet.builtin.zygote), a command started as a new process (behind
`nsenter_prefix`). Everything they start in turn inherits the namespaces, as processes on a machine do.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["KINDS", "enter", "entered", "nsenter_prefix", "unmount"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUTS = 0x04000000
_MNT_DETACH = 2
#: The namespace files of a node directory, with their setns(2) types.
KINDS = (("net", _CLONE_NEWNET), ("uts", _CLONE_NEWUTS))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, kind: int, what: str) -> None:
    if _libc().setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns {what}: {os.strerror(err)}")


def _enter_fds(fds: list[tuple[int, int, str]]) -> None:
    for fd, kind, what in fds:
        _setns(fd, kind, what)


def _open(paths: list[tuple[str, int]]) -> list[tuple[int, int, str]]:
    opened: list[tuple[int, int, str]] = []
    try:
        for path, kind in paths:
            opened.append((os.open(path, os.O_RDONLY | os.O_CLOEXEC), kind, path))
    except OSError:
        for fd, _, _ in opened:
            os.close(fd)
        raise
    return opened


def enter(ns_dir: str | Path) -> None:
    """Move the calling thread into the namespaces of `ns_dir` for good (a process that runs as the node)."""
    fds = _open([(os.path.join(ns_dir, name), kind) for name, kind in KINDS])
    try:
        _enter_fds(fds)
    finally:
        for fd, _, _ in fds:
            os.close(fd)


@contextlib.contextmanager
def entered(ns_dir: str | Path | None) -> Iterator[None]:
    """The calling thread in the namespaces of `ns_dir` for the block (sockets it makes and processes it starts stay
    there), back in its own after; nothing with None."""
    if ns_dir is None:
        yield
        return
    own = _open([(f"/proc/thread-self/ns/{name}", kind) for name, kind in KINDS])
    try:
        enter(ns_dir)
        try:
            yield
        finally:
            _enter_fds(own)
    finally:
        for fd, _, _ in own:
            os.close(fd)


def nsenter_prefix(ns_dir: str | Path | None) -> list[str]:
    """The command line prefix that runs a program in the namespaces of `ns_dir` (util-linux nsenter); [] for None."""
    if ns_dir is None:
        return []
    return ["nsenter", *(f"--{name}={os.path.join(ns_dir, name)}" for name, _ in KINDS), "--"]


def unmount(path: str | Path) -> bool:
    """Detach the mount at `path` (a namespace file); whether there was one."""
    if _libc().umount2(os.fsencode(str(path)), _MNT_DETACH) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
        return False
    raise OSError(err, f"umount {path}: {os.strerror(err)}")
