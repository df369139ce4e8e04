"""What the streaming handlers need to know about a running container, and how they ask for it.

The kubelet's pod runtime implements `ContainerLocator` (`Kubelet.container_ref`); exec, attach and port-forward only
read the `ContainerRef` it returns. A string instead of a ref is the reason the container cannot be reached, shown to
the user as it is (like `kubelet.logs.LogLocator`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ContainerLocator", "ContainerRef", "RuntimeStreams", "StdinWriter"]


class ContainerRef(Protocol):
    """A running container as a process. Only read, never stored: ask the locator again for each session."""

    @property
    def pid(self) -> int | None:
        """The container's main process on the host (None: not running now)."""

    @property
    def env(self) -> Mapping[str, str]:
        """The container's environment, as its main process got it (exec'd commands get the same)."""

    @property
    def cwd(self) -> str | None:
        """The working directory of the container's processes on the host (None: the kubelet's)."""

    @property
    def enter_prefix(self) -> Sequence[str]:
        """argv prefix that runs a command inside the container (e.g. `nsenter -t PID -m -p --`); [] when not
        sandboxed."""

    @property
    def pod_ip(self) -> str:
        """The Pod's IP: port-forward connects there (Pods share the node's network)."""

    @property
    def log_path(self) -> Path | None:
        """The current instance's log file (stdout and stderr): attach follows it (None: no output to follow)."""

    @property
    def stdin(self) -> StdinWriter | None:
        """The main process's stdin when the container has `stdin: true`, else None: attach writes there
        (`write()` + `await drain()`, `close()`: an asyncio.StreamWriter or the shim's FIFO writer)."""

    @property
    def stdin_once(self) -> bool:
        """The container's `stdinOnce`: its stdin is closed when the first attach session's input ends."""


class RuntimeStreams(Protocol):
    """A container runtime's streaming server for one container: the URL of each kind of session. A ContainerRef of
    a CRI runtime's container offers one as `runtime_streams` (the handlers then proxy the session to it)."""

    async def exec_url(self, opts: Any) -> str: ...

    async def attach_url(self, opts: Any) -> str: ...

    async def port_forward_url(self, ports: Sequence[int]) -> str: ...


class StdinWriter(Protocol):
    """Where attach input goes."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


#: (namespace, pod name, container name) → the container, or why it cannot be reached. container "" = any (port-forward).
ContainerLocator = Callable[[str, str, str], "ContainerRef | str"]
