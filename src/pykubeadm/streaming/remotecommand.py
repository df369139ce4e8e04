"""exec and attach, independent of the wire and of who runs the command: the session's options (the kubelet's query
parameters), the client's streams as a transport offers them, and the Status that ends a session.

A transport (WebSocket channels in `wsserve.py`, SPDY streams on the kubelet's side, the API server's stream
translator) hands a `StreamIO` to whatever runs the session and sends the returned Status on the error channel, as
the kubelet does: `Success`, or `Failure` with reason `NonZeroExitCode` and an `ExitCode` cause (kubectl prints
`command terminated with exit code N` and exits with N).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Reader",
    "StreamIO",
    "StreamOptions",
    "Writer",
    "exit_status",
    "failure_status",
    "success_status",
]

Reader = Callable[[], Awaitable[bytes]]
Writer = Callable[[bytes], Awaitable[None]]


@dataclass(frozen=True)
class StreamOptions:
    """The kubelet's query parameters `input`, `output`, `error`, `tty` (and `command` for exec)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    command: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, query: Any) -> StreamOptions:
        def flag(*names: str) -> bool:
            return any(query.get(n, "").lower() in ("1", "true") for n in names)

        tty = flag("tty")
        return cls(
            stdin=flag("input", "stdin"),
            stdout=flag("output", "stdout"),
            stderr=flag("error", "stderr") and not tty,  # a terminal merges stderr into stdout
            tty=tty,
            command=tuple(query.getall("command", [])),
        )


@dataclass
class StreamIO:
    """The client's side, as the transport offers it: stdin (b"" at EOF), stdout/stderr writers, terminal sizes."""

    stdout: Writer | None = None
    stderr: Writer | None = None
    stdin: Reader | None = None
    resizes: asyncio.Queue[tuple[int, int]] = field(default_factory=asyncio.Queue)  # (width, height)


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def failure_status(message: str, reason: str = "InternalError", code: int = 500) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def exit_status(command: Sequence[str], code: int) -> dict[str, Any]:
    """The Status of a finished command: Success for 0, else NonZeroExitCode with the code as an ExitCode cause."""
    if code == 0:
        return success_status()
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: command '{' '.join(command)}' exited with {code}: ",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }
