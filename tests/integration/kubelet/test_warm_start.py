"""The kubelet's warm start (kubelet/service.prewarm_kubelet) with real processes: a warm kubelet started by
`start_kubelet` runs with the flags kubeadm-flags.env gives it and logs to the node's log file; one that is never
started leaves no process and no file, whether the command discards it or simply dies."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tests.integration.kubelet.kubelet_procs import (
    alive,
    cmdline,
    kubelet_healthz,
    node_files,
    wait_until,
    write_kubelet_files,
)

from pykubeadm.kubelet import service as kubeletservice
from pykubeadm.layout import Layout
from pykubeadm.testing.apiserver import free_port


@pytest.fixture
def layout(warm_layout: Layout) -> Layout:
    return warm_layout


def _waiting_on_stdin(pid: int) -> bool:
    """The warm kubelet has imported its modules and blocks reading its flags."""
    try:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def test_a_started_warm_kubelet_runs_with_the_flags_and_log_file_of_a_cold_one(layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout)
    warm = kubeletservice._prewarmed[str(layout.root)]
    wait_until(lambda: _waiting_on_stdin(warm.pid), 30, "the warm kubelet to wait for its flags")
    assert node_files(layout.root) == []  # it writes nothing while it waits
    port = free_port()
    write_kubelet_files(layout, port, "warm-node", " --not-a-kubelet-flag=1")

    assert kubeletservice.start_kubelet(layout) == f"pid {warm.pid}"

    assert kubeletservice.kubelet_pid(layout) == warm.pid  # reset finds it through the pid file
    assert cmdline(warm.pid)[-3:] == ["component", "kubelet", kubeletservice.FLAGS_FROM_STDIN]
    wait_until(lambda: kubelet_healthz(port), 20, "the warm kubelet's /healthz")
    log = layout.kubelet_log_file.read_text()
    args = " ".join(kubeletservice.kubelet_args(layout))
    assert f"flags: {args}" in log
    assert "ignoring flags the built-in kubelet does not implement: --not-a-kubelet-flag=1" in log
    assert "starting kubelet v" in log and "for node warm-node" in log

    assert kubeletservice.stop_kubelet(layout)
    wait_until(lambda: not alive(warm.pid), 10, "the kubelet to stop")


def test_a_warm_kubelet_that_is_not_started_is_discarded(layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout)
    warm = kubeletservice._prewarmed[str(layout.root)]
    wait_until(lambda: _waiting_on_stdin(warm.pid), 30, "the warm kubelet to wait for its flags")

    kubeletservice.discard_prewarmed_kubelets()

    assert not alive(warm.pid)
    assert node_files(layout.root) == []
    assert kubeletservice.kubelet_pid(layout) is None


def test_a_warm_kubelet_ends_by_itself_when_its_command_dies(layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout)
    warm = kubeletservice._prewarmed.pop(str(layout.root)).proc
    assert warm.stdin is not None
    wait_until(lambda: _waiting_on_stdin(warm.pid), 30, "the warm kubelet to wait for its flags")
    # what the kernel does when the command that started it is killed: its end of the pipe is closed
    warm.stdin.close()

    assert warm.wait(timeout=30) == 0
    assert node_files(layout.root) == []


def test_a_warm_kubelet_that_died_is_replaced_by_a_cold_start(layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout)
    warm = kubeletservice._prewarmed[str(layout.root)]
    os.kill(warm.pid, signal.SIGKILL)
    wait_until(lambda: not alive(warm.pid), 10, "the warm kubelet to die")  # a zombie, not reaped, as in real use
    port = free_port()
    write_kubelet_files(layout, port, "warm-node", " --not-a-kubelet-flag=1")

    how = kubeletservice.start_kubelet(layout)

    pid = int(how.removeprefix("pid "))
    assert pid != warm.pid
    # (right after a start /proc/PID/cmdline is empty until the kernel has finished the exec)
    args = wait_until(lambda: cmdline(pid), 10, "the cold kubelet's command line")
    assert kubeletservice.FLAGS_FROM_STDIN not in args  # type: ignore[operator]
    wait_until(lambda: kubelet_healthz(port), 20, "the cold kubelet's /healthz")
    # the same log line as a warm start
    assert f"flags: {' '.join(kubeletservice.kubelet_args(layout))}" in layout.kubelet_log_file.read_text()
