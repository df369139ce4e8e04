"""Per-container shim: containers that outlive the kubelet, and how a restarted kubelet adopts them.

As containerd-shim or conmon do, a small parent process (the host's `/bin/sh`, ~1 MB) sits between the kubelet and the
container: it runs in its own session (so `pykubeadm reset` finds it by the node root in its arguments and stops its
whole process group: the container and its children), writes the container's pid to `<dir>/pid` before exec, waits for
it and records its exit status in `<dir>/exit` (128+N for signal N, as a shell reports it). Beside it, the native CRI
log writer (native/cri-log.c, its own session) reads the container's stdout and stderr through FIFOs in `<dir>` and
writes `<time> stdout|stderr F|P <line>` to the log file, so the output of a container that outlives the kubelet is
still recorded. A `stdin: true` container reads `<dir>/stdin.fifo`, which the kubelet writes attach input to
(`FifoWriter`); the shim keeps it open across kubelet restarts unless stdinOnce. A `tty: true` container gets a pty
as its stdin, stdout and stderr (the shim's controlling terminal); the log writer holds its master, logs its output
and relays the stdin FIFO to it. The kubelet watches the shim
through a pidfd, so it learns of the exit whether or not the shim is its child. `ShimProcess.save()`/`adopt()` keep the
shim's pid with its start time (field 22 of /proc/PID/stat) so a reused pid is never mistaken for the shim.

The direct launcher (`DirectProcess`) is the static Pods' way: a plain child with PR_SET_PDEATHSIG, gone with the
kubelet, as the control plane's processes have always been run; `start_static_container` forks the built-in
control-plane components from the kubelet's fork server instead, when it has one (kubelet.builtin.forkserver).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pykubeadm.kubelet.builtin import runtime
from pykubeadm.kubelet.builtin.forkserver import ForkedProcess, fork_server, forkable, kill_with_parent
from pykubeadm.util.procstat import stat_fields

__all__ = ["DirectProcess", "FifoWriter", "ShimProcess", "proc_start_time", "start_static_container"]

_SHIM = (
    "trap : TERM INT HUP\n"  # outlive a signal to the group: the container decides, a SIGKILL takes all (reset)
    'd="$1"; lg="$2"; lf="$3"; tty="$4"; shift 4\n'
    'if [ -n "$tty" ]; then\n'
    # tty: the Pod's terminal becomes the session's controlling terminal; the log writer holds its master (fd 5)
    # and relays the stdin FIFO to it
    '  exec 0<>"$tty" 1>&0 2>&0\n'
    '  if [ ! -p "$d/stdin.fifo" ]; then "$lg" -t "$lf" 3<&5 5<&- </dev/null >/dev/null 2>&1 &\n'
    '  elif [ -e "$d/stdin.keep" ]; then "$lg" -t -i "$lf" 3<&5 4<>"$d/stdin.fifo" 5<&- </dev/null >/dev/null 2>&1 &\n'
    '  else "$lg" -t -i "$lf" 3<&5 4<"$d/stdin.fifo" 5<&- </dev/null >/dev/null 2>&1 &\n'
    "  fi\n"
    "  exec 5<&-\n"
    "else\n"
    # the CRI log writer reads the container's stdout and stderr through two FIFOs, in its own session
    '  if [ -n "$lg" ]; then "$lg" "$lf" 3<"$d/stdout.fifo" 4<"$d/stderr.fifo" </dev/null >/dev/null 2>&1 & '
    'exec >"$d/stdout.fifo" 2>"$d/stderr.fifo"; fi\n'
    # stdin: the FIFO the kubelet writes attach input to; the shim keeps a writer open unless stdinOnce
    '  if [ -p "$d/stdin.fifo" ]; then if [ -e "$d/stdin.keep" ]; then exec 9<>"$d/stdin.fifo"; fi; '
    'exec <"$d/stdin.fifo"; fi\n'
    "fi\n"
    '/bin/sh -c \'echo $$ >"$0/pid.tmp" && mv "$0/pid.tmp" "$0/pid" && exec "$@" 9>&-\' "$d" "$@"\n'
    'echo $? >"$d/exit.tmp"; mv "$d/exit.tmp" "$d/exit"\n'
)


def proc_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (guards against pid reuse), or None if it is gone."""
    fields = stat_fields(pid)
    if fields is None or fields[0] == "Z":
        return None
    return int(fields[19])


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


async def _wait_fd(fd: int) -> None:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not fut.done():
            fut.set_result(None)

    loop.add_reader(fd, ready)
    try:
        await fut
    finally:
        loop.remove_reader(fd)


class ShimProcess:
    """A container run under a shim in `dir` (the instance directory); `pid` is the container's main process."""

    def __init__(self, dir: Path, shim_pid: int, shim_start: int, pid: int | None) -> None:
        self.dir = dir
        self.shim_pid = shim_pid
        self.shim_start = shim_start
        self.pid = pid
        self._shim_fd = _pidfd(shim_pid)
        self._main_fd = _pidfd(pid) if pid else None
        self.returncode: int | None = None
        self.stdin: FifoWriter | None = None

    # --- start and adopt ------------------------------------------------------------------------------------------
    @classmethod
    async def start(
        cls,
        dir: Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        cwd: str | None = None,
        *,
        logger: str | None = None,
        stdin: bool = False,
        stdin_once: bool = False,
        tty: bool = False,
    ) -> ShimProcess:
        """Start `argv` under a new shim, output appended to `log_path`: in the CRI format through the `logger`
        program (native cri-log) when given, else raw. With `stdin`, the container reads a FIFO the kubelet writes
        (`stdin`); the shim holds it open across kubelet restarts unless `stdin_once`. With `tty` (and a logger) the
        container's stdin, stdout and stderr are a pty whose master the log writer holds (`<dir>/tty` names it)."""
        dir.mkdir(parents=True, exist_ok=True)
        for name in ("pid", "exit"):
            (dir / name).unlink(missing_ok=True)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        master = slave = None
        tty_path = ""
        if logger and tty:
            master, slave = os.openpty()
            tty_path = os.ttyname(slave)
            (dir / "tty").write_text(tty_path)
        elif logger:
            for name in ("stdout.fifo", "stderr.fifo"):
                os.mkfifo(dir / name, 0o600)
        writer: FifoWriter | None = None
        if stdin:
            os.mkfifo(dir / "stdin.fifo", 0o600)
            if not stdin_once:
                (dir / "stdin.keep").touch()
            writer = FifoWriter.open(dir / "stdin.fifo")  # before the shim, whose open for reading waits for it
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        try:
            actions: list[tuple[Any, ...]] = [
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
            ]
            if master is not None:
                high = fcntl.fcntl(master, fcntl.F_DUPFD_CLOEXEC, 10)  # never 5 itself: dup2 must clear CLOEXEC
                os.close(master)
                master = high
                actions.append((os.POSIX_SPAWN_DUP2, master, 5))
            sh_argv = ["/bin/sh", "-c", _SHIM, "pykubeadm-shim", str(dir), logger or "", str(log_path), tty_path]
            sh_argv += argv
            if cwd:
                sh_argv = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", cwd, *sh_argv]
            try:
                shim_pid = os.posix_spawn("/bin/sh", sh_argv, dict(env), file_actions=actions, setsid=True)
            except OSError:
                for fd in (slave, writer.fd if writer is not None else None):
                    if fd is not None:
                        os.close(fd)
                raise
        finally:
            os.close(log_fd)
            if master is not None:
                os.close(master)
        start = proc_start_time(shim_pid) or 0
        proc = cls(dir, shim_pid, start, None)
        proc.stdin = writer
        proc.save()
        try:
            pid = await proc._read_pid(timeout=5.0)
        finally:
            if slave is not None:
                os.close(slave)  # held until the shim opened the terminal: the master never saw it unused
        proc.pid = pid
        proc._main_fd = _pidfd(pid) if pid else None
        proc.save()
        return proc

    async def _read_pid(self, timeout: float) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.001
        while True:
            with contextlib.suppress(OSError, ValueError):
                return int((self.dir / "pid").read_text().strip())
            if (self.dir / "exit").exists() or loop.time() > deadline:
                return None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def save(self) -> None:
        data = {"shimPid": self.shim_pid, "shimStart": self.shim_start, "pid": self.pid}
        tmp = self.dir / "shim.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.dir / "shim.json")

    @classmethod
    def adopt(cls, dir: Path) -> ShimProcess | None:
        """The shim recorded in `dir` if it still runs (same pid and start time), or one that already exited (its
        exit file is there); None when there is nothing to adopt."""
        try:
            data = json.loads((dir / "shim.json").read_text())
        except (OSError, ValueError):
            return None
        proc = cls.__new__(cls)
        proc.dir = dir
        proc.shim_pid = int(data["shimPid"])
        proc.shim_start = int(data["shimStart"])
        proc.pid = data.get("pid")
        proc.returncode = None
        proc.stdin = None
        if (dir / "stdin.keep").exists() and (dir / "stdin.fifo").exists():
            with contextlib.suppress(OSError):
                proc.stdin = FifoWriter.open(dir / "stdin.fifo")  # the shim kept it open: attach still works
        alive = proc_start_time(proc.shim_pid) == proc.shim_start
        proc._shim_fd = _pidfd(proc.shim_pid) if alive else None
        # exited between the two reads (pidfd_open then failed, or the fd is of a process that reused the pid)
        if alive and proc_start_time(proc.shim_pid) != proc.shim_start:
            if proc._shim_fd is not None:
                os.close(proc._shim_fd)
            proc._shim_fd = None
        proc._main_fd = _pidfd(proc.pid) if proc._shim_fd is not None and proc.pid else None
        if proc._shim_fd is None and proc._exit_code() is None:
            proc.returncode = 255  # the shim died with its container and could not record the exit
        return proc

    # --- exit -----------------------------------------------------------------------------------------------------
    def _exit_code(self) -> int | None:
        try:
            return int((self.dir / "exit").read_text().strip())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        return self.returncode is None and self._shim_fd is not None and self._exit_code() is None

    async def wait(self) -> int:
        """The container's exit status (128+N after signal N; 137 when the shim was killed with it)."""
        if self.returncode is not None:
            return self.returncode
        if self._shim_fd is not None:
            await _wait_fd(self._shim_fd)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(self.shim_pid, os.WNOHANG)  # ours: reap it (an adopted shim is init's)
        code = self._exit_code()
        self.returncode = 137 if code is None else code
        self._close()
        return self.returncode

    def _close(self) -> None:
        if self.stdin is not None:
            self.stdin.close()
        for fd in (self._shim_fd, self._main_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._shim_fd = self._main_fd = None

    # --- signals --------------------------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """Signal the container's main process (through its pidfd: never a reused pid)."""
        if self._main_fd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._main_fd, sig)

    def kill_all(self) -> None:
        """SIGKILL the container's main process, then everything left in the shim's process group."""
        self.signal(signal.SIGKILL)
        if self._shim_fd is not None or self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.shim_pid, signal.SIGKILL)


class FifoWriter:
    """The kubelet's end of a container's stdin FIFO, opened read-write (never blocks, never sees EOF); what attach
    writes to (`write` + `drain`, like an asyncio.StreamWriter); `close()` gives the container EOF when nothing else
    holds the FIFO open (stdinOnce)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self._buf = bytearray()

    @classmethod
    def open(cls, path: Path) -> FifoWriter:
        return cls(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))

    @property
    def closed(self) -> bool:
        return self.fd is None

    def write(self, data: bytes) -> None:
        if self.fd is None:
            raise ConnectionResetError("the container's stdin is closed")
        self._buf += data

    async def drain(self) -> None:
        while self._buf:
            if self.fd is None:
                raise ConnectionResetError("the container's stdin is closed")
            try:
                n = os.write(self.fd, self._buf)
            except BlockingIOError:
                await asyncio.sleep(0.02)  # the pipe is full: the container reads slower than the client types
                continue
            del self._buf[:n]

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The child dies with the kubelet (PR_SET_PDEATHSIG), even if the kubelet is killed with SIGKILL."""
    with contextlib.suppress(Exception):
        kill_with_parent()


class DirectProcess:
    """A container as the kubelet's own child (static Pods): it dies with the kubelet."""

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid: int | None = proc.pid
        self.returncode: int | None = None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        cwd: str | None = None,
        preexec: Callable[[], None] | None = _pdeathsig,
        cri: bool = True,
    ) -> DirectProcess:
        """Start `argv` as the kubelet's child, its output written to `log_path` as CRI log lines by the kubelet."""
        proc = await runtime.start_process(argv, env, log_path, Path(cwd) if cwd else None, preexec=preexec, cri=cri)
        return cls(proc)

    def running(self) -> bool:
        return self.proc.returncode is None

    async def wait(self) -> int:
        code = await self.proc.wait()
        self.returncode = code if code >= 0 else 128 - code
        return self.returncode

    def signal(self, sig: int) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def kill_all(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)


async def start_static_container(
    argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: str | None = None
) -> DirectProcess | ForkedProcess:
    """A static Pod container: forked by the kubelet's fork server when it runs a component the server has imported
    and pykubeadm's code has not changed since (kubelet.builtin.forkserver), else a child started as `DirectProcess`."""
    server = fork_server()
    if server is not None and forkable(argv) and server.current():
        try:
            return await ForkedProcess.start(server, argv, env, log_path, cwd)
        except OSError:
            pass  # exec it
    return await DirectProcess.start(argv, env, log_path, cwd)
