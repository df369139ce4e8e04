"""What the streaming handlers need to know about a running container, and how they ask for it.

The kubelet's pod runtime implements `ContainerLocator` (`Kubelet.container_ref`); exec, attach and port-forward only
read the `ContainerRef` it returns. A string instead of a ref is the reason the container cannot be reached, shown to
the user as it is (like `kubelet.logs.LogLocator`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["ContainerLocator", "ContainerRef", "StdinWriter"]


class ContainerRef(Protocol):
    """A running container as a process. Only read, never stored: ask the locator again for each session."""

    #: The container's main process on the host (None: not running now).
    pid: int | None
    #: The container's environment, as its main process got it (exec'd commands get the same).
    env: Mapping[str, str]
    #: The working directory of the container's processes on the host (None: the kubelet's).
    cwd: str | None
    #: argv prefix that runs a command inside the container (e.g. `nsenter -t PID -m -p --`); [] when not sandboxed.
    enter_prefix: Sequence[str]
    #: The Pod's IP: port-forward connects there (Pods share the node's network).
    pod_ip: str
    #: The current instance's log file (stdout and stderr): attach follows it (None: no output to follow).
    log_path: Path | None
    #: The main process's stdin when the container has `stdin: true`, else None: attach writes there
    #: (`write()` + `await drain()`, `close()`: an asyncio.StreamWriter or the shim's FIFO writer).
    stdin: StdinWriter | None
    #: The container's `stdinOnce`: its stdin is closed when the first attach session's input ends.
    stdin_once: bool


class StdinWriter(Protocol):
    """Where attach input goes."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


#: (namespace, pod name, container name) → the container, or why it cannot be reached. container "" = any (port-forward).
ContainerLocator = Callable[[str, str, str], "ContainerRef | str"]
