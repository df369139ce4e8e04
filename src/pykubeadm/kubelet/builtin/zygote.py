"""The kubelet zygote: a lab's warm kubelets and `lab join`'s joins, forked from one interpreter that imported them.

A warm kubelet (kubelet/service.prewarm_kubelet) is a new interpreter that imports the kubelet's modules (~0.3 s
of CPU) and then waits for its flags on stdin. `lab up` needs one per node at once, at the moment the machine is
busiest, and every `lab join` needs one more on its critical path. The zygote imports those modules once, for the life
of the lab, and forks a warm kubelet for a node root on request: ready at once, its libraries' pages shared.

The lab makes the zygote's listening socket (`kubelet-zygote.sock` in its state dir, mode 0600: whoever may connect
may start a kubelet or run a pykubeadm command as the lab's user) and hands it to the zygote as its stdin (`start`). A
client (`WarmKubelet.request`) connects and sends one JSON line, {"root": ROOT, "fork_server": BOOL}. The zygote
forks twice, so the warm kubelet is nobody's child (it is reparented as an exec'd warm kubelet is once the command
that started it ends), and the warm kubelet:

- takes its own session: its process group is what `reset` and `stop_kubelet` signal;
- has the connection as its stdin: it writes its pid there as one line, then reads its flags from it as a warm kubelet
  started with a pipe does (EOF: the command ended without starting it, and it exits having written nothing);
- shows `/proc/PID/cmdline` and `/proc/PID/environ` of `python -m pykubeadm --root-dir ROOT component kubelet
  --flags-from-stdin [--fork-server]`, with PYKUBEADM_ROOT_DIR=ROOT (kubelet.builtin.forkserver.set_proc_args), so `reset`
  finds it by its node root either way;
- execs that command line instead of running on if pykubeadm's code has changed since the zygote started (an upgrade
  or an edit: the zygote holds the code it imported), keeping its pid.

It forks a node's `pykubeadm` command as well (`Command.request`, for `lab join`). The request names the command line:
`{"command": ["--root-dir", ROOT, "join", ...], "log": FILE, "modules": [...], "warm_kubelet": ROOT}`. The zygote
imports the modules named (once; `preload` asks for them ahead, as `lab up` does when it is done) and forks twice. The
command runs in a session of its own, its output appended to the log file, with the asker's environment and directory
and the command line of `python -m pykubeadm ARGS...` in /proc. It first asks the zygote for its node's warm kubelet,
so that `join` finds one waiting as a join forked by `lab up` does. On the connection it writes its pid, then
`exit CODE` when it ends (EOF without that line: it was killed). So `lab join` does not spend the ~0.2 s of CPU that
importing `join` takes on its critical path. As for a warm kubelet, a changed pykubeadm runs as a new interpreter; a
command asked for by another installation (interpreter or package path) is refused, and the asker runs it itself.

It forks the lab's add-on containers too (kube-proxy, CoreDNS, kindnetd: `python -m pykubeadm component NAME ...`),
which a warm kubelet otherwise starts as new interpreters (~0.3 s of CPU each, several at once while the lab comes up;
far longer for kindnetd, whose 100m CPU limit throttles an interpreter's imports). The kubelet's sandbox launcher
(native/pod-sandbox.c, `-z SOCKET`, given by a kubelet the zygote forked: `serving_zygote()`) makes the container's
namespaces, then sends {"container": {"argv", "env", "cwd", "cgroups"}} and the container's stdin, stdout and stderr
(SCM_RIGHTS); the program joins the container's cgroups (its cgroup.procs files) before anything else, so its CPU and
memory limits hold as for an exec'd program. The zygote's grandchild enters the launcher's (the peer's, SO_PEERCRED)
UTS and mount namespaces, root and working directory, unshares a PID namespace and forks the program as its PID 1, with its own
/proc, the container's stdio and environment, and its command line in /proc. It answers `pid N` (the program's pid
outside the namespace) and `exit STATUS` (its wait status) when the program has ended, and kills the program if the
launcher goes away first. The launcher joins that PID namespace for its children (nsenter, `kubectl exec`, find it
there) and forwards signals to the program. So a container looks as an exec'd one from inside (PID 1, its hostname,
its mounts) and from the kubelet (the launcher is its process); the program is not the launcher's descendant, so
kubelet.resourcemetrics counts a sandbox by its PID namespace. `ps` shows that parent as `pykubeadm: zygote relay of
NAME for launcher PID`. A request from another installation, or after pykubeadm's code has changed, gets no pid, and
the launcher execs the program itself. `ADDON_MODULES` is what the lab asks the zygote to import ahead for them.

Nothing here holds a flag or a credential: the zygote forks before any is read, as the fork server does.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from pykubeadm import constants as c

# The zygote's own side imports kubelet.builtin.forkserver (its fork and /proc helpers) when it runs: the lab process, which
# only starts the zygote and asks it for warm kubelets, does not need them.

__all__ = [
    "ADDON_MODULES",
    "FORKED_COMPONENTS",
    "SOCKET_NAME",
    "ZYGOTE_FLAG",
    "Command",
    "WarmKubelet",
    "listen",
    "preload",
    "serve",
    "serving_zygote",
    "start",
    "stop",
]

#: The socket's file name in the lab's state dir; the zygote's pid is in the same name with `.pid`.
SOCKET_NAME = "kubelet-zygote.sock"
#: `pykubeadm component kubelet --zygote SOCKET`: the zygote's command line (the socket itself is its stdin).
ZYGOTE_FLAG = "--zygote"
#: How long a client waits for the warm kubelet's pid (the zygote may still be importing).
_PID_TIMEOUT = 60.0
#: How long the zygote waits for a request line once a client has connected, and its longest line.
_REQUEST_TIMEOUT = 5.0
_REQUEST_MAX = 1 << 20
#: How often an idle zygote looks whether its socket is still there.
_IDLE_CHECK = 30.0

#: What a warm kubelet imports before it waits (kubelet.cli._await_start), and so what the zygote imports.
_MODULES = ("pykubeadm.cli.main", "pykubeadm.kubelet.cli", "pykubeadm.kubelet.config", "pykubeadm.kubelet.kubelet")
#: The built-in components whose containers a kubelet forked by the zygote asks it to fork (the add-ons' images,
#: and the network addon's, which starts on the critical path of a network-namespace lab's Ready nodes).
FORKED_COMPONENTS = ("kube-proxy", "coredns", "kindnetd")
#: What those components import when they run: what the lab asks the zygote to import ahead (`preload`).
ADDON_MODULES = (
    "pykubeadm.cli.component",
    "pykubeadm.util.lazytls",  # what `component` imports aiohttp with
    "concurrent.futures.thread",  # asyncio.to_thread's executor: kindnetd's first sync (its conflist) runs in it
    "lightkube",
    "pykubeadm.client",
    "pykubeadm.util.aiohttptransport",
    "pykubeadm.controllers.app.daemon",
    "pykubeadm.proxy.cli",
    "pykubeadm.proxy.server",
    "pykubeadm.dns.cli",
    "pykubeadm.dns.server",
    "pykubeadm.dns.setup",
    "pykubeadm.dns.plugins.kubernetes",
    "pykubeadm.dns.plugins.forward",
    "pykubeadm.dns.plugins.cache",
    "pykubeadm.kindnet.cli",
    "pykubeadm.kindnet.agent",
    "pykubeadm.dns.plugins.kubernetes.credentials",
)
#: The zygote that forked this process's kubelet (set in the warm kubelet), which forks its add-on containers.
_serving: list[Path] = []


def serving_zygote() -> Path | None:
    """The socket of the zygote that forked this kubelet, if it did (a kubelet started otherwise has none)."""
    return _serving[0] if _serving else None


# --- the lab's side: the zygote process ----------------------------------------------------------------------------


def listen(path: Path) -> socket.socket | None:
    """The zygote's listening socket at `path`, mode 0600; None where it cannot be made (a path too long for a Unix
    socket, no AF_UNIX): the lab then starts its warm kubelets as new interpreters."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    path.unlink(missing_ok=True)
    old = os.umask(0o177)  # created 0600, never connectable by another user, not even for a moment
    try:
        sock.bind(str(path))
        sock.listen(64)
    except OSError:
        sock.close()
        return None
    finally:
        os.umask(old)
    return sock


def start(path: Path) -> int | None:
    """Start the zygote listening at `path` (its pid also in `path`.pid); None if it could not be started. Clients may
    connect at once: their requests wait in the backlog while it imports."""
    sock = listen(path)
    if sock is None:
        return None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykubeadm", "component", "kubelet", ZYGOTE_FLAG, str(path)],
            stdin=sock.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={k: v for k, v in os.environ.items() if k != c.ROOT_DIR_ENV},  # no node's: `reset` would take it
        )
    except OSError:
        path.unlink(missing_ok=True)
        return None
    finally:
        sock.close()
    _pid_file(path).write_text(f"{proc.pid}\n")
    return proc.pid


def stop(path: Path) -> bool:
    """Stop the zygote of `path` (by its pid file, after checking the process is that zygote); True if one ran. Its
    warm kubelets are on their own and stay."""
    pid_file = _pid_file(path)
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        pid = 0
    found = pid > 0 and _is_zygote(pid, path)
    if found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # it holds nothing but imported modules
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    pid_file.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    return found


def _pid_file(path: Path) -> Path:
    return path.with_name(path.name + ".pid")


def _is_zygote(pid: int, path: Path) -> bool:
    from pykubeadm.util.procstat import cmdline

    args = cmdline(pid) or []
    return ZYGOTE_FLAG in args and any(os.path.realpath(a) == os.path.realpath(path) for a in args if a)


# --- the client's side: one warm kubelet -----------------------------------------------------------------------------


class WarmKubelet:
    """A warm kubelet forked by the zygote: `pid`, `start(line)` (its flags), `release()` and `discard()`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._pid: int | None = None

    @classmethod
    def request(cls, path: Path, root: str, fork_server: bool, namespaces: str = "") -> WarmKubelet | None:
        """Ask the zygote at `path` for a warm kubelet for `root` (in the node namespaces of directory `namespaces`,
        util.namespaces, when given); None if there is no zygote to ask."""
        try:
            request = {
                "root": root,
                "fork_server": fork_server,
                "env": dict(os.environ),
                "cwd": os.getcwd(),
                "namespaces": namespaces,
            }
        except OSError:  # no working directory any more
            return None
        sock = _send(path, request)
        return cls(sock) if sock is not None else None

    @property
    def pid(self) -> int:
        """The warm kubelet's pid (waiting for the zygote to fork it if need be); OSError if it never came."""
        if self._pid is None:
            self.sock.settimeout(_PID_TIMEOUT)
            line = b""
            while not line.endswith(b"\n"):
                chunk = self.sock.recv(32 - len(line))  # the pid line is all it writes before it reads its flags
                if not chunk:
                    raise OSError("the kubelet zygote is gone")
                line += chunk
            self.sock.settimeout(None)
            try:
                self._pid = int(line)
            except ValueError as err:
                raise OSError(f"the kubelet zygote answered {line!r}") from err
        return self._pid

    def start(self, line: bytes) -> int:
        """Hand it its flags (one JSON line); its pid. OSError if it is gone."""
        pid = self.pid
        self.sock.sendall(line)
        self.sock.close()
        return pid

    def release(self) -> None:
        """Close this process's end without starting it: it ends once no process holds the connection open."""
        self.sock.close()

    def discard(self) -> None:
        """Stop it without starting it: EOF on its stdin (it has written nothing)."""
        self.sock.close()


class Command:
    """A `pykubeadm` command the zygote forked for this process (lab.forkcli.Child's interface): `pid`, `poll()`,
    `wait()`, `terminate()`."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.returncode: int | None = None
        self._buf = b""

    @classmethod
    def request(
        cls,
        path: Path,
        args: list[str],
        log: Path | None,
        modules: tuple[str, ...] = (),
        warm_kubelet: str = "",
        namespaces: str = "",
    ) -> Command | None:
        """Have the zygote at `path` run `pykubeadm ARGS...` (output appended to `log`) after importing `modules`,
        asking first for the warm kubelet of node root `warm_kubelet`, both in the node namespaces of directory
        `namespaces` when given; None if there is no zygote to ask (the caller runs the command itself)."""
        try:
            request = {
                "command": args,
                "log": str(log.absolute()) if log is not None else None,
                "modules": list(modules),
                "warm_kubelet": warm_kubelet,
                "namespaces": namespaces,
                "env": {k: v for k, v in os.environ.items() if k != c.ROOT_DIR_ENV},
                "cwd": os.getcwd(),
                "installation": _installation(),
            }
        except OSError:  # no working directory any more
            return None
        sock = _send(path, request)
        if sock is None:
            return None
        command = cls(sock, 0)
        try:
            sock.settimeout(_PID_TIMEOUT)
            line = command._line()
            command.pid = int(line) if line and line.strip().isdigit() else 0
        except OSError:
            command.pid = 0
        if command.pid <= 0:  # the zygote refused it (or is gone): nothing was started
            sock.close()
            return None
        return command

    def _line(self) -> bytes | None:
        """The next line the command wrote; None at EOF."""
        while b"\n" not in self._buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _finish(self) -> int:
        line = self._line()
        self.sock.close()
        word, _, code = (line or b"").partition(b" ")
        self.returncode = int(code) if word == b"exit" and code.lstrip(b"-").isdigit() else 1
        return self.returncode

    def poll(self) -> int | None:
        """The exit code if the command has ended, else None (never blocks)."""
        if self.returncode is None:
            ended = b"\n" in self._buf
            if not ended:
                self.sock.setblocking(False)
                try:
                    self.sock.recv(1, socket.MSG_PEEK)  # its exit line, or EOF
                    ended = True
                except BlockingIOError:
                    pass
                finally:
                    self.sock.setblocking(True)
            if ended:
                return self._finish()
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.sock.settimeout(None)
            return self._finish()
        return self.returncode

    def terminate(self) -> None:
        """SIGTERM to the command's process group, if it has not ended."""
        if self.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGTERM)


def _installation() -> list[str]:
    """The interpreter and the pykubeadm package this process runs: a command is forked only by a zygote of the same
    (one started from another venv or checkout would run its own code)."""
    import pykubeadm

    return [sys.executable, str(Path(pykubeadm.__file__).resolve().parent)]


def preload(path: Path, modules: tuple[str, ...]) -> bool:
    """Have the zygote at `path` import `modules` now, ahead of the commands that need them; whether it was asked.
    It does so between requests; the caller does not wait."""
    sock = _send(path, {"preload": list(modules)})
    if sock is None:
        return False
    sock.close()
    return True


def _send(path: Path, request: dict[str, Any]) -> socket.socket | None:
    """A connection to the zygote at `path` on which `request` is sent (one JSON line); None if there is no zygote to
    ask (no socket, or nothing listening on it)."""
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        sock.sendall(json.dumps(request).encode() + b"\n")
    except OSError:
        sock.close()
        return None
    return sock


# --- the zygote (`pykubeadm component kubelet --zygote SOCKET`) ----------------------------------------------------


def serve(path: Path) -> NoReturn:  # pragma: no cover - runs in the zygote process (tests start one)
    """The zygote's loop, on the listening socket that is its stdin (bound at `path`): import the kubelet, then fork a
    warm kubelet per request. It ends by itself once `path` is gone or is another socket (the lab was removed)."""
    from pykubeadm.kubelet.builtin.forkserver import code_stamp, exit_child

    stamp = code_stamp()
    listener = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inode = os.stat(path).st_ino
    except OSError:
        os._exit(0)
    import importlib

    for name in _MODULES:
        importlib.import_module(name)
    gc.freeze()  # what the warm kubelets inherit stays out of their collections
    installation = _installation()
    listener.settimeout(_IDLE_CHECK)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if not _still_listening(path, inode):
                os._exit(0)
            continue
        except OSError:  # EMFILE, ECONNABORTED: the next client may fare better
            continue
        try:
            conn.settimeout(None)
            request = _read_request(conn)
            if _import(request.get("preload") or request.get("modules") or ()):
                gc.freeze()
            if "preload" in request or ("command" in request and request.get("installation") != installation):
                conn.close()  # a command of another installation gets EOF: the asker runs it itself
                continue
            become = (
                _become_command
                if "command" in request
                else _become_container
                if "container" in request
                else _become_warm_kubelet
            )
            child = os.fork()
        except Exception:  # a client that sent no proper request (or no fork): it gets EOF, and starts an interpreter
            conn.close()
            continue
        if child == 0:
            try:
                listener.close()
                if os.fork() == 0:
                    exit_child(functools.partial(become, conn, request, stamp, path))
            finally:
                os._exit(0)
        conn.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)


def _import(modules: Any) -> bool:
    """Import the named modules not yet imported (pykubeadm's, the libraries it runs on); whether any was new. One
    that fails is left to the command, which fails on it visibly."""
    import importlib

    new = False
    for name in modules if isinstance(modules, list) else ():
        if isinstance(name, str) and name not in sys.modules:
            with contextlib.suppress(BaseException):  # even a module that calls sys.exit() must not end the zygote
                importlib.import_module(name)
                new = True
    return new


def _still_listening(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _read_request(conn: socket.socket) -> dict[str, Any]:
    """The request line, and not a byte more (what follows, the flags, is the warm kubelet's to read), within
    `_REQUEST_TIMEOUT` overall and `_REQUEST_MAX` bytes."""
    deadline = time.monotonic() + _REQUEST_TIMEOUT
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ValueError("no request in time")
        conn.settimeout(remaining)
        peeked = conn.recv(_REQUEST_MAX, socket.MSG_PEEK)
        if not peeked:
            raise ValueError("no request")
        end = peeked.find(b"\n")
        if end >= 0:
            line = conn.recv(end + 1)
            break
        if len(peeked) >= _REQUEST_MAX:
            raise ValueError("request too long")
        time.sleep(0.001)  # the rest of the line is on its way
    conn.settimeout(None)
    request = json.loads(line)
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    if "preload" in request:
        return request
    if "command" in request:
        args = request["command"]
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise ValueError("a command is a list of arguments")
        return request
    if "container" in request:
        spec = request["container"]
        if not (
            isinstance(spec, dict)
            and isinstance(spec.get("cwd"), str)
            and isinstance(spec.get("argv"), list)
            and all(isinstance(a, str) for a in spec["argv"])
            and isinstance(spec.get("env"), dict)
            and all(isinstance(v, str) for v in spec["env"].values())
            and isinstance(spec.get("cgroups", []), list)
            and all(isinstance(f, str) and Path(f).name == "cgroup.procs" for f in spec.get("cgroups", []))
        ):
            raise ValueError("a container is its cwd, argv, env and cgroup.procs files")
        return request
    if not isinstance(request.get("root"), str) or not request["root"]:
        raise ValueError("a request names a node root")
    return request


def _enter_node(request: dict[str, Any]) -> None:  # pragma: no cover - runs in a grandchild
    """Enter the node namespaces the request names (a network-namespace lab's node), if it names any."""
    namespaces = request.get("namespaces")
    if isinstance(namespaces, str) and namespaces:
        from pykubeadm.util.namespaces import enter

        enter(namespaces)


def _take_askers_place(request: dict[str, Any]) -> dict[str, str]:  # pragma: no cover - runs in a grandchild
    """Go to the asker's working directory; the asker's environment, without a node root (the caller sets one)."""
    with contextlib.suppress(OSError):
        os.chdir(str(request.get("cwd") or "/"))
    return {str(k): str(v) for k, v in (request.get("env") or os.environ).items() if k != c.ROOT_DIR_ENV}


def _become_warm_kubelet(  # pragma: no cover - runs in the zygote's grandchild
    conn: socket.socket, request: dict[str, Any], stamp: int, path: Path
) -> int:
    """In the grandchild: take a session, the connection as stdin, the requester's environment and directory, the warm
    kubelet's command line; run it. Exec'd instead where /proc cannot show that command line (reset finds a kubelet by
    it) or pykubeadm's code has changed since the zygote imported it."""
    from pykubeadm.kubelet.builtin.forkserver import (
        code_stamp,
        prepare_child,
        run_as_new_interpreter,
        run_pykubeadm,
        set_proc_args,
    )
    from pykubeadm.kubelet.service import warm_kubelet_command
    from pykubeadm.layout import Layout

    os.setsid()
    _enter_node(request)
    os.dup2(conn.fileno(), 0)
    conn.close()
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    prepare_child()
    _serving[:] = [path]
    root = str(request["root"])
    argv = warm_kubelet_command(Layout(root=Path(root)), bool(request.get("fork_server")))
    env = {**_take_askers_place(request), c.ROOT_DIR_ENV: root}
    shown = set_proc_args(argv, env)
    os.write(0, f"{os.getpid()}\n".encode())  # once /proc shows what it is
    if not shown or code_stamp() != stamp:  # a new interpreter, same pid
        os.execve(sys.executable, argv, env)  # noqa: S606 - the warm kubelet's own command line, not a shell
    return run_as_new_interpreter(argv, env, run_pykubeadm)


def _become_command(conn: socket.socket, request: dict[str, Any], stamp: int, path: Path) -> int:  # pragma: no cover
    """In the grandchild: take a session, the log file as stdout and stderr, the asker's environment and directory and
    `python -m pykubeadm ARGS...` as command line; ask for the node's warm kubelet; run the command; write its exit
    code on the connection. A changed pykubeadm runs as a new interpreter instead, waited for."""
    from pykubeadm.kubelet.builtin.forkserver import code_stamp, prepare_child, run_as_new_interpreter, set_proc_args
    from pykubeadm.util.fs import redirect_stdio

    os.setsid()
    _enter_node(request)
    status = conn.detach()
    log = request.get("log")
    redirect_stdio(str(log) if log else os.devnull)
    os.closerange(3, status)
    os.closerange(status + 1, os.sysconf("SC_OPEN_MAX"))
    prepare_child()
    args = [str(a) for a in request["command"]]
    argv = [sys.executable, "-m", "pykubeadm", *args]
    env = _take_askers_place(request)
    set_proc_args(argv, env)
    os.write(status, f"{os.getpid()}\n".encode())
    code = 1
    try:
        if code_stamp() != stamp:
            code = subprocess.call(argv, env=env)
        else:
            code = run_as_new_interpreter(argv, env, functools.partial(_run_command, path, request))
    except BaseException:
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):  # all of its output is in the log before the asker reads its end
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(OSError):
            os.write(status, f"exit {code}\n".encode())
    return code


_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8


def _libc_call(what: str, result: int) -> None:  # pragma: no cover - runs in the zygote's grandchildren
    """Raise OSError (naming `what`) if a libc call returned non-zero."""
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _enter(pid: int, cwd: str) -> None:  # pragma: no cover - runs in the zygote's grandchild
    """Enter the network, UTS and mount namespaces of `pid` (the network one is the Pod's when the launcher joined
    it), its root and `cwd` there, and a new PID namespace for the children (the next fork is its PID 1)."""
    libc = _libc()
    entries = (("net", _CLONE_NEWNET), ("uts", _CLONE_NEWUTS), ("mnt", _CLONE_NEWNS))
    fds = [os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC) for name, _ in entries]
    root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for fd, (name, kind) in zip(fds, entries, strict=True):
            _libc_call(f"setns {name} of {pid}", libc.setns(fd, kind))
        os.fchdir(root)
        os.chroot(".")
        os.chdir(cwd)
    finally:
        for fd in (*fds, root):
            os.close(fd)
    _libc_call("unshare pid", libc.unshare(_CLONE_NEWPID))


def _peer(conn: socket.socket) -> int:
    """The pid of the process at the other end of `conn` (the container's launcher)."""
    import struct

    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


def _become_container(conn: socket.socket, request: dict[str, Any], stamp: int, _path: Path) -> int:  # pragma: no cover
    """In the grandchild: with the container's stdio (sent after the request), enter the launcher's namespaces and
    fork the program there as PID 1; report its pid, then its wait status; kill it if the launcher goes away. No pid
    (the connection closes) when the program is not this installation's pykubeadm or pykubeadm's code has changed:
    the launcher then execs the program."""
    import select

    from pykubeadm.kubelet.builtin.forkserver import code_stamp, component_name, exit_child, set_proc_args

    spec = request["container"]  # its argv and env are strings (_read_request)
    argv, env = spec["argv"], spec["env"]
    name = component_name(argv)
    if name is None:
        return 1
    fds = socket.recv_fds(conn, 1, 3)[1]
    if len(fds) != 3 or code_stamp() != stamp:
        return 1
    # the container's cgroups, opened while the host's /sys is in view: the program joins them before anything else,
    # so that its resource limits hold as for an exec'd program (the relay itself stays out of them)
    cgroups = [os.open(f, os.O_WRONLY | os.O_CLOEXEC) for f in spec.get("cgroups", [])]
    os.setsid()
    launcher = _peer(conn)
    set_proc_args([f"pykubeadm: zygote relay of {name} for launcher {launcher}"], {})  # not a second zygote in ps
    _enter(launcher, str(spec["cwd"]))
    program = os.fork()
    if program == 0:
        conn.close()
        exit_child(functools.partial(_run_container, fds, argv, env, cgroups))
    try:
        for fd in [*fds, *cgroups]:
            os.close(fd)
        ended = os.pidfd_open(program)
        conn.sendall(f"pid {program}\n".encode())  # fails if the launcher has hung up (or given up waiting)
        poller = select.poll()
        poller.register(ended, select.POLLIN)
        poller.register(conn.fileno(), select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if ended in ready:
                status = os.waitpid(program, 0)[1]
                with contextlib.suppress(OSError):
                    conn.sendall(f"exit {status}\n".encode())
                return 0
            if not conn.recv(64):  # EOF: the launcher is gone, and so is its container
                break
    except BaseException:
        _kill_and_reap(program)
        raise
    _kill_and_reap(program)
    return 0


def _kill_and_reap(pid: int) -> None:  # pragma: no cover - runs in the zygote's grandchild
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _run_container(  # pragma: no cover - grandchild
    fds: list[int], argv: list[str], env: dict[str, str], cgroups: list[int]
) -> int:
    """The program, PID 1 of the container's PID namespace: its cgroups, /proc, stdio, session and command line."""
    from pykubeadm.kubelet.builtin.forkserver import prepare_child, run_as_new_interpreter, run_pykubeadm, set_proc_args

    for fd in cgroups:  # "0": the writer itself (its children follow)
        os.write(fd, b"0")
        os.close(fd)
    _libc_call("mount /proc", _libc().mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None))
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    prepare_child()
    set_proc_args(argv, env)
    return run_as_new_interpreter(argv, env, run_pykubeadm)


def _run_command(path: Path, request: dict[str, Any], args: list[str]) -> int:  # pragma: no cover - grandchild
    from pykubeadm.kubelet.builtin.forkserver import run_pykubeadm
    from pykubeadm.kubelet.service import prewarm_kubelet
    from pykubeadm.layout import Layout

    root = request.get("warm_kubelet")
    if isinstance(root, str) and root:
        namespaces = request.get("namespaces")
        ns = namespaces if isinstance(namespaces, str) else ""
        prewarm_kubelet(
            Layout(root=Path(root)), zygote=path, namespaces=ns
        )  # the command finds it waiting, as a forked join does
    return run_pykubeadm(args)
