"""One read of /proc/PID/stat: the fields after the command name, and whether the process is still running (a zombie
counts as gone), for the liveness checks of the kubelet's shims, `kubeadm reset` and the kubelet service; and a
process's arguments (/proc/PID/cmdline), for checking that a pid from a pid file is still the process it names.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["cmdline", "is_running", "stat_fields"]

_PROC = Path("/proc")


def stat_fields(pid: int, proc: Path = _PROC) -> list[str] | None:
    """The fields of /proc/PID/stat after `(comm)` ([0] state, [1] ppid, ... [19] start time), None if it is gone."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    _, sep, rest = stat.rpartition(")")
    fields = rest.split()
    return fields if sep and fields else None


def is_running(pid: int, proc: Path = _PROC) -> bool:
    """The process exists and is not a zombie (one read of its stat)."""
    fields = stat_fields(pid, proc)
    return fields is not None and fields[0] != "Z"


def cmdline(pid: int, proc: Path = _PROC) -> list[str] | None:
    """The process's arguments (undecodable bytes replaced), None if it is gone; [] for a zombie or a process between
    fork and exec's end."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")[:-1] if raw else []
