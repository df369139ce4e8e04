"""The fork server: built-in control-plane containers forked from an interpreter that has already imported them.

A control-plane node's kubelet starts kube-apiserver, kube-controller-manager and kube-scheduler together, each
`python -m pykubeadm component NAME FLAGS...`. Each new interpreter imports the same libraries again (aiohttp,
cryptography, lightkube, prometheus-client: a few hundred ms of CPU each), at the moment the node is busiest. So the
kubelet forks a server early (`ForkServer.start`, before it reads any flag or credential) that imports the components'
modules once; a static Pod container whose program is one of those components is then forked from it
(`ForkedProcess`) instead of exec'd.

The container looks as an exec'd one: its own session, stdout and stderr on the kubelet's CRI log pipes, stdin
/dev/null, the container's working directory and environment, and `/proc/PID/cmdline` and `/proc/PID/environ` of the
exec'd form (set with prctl(PR_SET_MM_MAP), which Linux allows an unprivileged process; where it is refused they show
the kubelet's, whose arguments name the node root as well). Its parent is the server, which dies with the kubelet
(PR_SET_PDEATHSIG) as the containers die with the server: a static Pod's processes are gone with the kubelet, as with
`DirectProcess`. The kubelet learns each container's pid and wait status from the server over a socket pair
(SOCK_SEQPACKET: one JSON message per datagram, the log pipes passed with SCM_RIGHTS) and signals the container's
process group itself. When the server is gone or a fork fails, the kubelet execs the program as before.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import gc
import importlib
import io
import json
import logging
import math
import os
import random
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pykubeadm.kubelet.builtin.runtime import signal_group, write_cri_log_from_fds

__all__ = [
    "COMPONENT_MODULES",
    "ForkServer",
    "ForkedProcess",
    "code_stamp",
    "component_name",
    "exit_child",
    "fork_server",
    "kill_with_parent",
    "prepare_child",
    "run_as_new_interpreter",
    "run_pykubeadm",
    "set_proc_args",
    "start_fork_server",
]

#: What the server imports for each component before it forks it: the component's command and what that imports when
#: it runs. Imported in this order, kube-apiserver's first (the others wait for it); a component asked for before its
#: modules are in waits for them, so kube-controller-manager and kube-scheduler do not each import lightkube, httpx
#: and the controllers' shared modules again (~0.1 s of CPU each while the node is busiest).
COMPONENT_MODULES: Mapping[str, tuple[str, ...]] = {
    "kube-apiserver": (
        "pykubeadm.cli.main",
        "pykubeadm.cli.component",
        "pykubeadm.apiserver.cli",
        "pykubeadm.apiserver.server",
    ),
    "kube-controller-manager": (
        "pykubeadm.controllers.app.cli",
        "lightkube",
        "pykubeadm.client",
        "pykubeadm.util.aiohttptransport",
        "cryptography.hazmat.backends.openssl.backend",
        "pykubeadm.controllers.app.daemon",
        "pykubeadm.controllers.app.serving",
        "pykubeadm.controllers.app.delegatedauth",
        "pykubeadm.util.leaderelection",
        "pykubeadm.controllers.app.credentials",
        "pykubeadm.controllers.app.manager",
    ),
    "kube-scheduler": ("pykubeadm.scheduler.cli", "pykubeadm.scheduler.scheduler", "pykubeadm.scheduler.metrics"),
}

#: The entrypoint of a built-in component's image (kubelet.builtin.runtime.resolve_program), less its name.
_ENTRYPOINT = (sys.executable, "-m", "pykubeadm", "component")

_PR_SET_PDEATHSIG = 1
_PR_SET_MM = 35
_PR_SET_MM_MAP = 14

Runner = Callable[[list[str]], int]


def run_pykubeadm(args: list[str]) -> int:
    """Run `pykubeadm ARGS...` in this process, as `python -m pykubeadm ARGS...` would; its exit code."""
    from pykubeadm.cli.main import run

    return run(args)


def component_name(argv: Sequence[str]) -> str | None:
    """NAME when `argv` is this interpreter's `python -m pykubeadm component NAME ...` (a built-in component's image,
    which a process of this installation can run without exec), else None."""
    n = len(_ENTRYPOINT)
    return str(argv[n]) if len(argv) > n and tuple(argv[:n]) == _ENTRYPOINT else None


def forkable(argv: Sequence[str]) -> bool:
    """Whether `argv` runs one of the components the server imports."""
    return component_name(argv) in COMPONENT_MODULES


# --- the server (a child of the kubelet) -----------------------------------------------------------------------------


def _prctl(option: int, arg2: int, arg3: int = 0, arg4: int = 0) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return int(libc.prctl(option, arg2, arg3, arg4, 0))


def kill_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies, even if the parent is killed with SIGKILL."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent (`parent`, the pid before the fork) ends; at once if it already has."""
    kill_with_parent()
    if os.getppid() != parent:
        os._exit(1)


class _MMMap(ctypes.Structure):
    _fields_ = [
        *(
            (name, ctypes.c_uint64)
            for name in (
                "start_code",
                "end_code",
                "start_data",
                "end_data",
                "start_brk",
                "brk",
                "start_stack",
                "arg_start",
                "arg_end",
                "env_start",
                "env_end",
                "auxv",
            )
        ),
        ("auxv_size", ctypes.c_uint32),
        ("exe_fd", ctypes.c_uint32),
    ]


#: The buffers /proc/PID/cmdline and /proc/PID/environ are read from: they live as long as the process.
_PROC_ARGS: list[Any] = []


def set_proc_args(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Make /proc/self/cmdline and /proc/self/environ show `argv` and `env` (prctl PR_SET_MM_MAP); False if refused."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        auxv = Path("/proc/self/auxv").read_bytes()
    except OSError:
        return False

    def field(n: int) -> int:  # proc(5) numbers the fields from 1; `fields` starts at field 3
        return int(fields[n - 3])

    args = b"".join(a.encode() + b"\0" for a in argv)
    envs = b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()) or b"\0"
    arg_buf = ctypes.create_string_buffer(args, len(args))
    env_buf = ctypes.create_string_buffer(envs, len(envs))
    aux_buf = ctypes.create_string_buffer(auxv, len(auxv))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sbrk.restype = ctypes.c_void_p
    mm = _MMMap(
        start_code=field(26),
        end_code=field(27),
        start_data=field(45),
        end_data=field(46),
        start_brk=field(47),
        brk=libc.sbrk(0) or field(47),
        start_stack=field(28),
        arg_start=ctypes.addressof(arg_buf),
        arg_end=ctypes.addressof(arg_buf) + len(args),
        env_start=ctypes.addressof(env_buf),
        env_end=ctypes.addressof(env_buf) + len(envs),
        auxv=ctypes.addressof(aux_buf),
        auxv_size=len(auxv),
        exe_fd=0xFFFFFFFF,  # keep /proc/PID/exe
    )
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_MM, _PR_SET_MM_MAP, ctypes.addressof(mm), ctypes.sizeof(mm), 0) != 0:
        return False
    _PROC_ARGS[:] = [arg_buf, env_buf, aux_buf]
    return True


def _fresh_interpreter_state() -> None:
    """What a new interpreter starts with and the server's parent may have changed: standard streams on fds 0-2
    (a new interpreter's buffering), no logging handler, no exit handler."""
    streams = {
        "stdin": io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False))),
        "stdout": io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), line_buffering=os.isatty(1)),
        "stderr": io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)), errors="backslashreplace", line_buffering=True
        ),
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    logging.root.handlers.clear()
    logging.root.setLevel(logging.WARNING)
    atexit._clear()


def prepare_child() -> None:
    """In a forked child whose standard fds are its own: the signal dispositions, standard streams, logging and exit
    handlers a new interpreter starts with (an ignored signal would even survive an exec)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    _fresh_interpreter_state()


def run_as_new_interpreter(argv: Sequence[str], env: Mapping[str, str], runner: Runner) -> int:
    """In a prepared child (`prepare_child`; its session, directory and /proc set): run `argv` (python -m pykubeadm
    ARGS...) as a new interpreter would, with `env` as its environment, Ctrl-C as KeyboardInterrupt, its own random
    sequence and sys.argv; then its exit handlers. Its exit code."""
    os.environ.clear()
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    random.seed()  # not the parent's sequence
    args = list(argv[3:])
    sys.argv = [str(Path(sys.modules["pykubeadm"].__file__ or "pykubeadm").with_name("__main__.py")), *args]
    code = runner(args)
    atexit._run_exitfuncs()
    return code


def exit_child(body: Callable[[], int]) -> NoReturn:  # pragma: no cover - ends a forked child
    """End a forked child with `body()`'s exit code; a failure prints its traceback on stderr and exits 1, as a new
    interpreter's would."""
    code = 1
    try:
        code = body()
    except BaseException:
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _become_container(request: dict[str, Any], out_fd: int, err_fd: int, runner: Runner, server: int) -> int:
    """In the forked child: take the container's session, stdio, directory, environment and arguments; run it."""
    os.setsid()
    _die_with_parent(server)  # it dies with the kubelet
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    prepare_child()
    if request.get("cwd"):
        os.chdir(request["cwd"])
    env: dict[str, str] = request["env"]
    argv: list[str] = request["argv"]
    set_proc_args(argv, env)
    return run_as_new_interpreter(argv, env, runner)


def _spawn(request: dict[str, Any], fds: list[int], sock: socket.socket, runner: Runner) -> int:
    server = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the container; ends in os._exit
        sock.close()
        exit_child(lambda: _become_container(request, fds[0], fds[1], runner, server))
    return pid


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(message).encode())


def _component(request: dict[str, Any]) -> str:
    """The component a request runs (`python -m pykubeadm component NAME ...`)."""
    return component_name(request.get("argv") or []) or ""


def _serve(
    sock: socket.socket, modules: Mapping[str, Sequence[str]], runner: Runner, kubelet: int
) -> None:  # pragma: no cover
    """The server's loop (a forked child): import each component's modules, then fork a container per request and
    report its pid, then its wait status. A request for a component whose modules are not all in yet is held until
    they are; the others (and ended containers) are served between the imports."""
    _die_with_parent(kubelet)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C in the kubelet's terminal is the kubelet's to handle
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # never the kubelet's stdin (a warm kubelet reads its flags there)
    os.close(null)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    imported: set[str] = set()
    held: list[tuple[dict[str, Any], list[int]]] = []

    def serve(timeout: float | None) -> None:
        while True:  # what is ready of what is held, then everything waiting
            for request, fds in [r for r in held if _component(r[0]) in imported or _component(r[0]) not in modules]:
                held.remove((request, fds))
                _start(request, fds, sel, sock, runner)
            if not _handle(sel, sock, timeout, held):
                return
            timeout = 0

    for component, names in modules.items():
        for name in names:
            with contextlib.suppress(Exception):  # a module that fails here fails again, visibly, in the container
                importlib.import_module(name)
            serve(0)
        imported.add(component)
        serve(0)
    gc.freeze()  # what the containers inherit stays out of their collections
    while True:
        serve(None)


def _handle(
    sel: selectors.BaseSelector,
    sock: socket.socket,
    timeout: float | None,
    requests: list[tuple[dict[str, Any], list[int]]],
) -> bool:
    """Wait up to `timeout` (None: for ever) for something to do; report the containers that ended and add the
    requests that came, with their descriptors, to `requests`. Whether there was anything."""
    events = sel.select(timeout)
    for key, _ in events:
        if key.data is None:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
            except OSError:
                os._exit(0)
            if not msg:
                os._exit(0)  # the kubelet closed its end
            requests.append((json.loads(msg), fds))
        else:
            sel.unregister(key.fileobj)
            os.close(key.fd)
            _, status = os.waitpid(key.data, 0)
            _send(sock, {"exit": key.data, "status": status})
    return bool(events)


def _start(
    request: dict[str, Any], fds: list[int], sel: selectors.BaseSelector, sock: socket.socket, runner: Runner
) -> None:
    """Fork the container a request asks for and report its pid (or why it could not be forked)."""
    try:
        if len(fds) != 2:
            raise OSError(f"expected the stdout and stderr pipes, got {len(fds)} descriptors")
        pid = _spawn(request, fds, sock, runner)
        pidfd = os.pidfd_open(pid)
    except OSError as e:
        _send(sock, {"id": request.get("id"), "error": str(e)})
        return
    finally:
        for fd in fds:
            os.close(fd)
    sel.register(pidfd, selectors.EVENT_READ, pid)
    _send(sock, {"id": request["id"], "pid": pid})


# --- the kubelet's side ---------------------------------------------------------------------------------------------


def code_stamp(package: Path | None = None) -> int:
    """The newest modification time of pykubeadm's Python files (of `package`): when it moves (an upgraded or edited
    pykubeadm), a container forked from the server would run the code the server imported before: it is exec'd."""
    package = package or Path(sys.modules["pykubeadm"].__file__ or "pykubeadm").resolve().parent
    newest = 0
    for directory, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(directory, name)).st_mtime_ns)
    return newest


class ForkServer:
    """The kubelet's handle on its fork server."""

    def __init__(self, pid: int, sock: socket.socket, stamp: int = 0) -> None:
        self.pid = pid
        self.sock = sock
        self.stamp = stamp  # code_stamp() when the server was forked
        self._checked = (-math.inf, False)  # (when, whether the code was unchanged then)
        self.alive = True
        self._ids = 0
        self._replies: dict[int, asyncio.Future[tuple[int, asyncio.Future[int]]]] = {}
        self._exits: dict[int, asyncio.Future[int]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def start(
        cls, modules: Mapping[str, Sequence[str]] = COMPONENT_MODULES, runner: Runner = run_pykubeadm
    ) -> ForkServer | None:
        """Fork the server (call it before this process has threads or secrets); None where fork is unavailable."""
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return None
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        stamp = code_stamp()
        kubelet = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:  # pragma: no cover - the server; never returns
            try:
                ours.close()
                _serve(theirs, modules, runner, kubelet)
            finally:
                os._exit(0)
        theirs.close()
        return cls(pid, ours, stamp)

    def current(self) -> bool:
        """The server runs and pykubeadm's code has not changed since it was forked (looked at once a second at most:
        a static Pod's containers start together)."""
        if not self.alive:
            return False
        now = time.monotonic()
        if now - self._checked[0] >= 1.0:
            self._checked = (now, code_stamp() == self.stamp)
        return self._checked[1]

    def _attach(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.sock.setblocking(False)
            loop.add_reader(self.sock.fileno(), self._readable)
            self._loop = loop
        return loop

    def _readable(self) -> None:
        try:
            msg = self.sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            msg = b""
        if not msg:
            self._gone()
            return
        message = json.loads(msg)
        if "exit" in message:
            done = self._exits.pop(message["exit"], None)
            if done is not None and not done.done():
                done.set_result(message["status"])
            return
        reply = self._replies.pop(message["id"], None)
        if reply is None or reply.done():
            if "pid" in message:  # forked for a start given up meanwhile (its Pod stopped): nobody tracks it
                signal_group(int(message["pid"]), signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):  # not yet in its own session
                    os.kill(int(message["pid"]), signal.SIGKILL)
            return
        if "error" in message:
            reply.set_exception(OSError(message["error"]))
            return
        assert self._loop is not None
        exited: asyncio.Future[int] = self._loop.create_future()
        self._exits[message["pid"]] = exited
        reply.set_result((message["pid"], exited))

    def _gone(self) -> None:
        """The server died: its containers died with it (SIGKILL); later containers are exec'd."""
        self.alive = False
        if self._loop is not None:
            self._loop.remove_reader(self.sock.fileno())
        self.sock.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, os.WNOHANG)  # reap it if it has ended
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(OSError("the fork server is gone"))
        for exited in self._exits.values():
            if not exited.done():
                exited.set_result(signal.SIGKILL)  # a wait status: killed by SIGKILL
        self._replies.clear()
        self._exits.clear()

    async def spawn(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None, out_fd: int, err_fd: int
    ) -> tuple[int, asyncio.Future[int]]:
        """Fork a container running `argv` (python -m pykubeadm ...); its pid and a future of its wait status."""
        if not self.alive:
            raise OSError("the fork server is gone")
        loop = self._attach()
        self._ids += 1
        reply: asyncio.Future[tuple[int, asyncio.Future[int]]] = loop.create_future()
        self._replies[self._ids] = reply
        request = {"id": self._ids, "argv": list(argv), "env": dict(env), "cwd": cwd}
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode()], [out_fd, err_fd])
        except OSError:
            self._replies.pop(self._ids, None)
            raise
        return await reply

    def close(self) -> None:
        """Stop the server (and with it every container it forked)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self._gone()


_server: list[ForkServer] = []


def start_fork_server(modules: Mapping[str, Sequence[str]] = COMPONENT_MODULES) -> ForkServer | None:
    """This kubelet's fork server, started now (once)."""
    if not _server:
        server = ForkServer.start(modules)
        if server is None:
            return None
        _server.append(server)
    return _server[0]


def fork_server() -> ForkServer | None:
    """This kubelet's fork server, if it started one and it still runs."""
    return _server[0] if _server and _server[0].alive else None


class ForkedProcess:
    """A container forked by the fork server: the `DirectProcess` interface (pid, wait, signal, kill_all)."""

    def __init__(self, pid: int, exited: asyncio.Future[int]) -> None:
        self.pid: int | None = pid
        self.returncode: int | None = None
        self._exited = exited

    @classmethod
    async def start(
        cls, server: ForkServer, argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: str | None
    ) -> ForkedProcess:
        """Fork `argv` with its stdout and stderr written to `log_path` as CRI log lines by this process."""
        log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            pid, exited = await server.spawn(argv, env, cwd, out_w, err_w)
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        write_cri_log_from_fds(out_r, err_r, log_path)
        return cls(pid, exited)

    def running(self) -> bool:
        return not self._exited.done()

    async def wait(self) -> int:
        status = await asyncio.shield(self._exited)
        code = os.waitstatus_to_exitcode(status)
        self.returncode = code if code >= 0 else 128 - code
        return self.returncode

    def signal(self, sig: int) -> None:
        if self.running() and self.pid is not None:
            signal_group(self.pid, sig)

    def kill_all(self) -> None:
        if self.pid is not None:
            signal_group(self.pid, signal.SIGKILL)
