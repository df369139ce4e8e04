"""exec and attach of a built-in container: run a command in it (pipes or a pty) or follow its main process.

The transports (WebSocket channels in `pykubeadm.streaming.wsserve`, SPDY streams in `spdyserve.py`) hand over a
`StreamIO` and send the returned Status (`pykubeadm.streaming.remotecommand`) on the error channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import pty
import struct
import termios
from collections.abc import Callable
from typing import Any

from pykubeadm.kubelet.crilog import CriLine, parse_line
from pykubeadm.kubelet.streaming.container import ContainerRef
from pykubeadm.streaming.remotecommand import (
    Reader,
    StreamIO,
    StreamOptions,
    Writer,
    exit_status,
    failure_status,
    success_status,
)

__all__ = ["run_attach", "run_exec"]

_CHUNK = 32 * 1024
_ATTACH_POLL = 0.2
_DRAIN_POLLS = 2  # polls after the container's exit that find no new log lines before attach ends
_FIRST_SIZE_WAIT = 1.0


def _exit_code(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode  # killed by signal N: 128+N, as runtimes report


def _set_controlling_tty() -> None:  # pragma: no cover - runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _resize(fd: int, width: int, height: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


async def _copy_in(read: Reader, write: Callable[[bytes], Any], done: Callable[[], Any]) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await read():
            await write(data)
    with contextlib.suppress(ConnectionError, OSError):
        await done()


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _read_fd(fd: int) -> bytes:
    """Read a non-blocking fd (a pty master) once it is readable; b"" at EIO/EOF (every slave closed)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
        except OSError as e:
            if e.errno == errno.EIO:
                return b""
            raise


async def run_exec(ref: ContainerRef, opts: StreamOptions, io: StreamIO) -> dict[str, Any]:
    """Run `opts.command` in the container, copying streams until it exits; returns the Status to report."""
    argv = [*ref.enter_prefix, *opts.command]
    if not opts.command:
        return failure_status("Internal error occurred: error executing command in container: no command specified")
    try:
        if opts.tty:
            return await _exec_tty(argv, ref, opts, io)
        return await _exec_pipes(argv, ref, opts, io)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        what = "executable file not found in $PATH" if isinstance(e, FileNotFoundError) else e.strerror
        return failure_status(
            "Internal error occurred: error executing command in container: failed to exec in container: "
            f'exec: "{opts.command[0]}": {what}'
        )


async def _exec_pipes(argv: list[str], ref: ContainerRef, opts: StreamOptions, io: StreamIO) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if opts.stdin and io.stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if io.stdout else asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE if io.stderr else asyncio.subprocess.DEVNULL,
        env=dict(ref.env),
        cwd=ref.cwd or None,
        start_new_session=True,
    )
    tasks = []

    async def copy_out(stream: asyncio.StreamReader, write: Writer) -> None:
        while data := await stream.read(_CHUNK):
            with contextlib.suppress(ConnectionError, OSError):
                await write(data)

    if proc.stdout is not None and io.stdout:
        tasks.append(asyncio.ensure_future(copy_out(proc.stdout, io.stdout)))
    if proc.stderr is not None and io.stderr:
        tasks.append(asyncio.ensure_future(copy_out(proc.stderr, io.stderr)))
    feeder = None
    if proc.stdin is not None and io.stdin is not None:
        stdin = proc.stdin

        async def write_in(data: bytes) -> None:
            stdin.write(data)
            await stdin.drain()

        async def close_in() -> None:
            stdin.close()

        feeder = asyncio.ensure_future(_copy_in(io.stdin, write_in, close_in))
    try:
        await asyncio.gather(*tasks)
        code = await proc.wait()
    finally:
        if feeder is not None:
            feeder.cancel()
        if proc.returncode is None:  # the client went away: stop what it started
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()
    return exit_status(opts.command, _exit_code(code))


async def _exec_tty(argv: list[str], ref: ContainerRef, opts: StreamOptions, io: StreamIO) -> dict[str, Any]:
    master, slave = pty.openpty()
    try:
        with contextlib.suppress(TimeoutError):  # the client sends its size first: start with it
            width, height = await asyncio.wait_for(io.resizes.get(), _FIRST_SIZE_WAIT)
            _resize(master, width, height)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(ref.env),
            cwd=ref.cwd or None,
            start_new_session=True,
            preexec_fn=_set_controlling_tty,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    os.set_blocking(master, False)

    async def copy_out() -> None:
        while data := await _read_fd(master):
            if io.stdout is not None:
                with contextlib.suppress(ConnectionError, OSError):
                    await io.stdout(data)

    async def resizer() -> None:
        while True:
            width, height = await io.resizes.get()
            _resize(master, width, height)

    async def write_in(data: bytes) -> None:
        await asyncio.get_running_loop().run_in_executor(None, _write_all, master, data)

    async def nothing() -> None:
        return None

    out = asyncio.ensure_future(copy_out())
    side = [asyncio.ensure_future(resizer())]
    if opts.stdin and io.stdin is not None:
        side.append(asyncio.ensure_future(_copy_in(io.stdin, write_in, nothing)))
    try:
        code = await proc.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(out, 2.0)  # what the command wrote last; a background child may hold the tty
    finally:
        for t in [out, *side]:
            t.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()
        os.close(master)
    return exit_status(opts.command, _exit_code(code))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            import select

            select.select([], [fd], [], 1.0)
            continue
        view = view[n:]


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def run_attach(ref: ContainerRef, opts: StreamOptions, io: StreamIO) -> dict[str, Any]:
    """Follow the container's output from now on (its CRI log lines, each to the stream it came from) and feed its
    stdin, until its main process ends; a `stdinOnce` container's stdin is closed when the session's input ends."""
    feeder = None
    target = ref.stdin
    once = bool(getattr(ref, "stdin_once", False)) and opts.stdin  # only a session with input uses up stdinOnce
    if opts.stdin and io.stdin is not None:

        async def write_in(data: bytes) -> None:
            if target is not None:
                target.write(data)
                await target.drain()

        async def input_done() -> None:
            if once and target is not None:
                target.close()  # stdinOnce: the container reads EOF

        feeder = asyncio.ensure_future(_copy_in(io.stdin, write_in, input_done))
    tty_path = getattr(ref, "tty_path", None)
    resizer = asyncio.ensure_future(_follow_resizes(tty_path, io)) if opts.tty and tty_path else None
    pid = ref.pid
    try:
        if ref.log_path is None:
            while _alive(pid):
                await asyncio.sleep(_ATTACH_POLL)
            return success_status()
        ref.log_path.parent.mkdir(parents=True, exist_ok=True)
        ref.log_path.touch(exist_ok=True)
        pending = b""
        quiet_after_exit = 0
        with ref.log_path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            while True:
                data = f.read(_CHUNK)
                if data:
                    pending += data
                    lines = pending.split(b"\n")
                    pending = lines.pop()
                    for raw in lines:
                        await _attach_out(io, opts, parse_line(raw))
                    continue
                if not _alive(pid):
                    # the log writer records the last lines just after the exit: take what comes in a few polls
                    quiet_after_exit += 1
                    if quiet_after_exit > _DRAIN_POLLS:
                        break
                await asyncio.sleep(_ATTACH_POLL)
    except (ConnectionError, OSError):
        pass
    finally:
        for task in (feeder, resizer):
            if task is not None:
                task.cancel()
        if once and target is not None:
            target.close()
    return success_status()


async def _attach_out(io: StreamIO, opts: StreamOptions, line: CriLine) -> None:
    text = line.content + (b"" if line.partial else b"\n")
    if line.stream == "stderr" and opts.stderr and io.stderr is not None:
        await io.stderr(text)
    elif io.stdout is not None:
        await io.stdout(text)


async def _follow_resizes(tty_path: str, io: StreamIO) -> None:
    """Terminal sizes from the client applied to the container's terminal (through its slave side)."""
    while True:
        width, height = await io.resizes.get()
        try:
            fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            _resize(fd, width, height)
        finally:
            os.close(fd)
