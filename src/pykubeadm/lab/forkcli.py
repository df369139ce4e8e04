"""Running a node's `pykubeadm` command (init, join) as a forked child of the lab process.

The lab runs the very commands a user would type on each node, through the same entry point (`cli.main.main`) with the
same arguments. It forks instead of starting a new interpreter: the child begins with the command's modules already
imported (the lab imports them once, while `init` works, instead of every `join` spending ~0.3 s of CPU on them), and
with the node's kubelet interpreter already warm (`prewarm_kubelet`, started by the lab before the join, handed to
the child). The child's output goes where a started process's would (the node's log file or the lab's terminal).

A forked child can also tell the lab when one of its phases is done (`start(..., notify_after=PHASE)`, then
`Child.wait_phase()`): the lab starts the workers' joins as soon as `init` has made its bootstrap token and the
cluster-info ConfigMap, while init still applies the addons.

A fork copies only the calling thread, so when the lab process has other threads it starts a new interpreter instead
(`pykubeadm_command`), as it does for the commands it does not fork.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.phases.kubeletservice import discard_prewarmed_kubelets, release_prewarmed_kubelets
from pykubeadm.util.fs import redirect_stdio
from pykubeadm.util.namespaces import enter, nsenter_prefix

__all__ = ["INIT_MODULES", "JOIN_MODULES", "Child", "can_fork", "join_modules", "preload", "preload_join", "start"]

#: The modules of the `join` command itself (see preload_join).
JOIN_MODULES = ("pykubeadm.cli.join", "pykubeadm.api", "pykubeadm.phases.join")
#: What `init` imports before it starts the kubelet (its phases; certificates, kubeconfigs, manifests). The joins
#: need most of it too: imported once before the lab forks init, not by init and then again for the joins.
INIT_MODULES = (
    "pykubeadm.cli.init",
    "pykubeadm.phases.init",
    "pykubeadm.pki.create",
    "pykubeadm.kubeconfig",
    "pykubeadm.manifests",
)


class Child:
    """A started command: a forked child of this process, or a new interpreter."""

    def __init__(self, pid: int, proc: subprocess.Popen[bytes] | None = None, phase_fd: int | None = None) -> None:
        self.pid = pid
        self._proc = proc
        self._phase_fd = phase_fd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if the command has ended, else None (never blocks)."""
        if self.returncode is None:
            if self._proc is not None:
                self.returncode = self._proc.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait_phase(self) -> bool:
        """Block until the command has done the phase named by `start(notify_after=...)` (True) or has ended before
        (False; `wait()` tells how). A command started as a new interpreter only tells that it ended with 0."""
        if self._phase_fd is None:
            return self.wait() == 0
        try:
            done = os.read(self._phase_fd, 1) == b"1"
        finally:
            os.close(self._phase_fd)
            self._phase_fd = None
        return done

    def wait(self) -> int:
        if self.returncode is None:
            if self._proc is not None:
                self.returncode = self._proc.wait()
            else:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def can_fork() -> bool:
    """This process may fork a command: it runs no other thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


def preload(modules: tuple[str, ...]) -> None:
    """Import a command's modules now, so that the children forked later start with them."""
    for name in modules:
        importlib.import_module(name)


def join_modules() -> tuple[str, ...]:
    """What a worker `join` imports when it runs: JOIN_MODULES, then what its phases import in their run functions."""
    from pykubeadm.phases.join import WORKER_RUN_MODULES

    return JOIN_MODULES + WORKER_RUN_MODULES


def preload_join() -> None:
    """Import what a worker `join` runs (`join_modules()`)."""
    preload(join_modules())


def start(
    root: Path, args: list[str], log: Path | None = None, notify_after: str | None = None, namespaces: str = ""
) -> Child:
    """Run `pykubeadm --root-dir ROOT ARGS...`: stdout and stderr to `log` (appended) or to ours, stdin from
    /dev/null. With `notify_after` (a phase path), `Child.wait_phase()` returns once the command has done that phase.
    With `namespaces` (a network-namespace lab's node directory, util.namespaces) it runs in the node's namespaces."""
    argv = ["--root-dir", str(root), *args]
    if not can_fork():
        return _start_interpreter(argv, log, namespaces)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    read_fd, notify = None, None
    if notify_after:
        read_fd, write_fd = os.pipe()
        notify = (notify_after, write_fd)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit (the tests run the lab)
        if read_fd is not None:
            os.close(read_fd)
        _run_child(argv, log, notify, namespaces)
    if notify is not None:
        os.close(notify[1])
    return Child(pid, phase_fd=read_fd)


def _start_interpreter(argv: list[str], log: Path | None, namespaces: str = "") -> Child:
    out = open(log, "ab") if log is not None else None  # noqa: SIM115 - owned by the child
    try:
        env = {k: v for k, v in os.environ.items() if k != c.ROOT_DIR_ENV}
        proc = subprocess.Popen(
            [*nsenter_prefix(namespaces or None), sys.executable, "-m", "pykubeadm", *argv],
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    finally:
        if out is not None:
            out.close()
    return Child(proc.pid, proc)


def _notify_after(phase: str, fd: int) -> None:  # pragma: no cover - runs in the forked child
    """Write "1" to `fd` and close it once `phase` is done; the lab sees EOF instead if the command ends before."""
    from pykubeadm import workflow

    def hook(path: str) -> None:
        if path == phase:
            with contextlib.suppress(OSError):
                os.write(fd, b"1")
                os.close(fd)
            workflow.phase_done_hooks.remove(hook)

    workflow.phase_done_hooks.append(hook)


def _run_child(  # pragma: no cover - runs in the forked child
    argv: list[str], log: Path | None, notify: tuple[str, int] | None = None, namespaces: str = ""
) -> None:
    code = 1
    try:
        if namespaces:
            enter(namespaces)
        if notify is not None:
            _notify_after(*notify)
        redirect_stdio(log)
        os.environ.pop(c.ROOT_DIR_ENV, None)
        release_prewarmed_kubelets(keep=root_of(argv))  # the other nodes' warm kubelets belong to their own joins
        logging.root.handlers.clear()  # the command sets up its own logging (its -v), as a new process would
        from pykubeadm.cli.main import run

        code = run(argv)
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        # The command's own clean-up (a warm kubelet it never started is stopped). Not the atexit hooks: those are
        # also the lab's (a test session's), and this child exits with os._exit, as a forked child must.
        with contextlib.suppress(BaseException):
            discard_prewarmed_kubelets()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def root_of(argv: list[str]) -> str:
    """The --root-dir of a command line made by `start`."""
    return argv[argv.index("--root-dir") + 1]
