"""Interactive exec into a lab Pod, as a person at a terminal does it: the stream stays open and every line typed is
answered at once. The official Python client (`kubernetes.stream`, WebSocket v5 and v4, with and without a TTY) and
kubectl 1.27 (SPDY) write one line at a time; v5's CLOSE of stdin ends `cat`, and over v4 (no CLOSE) the end of the
stream ends it."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_lab import Lab
from tests.e2e.test_pods import alive, processes_of, running_and_ready, wait_for

pytestmark = pytest.mark.e2e

POD = "shell"
V4, V5 = "v4.channel.k8s.io", "v5.channel.k8s.io"
KUBECTL_SPDY = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27"  # the last kubectl whose exec speaks SPDY
ANSWER = 1.0  # seconds a typed line may take to come back
START = 30.0  # seconds for the first answer: the command starts (nsenter, sh) on a busy machine


@pytest.fixture(scope="module")
def lab(shared_lab: Lab) -> Lab:
    """The e2e suites' shared lab (tests/e2e/conftest.py, which deletes the Pod after the module), with the Pod."""
    shared_lab.kubectl("run", POD, "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    wait_for(lambda: running_and_ready(shared_lab, POD), 60, f"{POD} Running and Ready")
    return shared_lab


@pytest.fixture(scope="module")
def core(lab: Lab) -> Iterator[Any]:
    from kubernetes import client, config

    api_client = config.new_client_from_config(str(lab.admin))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def open_exec(core: Any, command: list[str], protocol: str, tty: bool = False) -> Any:
    """An exec stream of the official client's, kept open (stdin, stdout, stderr), on the given channel protocol."""
    from kubernetes.stream import stream

    resp = stream(
        core.connect_post_namespaced_pod_exec,
        POD,
        "default",
        command=command,
        stdin=True,
        stdout=True,
        stderr=not tty,
        tty=tty,
        _preload_content=False,
        _headers={"sec-websocket-protocol": protocol},
    )
    assert resp.subprotocol == protocol
    return resp


def answer(resp: Any, line: str, timeout: float = ANSWER) -> str:
    """Write `line` on stdin and wait at most `timeout` seconds for a line of stdout."""
    resp.write_stdin(line)
    return str(resp.readline_stdout(timeout=timeout))


@pytest.mark.parametrize("protocol", [V5, V4])
def test_sh_answers_each_line_while_the_stream_stays_open(core: Any, protocol: str) -> None:
    resp = open_exec(core, ["sh"], protocol)
    try:
        assert answer(resp, "echo started\n", START) == "started"
        for i in range(3):
            assert answer(resp, f"echo line {i}\n") == f"line {i}"
        resp.write_stdin("exit 7\n")
        resp.run_forever(timeout=30)
        assert resp.returncode == 7
    finally:
        resp.close()


def test_v5_close_of_stdin_ends_cat(core: Any) -> None:
    resp = open_exec(core, ["cat"], V5)
    try:
        assert answer(resp, "x\n", START) == "x"
        resp.close_channel(0)  # CLOSE (255) of channel 0: cat reads EOF
        resp.run_forever(timeout=30)
        assert not resp.is_open()
        assert resp.returncode == 0  # the Status on the error channel: cat exited, with 0
    finally:
        resp.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_v4_cat_ends_with_the_stream(core: Any) -> None:
    """v4 has no CLOSE: the client ends the stream, and the kubelet stops what it started."""
    marker = f"exec-{uuid.uuid4().hex[:12]}"
    resp = open_exec(core, ["sh", "-c", "cat; :", marker], V4)  # `; :` keeps sh (and the marker) as cat's parent
    try:
        assert answer(resp, "x\n", START) == "x"
        shells = processes_of(marker)
        assert shells, "the exec'd shell is not running on the node"
        started = shells + [c for pid in shells for c in _children(pid)]
    finally:
        resp.close()
    wait_for(lambda: not any(alive(pid) for pid in started), 30, "the exec'd sh and cat to end with the stream")


@pytest.mark.parametrize("protocol", [V5, V4])
def test_tty_cat_echoes_each_line(core: Any, protocol: str) -> None:
    resp = open_exec(core, ["cat"], protocol, tty=True)
    try:
        for i in range(3):
            assert (
                answer(resp, f"tty {i}\n", START if i == 0 else ANSWER) == f"tty {i}\r"
            )  # the terminal's echo of what was typed
            assert str(resp.readline_stdout(timeout=ANSWER)) == f"tty {i}\r"  # cat's copy
    finally:
        resp.close()


class _Lines:
    """The lines a process writes, collected by a thread, each waited for with a deadline."""

    def __init__(self, pipe: Any):
        self._q: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=lambda: [self._q.put(line) for line in iter(pipe.readline, "")])
        self._thread.daemon = True
        self._thread.start()

    def next(self, timeout: float) -> str:
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return ""


@pytest.mark.skipif(not os.access(KUBECTL_SPDY, os.X_OK), reason="kubectl 1.27 (SPDY exec) is not installed")
def test_spdy_exec_answers_each_line_and_ends_when_stdin_closes(lab: Lab) -> None:
    argv = [KUBECTL_SPDY, "--kubeconfig", str(lab.admin), "exec", "-i", POD, "--", "sh"]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None
        lines = _Lines(proc.stdout)
        proc.stdin.write("echo started\n")
        proc.stdin.flush()
        assert lines.next(START) == "started\n"  # kubectl is up and connected, sh is running
        for i in range(3):
            proc.stdin.write(f"echo spdy {i}\n")
            proc.stdin.flush()
            assert lines.next(ANSWER) == f"spdy {i}\n"
        proc.stdin.close()  # kubectl half-closes the stdin stream: sh reads EOF and exits
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
