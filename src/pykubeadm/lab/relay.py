"""The network-namespace lab's loopback relay: the host's 127.0.0.1 ports forwarded into the lab network.

kind publishes the API server (and `extraPortMappings`) on 127.0.0.1 through Docker's port forwarding; this is that
forwarder. The lab (`start`) binds each listening socket on 127.0.0.1 in the host's namespace, then starts the relay
as `python -m pykubeadm.lab.relay --state DIR --namespaces NSDIR FD=HOST:PORT...`, handing it the sockets; it enters
the lab's own network namespace (the bridge's) before anything else. So it accepts on the host's loopback and opens
its outbound connections inside the lab: no lab address is ever routed on the host. Each connection is relayed byte
for byte (TLS passes through), both ways, until both sides have closed. Its pid is in `.lab/relay.pid`; `stop` ends
it by that pid, after checking it is this lab's relay, never by name.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from pykubeadm.errors import KubeadmError
from pykubeadm.lab.pidfile import recorded_pid, stop_recorded, write_pid

__all__ = ["Mapping", "listen", "running", "start", "stop"]

_PID_FILE = "relay.pid"
_LOG_FILE = "relay.log"
_MODULE = "pykubeadm.lab.relay"
_BUFFER = 1 << 16

#: One forwarded port: (the listening socket on the host, the target "HOST:PORT" in the lab network).
Mapping = tuple[socket.socket, str]


def listen(port: int, what: str) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: a free port) in this process's namespace; `what` names it in the
    error when the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        raise KubeadmError(f"lab: cannot listen on 127.0.0.1:{port} for {what}: {err.strerror}") from err
    return sock


def start(state: Path, network_ns: Path, mappings: list[Mapping]) -> int:
    """Start the relay inside the namespace of `network_ns` (a directory with `net`) for `mappings`; its pid. The
    sockets are closed in this process."""
    fds = [s.fileno() for s, _ in mappings]
    args = [f"{s.fileno()}={target}" for s, target in mappings]
    with open(state / _LOG_FILE, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", _MODULE, "--state", str(state), "--namespaces", str(network_ns), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=fds,
            start_new_session=True,
        )
    for s, _ in mappings:
        s.close()
    write_pid(state / _PID_FILE, proc.pid)
    return proc.pid


def running(state: Path) -> int | None:
    """The pid of this lab's relay, if it runs."""
    return recorded_pid(state / _PID_FILE, _MODULE, str(state))


def stop(state: Path) -> bool:
    """Stop this lab's relay by its pid; True if one ran."""
    return stop_recorded(state / _PID_FILE, _MODULE, str(state))


# --- the relay process (threads, not asyncio: it starts while init is busiest, and asyncio's imports cost more) ------


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy `src` to `dst` until `src` ends, then end `dst`'s writing side (a half-close passes through)."""
    try:
        while data := src.recv(_BUFFER):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _relay(conn: socket.socket, target: str) -> None:
    host, _, port = target.rpartition(":")
    try:
        upstream = socket.create_connection((host, int(port)), timeout=10.0)
    except OSError:
        conn.close()
        return
    upstream.settimeout(None)
    back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
    back.start()
    _pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def _accept(listener: socket.socket, target: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # EMFILE, ECONNABORTED: the next client may fare better
            continue
        threading.Thread(target=_relay, args=(conn, target), daemon=True).start()


def main(argv: list[str]) -> int:  # pragma: no cover - runs as the relay process (the e2e tests start it)
    if len(argv) < 5 or argv[0] != "--state" or argv[2] != "--namespaces":
        print("usage: python -m pykubeadm.lab.relay --state DIR --namespaces DIR FD=HOST:PORT...", file=sys.stderr)
        return 2
    from pykubeadm.util.namespaces import enter

    enter(argv[3])  # the listening sockets stay on the host's loopback; every connection it opens is in the lab
    for spec in argv[4:]:
        fd, _, target = spec.partition("=")
        listener = socket.socket(fileno=int(fd))
        threading.Thread(target=_accept, args=(listener, target), daemon=True).start()
    while True:  # until SIGTERM (lab down)
        signal.pause()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
