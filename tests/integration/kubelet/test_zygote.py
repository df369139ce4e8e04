"""The lab's kubelet zygote (kubelet/builtin/zygote.py) with real processes: a warm kubelet it forks is a session of its own,
nobody's child, shows the warm kubelet's command line and node root, writes nothing until it is started, then runs as
a kubelet started any other way; one never started ends at EOF; the zygote's socket is its owner's only; without a
zygote (none made, or it died) the warm kubelet is a new interpreter."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from tests.integration.kubelet.kubelet_procs import (
    alive,
    children_of,
    cmdline,
    kubelet_healthz,
    node_files,
    wait_until,
    write_kubelet_files,
)

from pykubeadm.kubelet import service as kubeletservice
from pykubeadm.kubelet.builtin import zygote
from pykubeadm.layout import Layout
from pykubeadm.testing.apiserver import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def layout(warm_layout: Layout) -> Layout:
    return warm_layout


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").partition("=")[::2] for e in raw if e)


def _zygote_pid(sock: Path) -> int:
    return int(sock.with_name(sock.name + ".pid").read_text())


def test_the_socket_is_its_owners_only_and_the_zygote_shows_it(sock: Path) -> None:
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    pid = _zygote_pid(sock)
    # (right after a start /proc/PID/cmdline is empty until the kernel has finished the exec)
    args = wait_until(lambda: cmdline(pid), 10, "the zygote's command line")
    assert args[-3:] == ["kubelet", zygote.ZYGOTE_FLAG, str(sock)]  # type: ignore[index]


def test_a_warm_kubelet_from_the_zygote_runs_as_any_kubelet_once_started(sock: Path, layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout, control_plane=False, zygote=sock)
    warm = kubeletservice._prewarmed[str(layout.root)]
    assert isinstance(warm, zygote.WarmKubelet)
    pid = warm.pid

    assert os.getsid(pid) == pid  # its own session: reset signals its process group
    assert _parent(pid) != _zygote_pid(sock)  # nobody's child (reparented), not the zygote's
    assert cmdline(pid) == kubeletservice.warm_kubelet_command(layout)
    assert cmdline(pid)[0] == sys.executable
    assert _environ(pid)["PYKUBEADM_ROOT_DIR"] == str(layout.root)
    assert node_files(layout.root) == []  # it writes nothing while it waits
    port = free_port()
    write_kubelet_files(layout, port, "zygote-node")

    assert kubeletservice.start_kubelet(layout) == f"pid {pid}"

    assert kubeletservice.kubelet_pid(layout) == pid  # reset finds it through the pid file and its command line
    wait_until(lambda: kubelet_healthz(port), 20, "the kubelet's /healthz")
    log = layout.kubelet_log_file.read_text()
    assert f"flags: {' '.join(kubeletservice.kubelet_args(layout))}" in log
    assert "for node zygote-node" in log
    zygote.stop(sock)  # the lab's zygote going away leaves the kubelets it made running
    assert not alive(_zygote_pid_or_zero(sock))
    assert kubelet_healthz(port)
    assert kubeletservice.stop_kubelet(layout)
    wait_until(lambda: not alive(pid), 10, "the kubelet to stop")


def _zygote_pid_or_zero(sock: Path) -> int:
    try:
        return _zygote_pid(sock)
    except OSError:
        return 0


def test_a_warm_kubelet_has_the_environment_and_directory_of_the_command_that_asked(
    sock: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYKUBEADM_TEST_ASKER", "join-shell")  # set after the zygote started: the asker's, not its own
    monkeypatch.chdir(tmp_path)
    kubeletservice.prewarm_kubelet(layout, zygote=sock)
    pid = kubeletservice._prewarmed[str(layout.root)].pid

    assert _environ(pid)["PYKUBEADM_TEST_ASKER"] == "join-shell"
    assert Path(f"/proc/{pid}/cwd").resolve() == tmp_path.resolve()


def test_a_warm_kubelet_that_fails_leaves_its_traceback_in_its_log(sock: Path, layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout, zygote=sock)
    warm = kubeletservice._prewarmed.pop(str(layout.root))
    log = layout.root / "kubelet.log"

    pid = warm.start(json.dumps({"args": 5, "log": str(log)}).encode() + b"\n")  # args that are no list

    wait_until(lambda: not alive(pid), 10, "the warm kubelet to fail")
    text = log.read_text()
    assert "Traceback" in text and "TypeError" in text


def test_a_warm_kubelet_never_started_ends_at_eof_having_written_nothing(sock: Path, layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout, zygote=sock)
    pid = kubeletservice._prewarmed[str(layout.root)].pid

    kubeletservice.discard_prewarmed_kubelets()

    wait_until(lambda: not alive(pid), 10, "the warm kubelet to end")
    assert node_files(layout.root) == []
    assert kubeletservice.kubelet_pid(layout) is None


def test_a_control_plane_warm_kubelet_forks_its_fork_server(sock: Path, layout: Layout) -> None:
    kubeletservice.prewarm_kubelet(layout, control_plane=True, zygote=sock)
    pid = kubeletservice._prewarmed[str(layout.root)].pid

    assert cmdline(pid)[-1] == kubeletservice.FORK_SERVER
    wait_until(lambda: children_of(pid), 10, "the fork server")


def test_without_a_zygote_the_warm_kubelet_is_a_new_interpreter(tmp_path: Path, layout: Layout) -> None:
    missing = tmp_path / "none" / zygote.SOCKET_NAME
    kubeletservice.prewarm_kubelet(layout, zygote=missing)
    assert not isinstance(kubeletservice._prewarmed[str(layout.root)], zygote.WarmKubelet)


def test_a_dead_zygote_is_not_asked(sock: Path, layout: Layout) -> None:
    pid = _zygote_pid(sock)
    os.kill(pid, 9)
    wait_until(lambda: not alive(pid), 10, "the zygote to die")

    assert zygote.WarmKubelet.request(sock, str(layout.root), False) is None  # refused: the socket has no listener
    kubeletservice.prewarm_kubelet(layout, zygote=sock)
    assert not isinstance(kubeletservice._prewarmed[str(layout.root)], zygote.WarmKubelet)


def test_stop_leaves_alone_a_process_that_is_not_the_zygote(tmp_path: Path) -> None:
    path = tmp_path / zygote.SOCKET_NAME
    path.with_name(path.name + ".pid").write_text(f"{os.getpid()}\n")  # a recycled pid: this test's own process

    assert zygote.stop(path) is False
    assert alive(os.getpid())


# --- a node's command, forked by the zygote (`lab join`) -------------------------------------------------------------

_BLOCKED_JOIN = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: 127.0.0.1:{port}
    token: abcdef.0123456789abcdef
    unsafeSkipCAVerification: true
nodeRegistration:
  name: zygote-node
"""


def _warm_kubelets(layout: Layout) -> list[int]:
    """The warm kubelets waiting for `layout`'s node root."""
    want = kubeletservice.warm_kubelet_command(layout)
    return [pid for pid in (int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()) if cmdline(pid) == want]


def test_a_command_from_the_zygote_runs_in_its_own_session_with_its_node_warm_kubelet(
    sock: Path, layout: Layout, tmp_path: Path
) -> None:
    """A join that waits for an API server no one serves: it shows the command line it was asked for, in a session of
    its own, nobody's child; the node's warm kubelet waits beside it; stopped, it reports a failure and its warm
    kubelet, never started, ends."""
    config = tmp_path / "join.yaml"
    config.write_text(_BLOCKED_JOIN.format(port=free_port()))
    log = tmp_path / "join.log"
    args = ["--root-dir", str(layout.root), "join", "--config", str(config), "--ignore-preflight-errors=all"]

    proc = zygote.Command.request(sock, args, log, ("pykubeadm.cli.join",), warm_kubelet=str(layout.root))

    assert proc is not None
    try:
        assert os.getsid(proc.pid) == proc.pid
        with pytest.raises(ChildProcessError):  # not this process's child: the zygote forked it twice
            os.waitpid(proc.pid, os.WNOHANG)
        assert cmdline(proc.pid) == [sys.executable, "-m", "pykubeadm", *args]
        assert "PYKUBEADM_ROOT_DIR" not in _environ(proc.pid)  # as the lab's forked joins: the node is --root-dir
        warm = wait_until(lambda: _warm_kubelets(layout), 20, "the node's warm kubelet")
        wait_until(lambda: "pre-flight checks" in log.read_text(), 20, "join's first line in its log")
        assert proc.poll() is None
    finally:
        proc.terminate()
    assert proc.wait() != 0
    for pid in warm:  # type: ignore[attr-defined]
        wait_until(lambda pid=pid: not alive(pid), 10, "the warm kubelet to end")
    assert node_files(layout.root) == []


def test_a_command_from_the_zygote_gives_its_exit_code_and_output(sock: Path, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    ok = zygote.Command.request(sock, ["version", "-o", "short"], log)
    assert ok is not None
    assert ok.wait() == 0
    assert log.read_text().strip().startswith("v1.33")

    root = tmp_path / "node"
    root.mkdir()
    failed = zygote.Command.request(sock, ["--root-dir", str(root), "join", "--config", str(tmp_path / "x.yaml")], log)
    assert failed is not None
    assert wait_until(lambda: failed.poll() is not None, 30, "the join to fail")
    assert failed.returncode == 1
    assert "x.yaml" in log.read_text()  # the command's own message, in the log before its end is reported


def _refused(sock: Path, request: dict) -> bool:
    """The zygote answers `request` with EOF: it started nothing."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(str(sock))
        raw.sendall(json.dumps(request).encode() + b"\n")
        raw.settimeout(10)
        return raw.recv(64) == b""


def test_the_zygote_refuses_a_malformed_command_and_goes_on(sock: Path, tmp_path: Path) -> None:
    assert _refused(sock, {"command": "version"})  # not a list of arguments
    assert zygote.preload(sock, ("pykubeadm.no_such_module", "json.tool")) is True

    log = tmp_path / "out.log"
    proc = zygote.Command.request(sock, ["version", "-o", "short"], log)
    assert proc is not None and proc.wait() == 0


def test_without_a_zygote_no_command_is_started(tmp_path: Path) -> None:
    missing = tmp_path / zygote.SOCKET_NAME
    assert zygote.Command.request(missing, ["version"], None) is None
    assert zygote.preload(missing, ("json",)) is False


def test_the_zygote_refuses_a_command_of_another_installation(sock: Path) -> None:
    """`lab join` from another venv or checkout than the lab's zygote runs its own code, not the zygote's."""
    assert _refused(sock, {"command": ["version"], "installation": [sys.executable, "/elsewhere/pykubeadm"]})
    assert _refused(sock, {"command": ["version"]})
