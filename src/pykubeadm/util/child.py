"""Stopping a child process we started: SIGTERM by its pid, SIGKILL after a grace period, always reaped; used by
the per-node containerd and the test registry."""

from __future__ import annotations

import contextlib
import subprocess

__all__ = ["terminate_child"]


def terminate_child(proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> int | None:
    """SIGTERM `proc` and wait up to `timeout` seconds, then SIGKILL; returns its exit status (None: no process)."""
    if proc is None:
        return None
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
    return proc.returncode
