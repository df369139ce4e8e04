"""The lab's own daemons (relay, registry, the nodes' containerds) by the pid files it writes for them: a recorded pid
counts only while that process's command line still names what the lab started (so a reused pid is never signalled),
and stopping goes by that pid, never by a process name."""

from __future__ import annotations

from pathlib import Path

from pykubeadm.util.procstat import cmdline

__all__ = ["recorded_pid", "stop_recorded", "write_pid"]


def write_pid(path: Path, pid: int) -> None:
    path.write_text(f"{pid}\n")


def recorded_pid(path: Path, *args: str) -> int | None:
    """The pid in `path`, if that process runs with each of `args` among its arguments."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    running = cmdline(pid) or []
    return pid if all(a in running for a in args) else None


def stop_recorded(path: Path, *args: str, grace: float = 5.0) -> bool:
    """Stop the process recorded in `path` (see recorded_pid): SIGTERM, SIGKILL after `grace`; the file goes. True
    if one ran."""
    pid = recorded_pid(path, *args)
    path.unlink(missing_ok=True)
    if pid is None:
        return False
    from pykubeadm.phases.reset.processes import stop_processes

    stop_processes([pid], grace=grace)
    return True
