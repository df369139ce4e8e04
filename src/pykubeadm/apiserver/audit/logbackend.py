"""The audit log backend (--audit-log-path, -format, -maxsize, -maxbackup, -maxage): one line per event, written
as it happens, to stdout ("-") or a file rotated as kube-apiserver's lumberjack rotates it: when a write would take
the file past maxsize megabytes it is renamed `<name>-<UTC time>.<ext>` (`audit-2026-01-02T15-04-05.000.log`) and a
new file started; beyond maxbackup old files (0 = keep all) or older than maxage days (0 = keep) are removed."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from pykubeadm.util import jsoncodec

__all__ = ["LogBackend", "legacy_line"]

_MB = 1024 * 1024
_STAMP = "%Y-%m-%dT%H-%M-%S"


def legacy_line(e: dict[str, Any]) -> str:
    """kube's `-format legacy` line."""
    user = e.get("user") or {}
    imp = e.get("impersonatedUser")
    ref = e.get("objectRef") or {}
    resp = e.get("responseStatus") or {}
    ts = e.get("stageTimestamp", "")
    return (
        f'{ts} AUDIT: id="{e.get("auditID", "")}" stage="{e.get("stage", "")}" ip="{",".join(e.get("sourceIPs") or [])}" '
        f'method="{e.get("verb", "")}" user="{user.get("username", "")}" groups="{",".join(user.get("groups") or [])}" '
        f'as="{imp.get("username", "") if imp else "<self>"}" '
        f'asgroups="{",".join(imp.get("groups") or []) if imp else "<lookup>"}" '
        f'user-agent="{e.get("userAgent", "")}" namespace="{ref.get("namespace", "")}" uri="{e.get("requestURI", "")}" '
        f'response="{resp.get("code", "<deferred>") if resp else "<deferred>"}"\n'
    )


def _json_line(e: dict[str, Any]) -> bytes:
    return jsoncodec.dumps(e) + b"\n"


class LogBackend:
    def __init__(self, path: str, fmt: str = "json", max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0):
        self.path = path
        self._encode: Callable[[dict[str, Any]], bytes] = (
            (lambda e: legacy_line(e).encode()) if fmt == "legacy" else _json_line
        )
        self.max_bytes = max_size_mb * _MB
        self.max_backups = max_backups
        self.max_age_days = max_age_days
        self._out: BinaryIO | None = None
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self._size = 0
        self._own = path != "-"
        if not self._own:
            self._out = sys.stdout.buffer
        else:
            self._open()

    def _open(self) -> None:
        p = Path(self.path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._out = os.fdopen(fd, "ab", buffering=0)
        self._size = p.stat().st_size

    def _rotate(self) -> None:
        assert self._out is not None
        self._out.close()
        p = Path(self.path)
        now = dt.datetime.now(dt.UTC)
        while True:  # two rotations within a millisecond get distinct names
            stamp = now.strftime(_STAMP) + f".{now.microsecond // 1000:03d}"
            target = p.with_name(f"{p.stem}-{stamp}{p.suffix}")
            if not target.exists():
                break
            now += dt.timedelta(milliseconds=1)
        p.rename(target)
        self._open()
        self._prune()

    def _backups(self) -> list[Path]:
        p = Path(self.path)
        return sorted((b for b in p.parent.glob(f"{p.stem}-*{p.suffix}") if b != p), key=lambda b: b.name, reverse=True)

    def _prune(self) -> None:
        backups = self._backups()
        doomed: list[Path] = []
        if self.max_backups > 0:
            doomed += backups[self.max_backups :]
        if self.max_age_days > 0:
            cutoff = dt.datetime.now().timestamp() - self.max_age_days * 86400
            doomed += [b for b in backups if b.stat().st_mtime < cutoff]
        for b in set(doomed):
            b.unlink(missing_ok=True)

    def __call__(self, event: dict[str, Any]) -> None:
        """Queue the event's line; the lines queued during one turn of the event loop go out in one write at its
        end (outside a loop: at once). Writing never waits for the disk to sync, as kube's blocking log backend."""
        self._pending.append(self._encode(event))
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        lines, self._pending = self._pending, []
        if not lines or self._out is None:
            return
        if self._own and self.max_bytes:
            for line in lines:  # rotation is decided line by line
                if self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                self._out.write(line)
                self._size += len(line)
            return
        data = b"".join(lines)
        self._out.write(data)
        self._size += len(data)
        if not self._own:
            self._out.flush()

    def close(self) -> None:
        self.flush()
        if self._own and self._out is not None:
            self._out.close()
            self._out = None
