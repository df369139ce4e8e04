"""Finding a container of one of the kubelet's Pods (static or API) by namespace, Pod name and container name.

`Kubelet.container_log` (kubectl logs) and `Kubelet.container_ref` (exec, attach, port-forward in the streaming
server) use it; a miss is an error string worded as the kubelet's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ContainerRef", "find_container"]


@dataclass(frozen=True)
class ContainerRef:
    """What exec/attach/port-forward need of a running container."""

    pid: int | None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    enter_prefix: list[str] = field(default_factory=list)
    pod_ip: str = ""
    log_path: Path | None = None
    stdin: Any = None  # shim.FifoWriter of a `stdin: true` container
    stdin_once: bool = False
    tty_path: str | None = None  # the terminal of a `tty: true` container (attach applies resizes to it)
    runtime_streams: Any = None  # kubelet.cri.streams.CRIStreams of a CRI container: its runtime serves sessions

    @classmethod
    def of(cls, worker: Any, ct: Any) -> ContainerRef:
        return cls(
            pid=ct.pid,
            env=dict(ct.env),
            cwd=ct.cwd,
            enter_prefix=list(ct.enter_prefix),
            pod_ip=worker.pod_ip,
            log_path=ct.log_path(),
            stdin=getattr(ct.proc, "stdin", None) if ct.pid is not None else None,
            stdin_once=bool(ct.spec.get("stdinOnce")),
            tty_path=_tty_path(ct),
            runtime_streams=getattr(ct, "streams", None),
        )


def find_container(workers: Iterable[Any], namespace: str, pod: str, container: str) -> tuple[Any, Any] | str:
    """(worker, container worker) for `namespace/pod`'s `container` ("" = the first container), or why not."""
    for w in workers:
        if w.namespace != namespace or w.full_name != pod:
            continue
        ct = w.container(container) if container else (w.containers[0] if w.containers else None)
        if ct is None:
            return f'container "{container}" in pod "{pod}" is not available'
        return w, ct
    return f'pod "{pod}" in namespace "{namespace}" not found'


def _tty_path(ct: Any) -> str | None:
    directory = getattr(ct.proc, "dir", None)
    if directory is None or ct.pid is None:
        return None
    try:
        return (Path(directory) / "tty").read_text().strip() or None
    except OSError:
        return None
