"""Liveness from one read of /proc/PID/stat: a running process, a zombie, a reaped one."""

import os
import subprocess
import sys

from pykubeadm.util.procstat import is_running, stat_fields


def test_running_zombie_and_gone() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        fields = stat_fields(p.pid)
        assert fields is not None and int(fields[1]) == os.getpid()  # [1] is the parent pid
        assert is_running(p.pid)
    finally:
        assert p.stdin is not None
        p.stdin.close()
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
    assert stat_fields(p.pid) is not None and not is_running(p.pid)
    p.wait()
    assert stat_fields(p.pid) is None and not is_running(p.pid)


def test_command_names_with_spaces_and_parens(tmp_path) -> None:
    pid_dir = tmp_path / "42"
    pid_dir.mkdir()
    (pid_dir / "stat").write_text("42 (a (weird) name) S 1 42 42 0 -1\n")
    assert stat_fields(42, tmp_path) == ["S", "1", "42", "42", "0", "-1"]
    assert is_running(42, tmp_path)
