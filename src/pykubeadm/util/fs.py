"""File helpers shared by every writer: atomic writes with kubeadm's modes, directory creation, a process's standard
streams redirected to a log file.

Every file that holds a key or a credential goes through `write_file_atomic` (temp file in the same directory, fsync,
rename, directory fsync), so a crash never leaves a half-written key or kubeconfig behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pykubeadm import constants as c

__all__ = ["ensure_dir", "write_file_atomic"]


def ensure_dir(path: Path, mode: int = c.DIR_MODE) -> None:
    """Create `path` and missing parents with `mode` (existing directories keep theirs)."""
    path.mkdir(parents=True, exist_ok=True, mode=mode)


def write_file_atomic(path: Path, data: bytes | str, mode: int, dir_mode: int = c.DIR_MODE) -> None:
    """Write `data` to `path` atomically with permission `mode`, creating the parent with `dir_mode` if needed."""
    if isinstance(data, str):
        data = data.encode()
    ensure_dir(path.parent, dir_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def redirect_stdio(log: Path | str | None) -> None:
    """This process's stdout and stderr appended to `log` (kept when None), stdin from /dev/null: what a started
    process would get, for a forked or warm-started one."""
    if log is not None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
