"""The userspace proxier: asyncio listeners on every ClusterIP:port and NodePort, splicing to a chosen endpoint.

Used by `proxy.server` when the data plane is "userspace" (built-in mode; needs no root). A listener exists exactly
while its service port has usable endpoints for that kind of traffic: with none, nothing listens, so the kernel refuses
the connection (TCP RST; UDP ICMP port unreachable) the way kube-proxy's REJECT does. ClusterIP (and external IP)
listeners set SO_REUSEPORT, so the kube-proxies of several nodes on one host share them and any of them may accept;
NodePorts listen on this node's own addresses. A sync only swaps the endpoint list of existing listeners, so traffic
follows an EndpointSlice change at once. The proxier holds no state that another proxier accepting a connection could
break: round robin and affinity live in `Balancer` (affinity is per proxier; see there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pykubeadm.proxy.balancer import Balancer
from pykubeadm.proxy.servicemap import Endpoint, ProxyTable, ServicePort, categorize

__all__ = ["FrontendKey", "UserspaceProxier", "desired_frontends"]

log = logging.getLogger("kube-proxy")

#: (protocol, listen IP, port)
FrontendKey = tuple[str, str, int]

_CONNECT_TIMEOUT = 5.0
_BUFFER = 65536


@dataclass
class Frontend:
    """What one listener forwards to: the service port and the endpoints usable for its kind of traffic."""

    sp: ServicePort
    endpoints: list[Endpoint]


def _family(ip: str) -> int:
    return 6 if ":" in ip else 4


def desired_frontends(table: ProxyTable, node_name: str, node_ips: Sequence[str]) -> dict[FrontendKey, Frontend]:
    """Every listener this node's proxier should have, with its endpoints (pure; unit-tested)."""
    out: dict[FrontendKey, Frontend] = {}
    for name, sp in table.ports.items():
        if sp.protocol not in ("TCP", "UDP"):
            continue
        eps = table.endpoints.get(name, [])
        for fam in sorted({_family(ip) for ip in sp.cluster_ips}):
            cat = categorize(sp, eps, node_name, fam)
            internal = cat.internal(sp)
            if internal:
                for ip in sp.cluster_ips:
                    if _family(ip) == fam:
                        out[(sp.protocol, ip, sp.port)] = Frontend(sp, internal)
            external = cat.external(sp)
            if not external:
                continue
            for ip in sp.external_ips:
                if _family(ip) == fam:
                    out[(sp.protocol, ip, sp.port)] = Frontend(sp, external)
            if sp.node_port:
                for ip in node_ips:
                    if _family(ip) == fam:
                        out[(sp.protocol, ip, sp.node_port)] = Frontend(sp, external)
    return out


@dataclass
class _Listener:
    key: FrontendKey
    frontend: Frontend
    server: Any = None  # asyncio.Server (TCP) or DatagramTransport (UDP)
    sessions: dict[Any, _UdpSession] = field(default_factory=dict)


def _bound_socket(kind: int, ip: str, port: int, shared: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if _family(ip) == 6 else socket.AF_INET, kind)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((ip, port))
        if kind == socket.SOCK_STREAM:
            sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class _UdpSession(asyncio.DatagramProtocol):
    """One UDP client of a listener: a connected socket to its endpoint; replies go back from the listener."""

    def __init__(self, proxier: UserspaceProxier, listener: _Listener, client: Any):
        self.proxier, self.listener, self.client = proxier, listener, client
        self.transport: asyncio.DatagramTransport | None = None
        self.pending: list[bytes] = []
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        udp = cast(asyncio.DatagramTransport, transport)  # a datagram endpoint's protocol is given a datagram transport
        self.transport = udp
        for data in self.pending:
            udp.sendto(data)
        self.pending.clear()
        self.touch()

    def send(self, data: bytes) -> None:
        if self.transport is None:
            self.pending.append(data)
        else:
            self.transport.sendto(data)
            self.touch()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        front = self.listener.server
        if front is not None and not front.is_closing():
            front.sendto(data, self.client)
        self.touch()

    def error_received(self, exc: Exception) -> None:
        self.close()

    def touch(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(self.proxier.udp_idle_timeout, self.close)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
        if self.transport is not None:
            self.transport.close()
        if self.listener.sessions.get(self.client) is self:
            del self.listener.sessions[self.client]


class _UdpFront(asyncio.DatagramProtocol):
    def __init__(self, proxier: UserspaceProxier, listener: _Listener):
        self.proxier, self.listener = proxier, listener

    def datagram_received(self, data: bytes, addr: Any) -> None:
        session = self.listener.sessions.get(addr)
        if session is None:
            fe = self.listener.frontend
            ep = self.proxier.balancer.pick(fe.sp, fe.endpoints, addr[0])
            if ep is None:
                return
            session = _UdpSession(self.proxier, self.listener, addr)
            self.listener.sessions[addr] = session
            task = asyncio.ensure_future(
                asyncio.get_running_loop().create_datagram_endpoint(lambda: session, remote_addr=(ep.ip, ep.port))
            )
            task.add_done_callback(lambda t: session.close() if t.cancelled() or t.exception() else None)
        session.send(data)


class UserspaceProxier:
    """Listeners for one node; `sync(table)` reconciles them, `close()` stops them all."""

    name = "userspace"

    def __init__(
        self,
        node_name: str,
        node_ips: Sequence[str],
        *,
        balancer: Balancer | None = None,
        udp_idle_timeout: float = 30.0,
    ):
        self.node_name = node_name
        self.node_ips = list(node_ips)
        self.balancer = balancer or Balancer()
        self.udp_idle_timeout = udp_idle_timeout
        self.listeners: dict[FrontendKey, _Listener] = {}
        self._bind_failures: set[FrontendKey] = set()
        self._connections: set[asyncio.Task[None]] = set()

    def _shared(self, key: FrontendKey) -> bool:
        """ClusterIPs and external IPs are shared between the nodes of one host; NodePorts are per node address."""
        return key[1] not in self.node_ips

    async def sync(self, table: ProxyTable, *, full: bool = False) -> None:
        """Reconcile the listeners with `table` (every sync is complete: `full` changes nothing here)."""
        desired = desired_frontends(table, self.node_name, self.node_ips)
        for key in [k for k in self.listeners if k not in desired]:
            self._close_listener(self.listeners.pop(key))
        for key, frontend in desired.items():
            current = self.listeners.get(key)
            if current is not None:
                current.frontend = frontend
                continue
            listener = _Listener(key, frontend)
            try:
                await self._open(listener)
            except OSError as err:
                if key not in self._bind_failures:
                    log.error(
                        "Failed to listen for service %s on %s:%s/%s: %s",
                        frontend.sp.name,
                        key[1],
                        key[2],
                        key[0],
                        err.strerror or err,
                    )
                    self._bind_failures.add(key)
                continue
            self._bind_failures.discard(key)
            self.listeners[key] = listener
        self._bind_failures &= set(desired)
        self.balancer.prune(set(table.ports))

    async def _open(self, listener: _Listener) -> None:
        protocol, ip, port = listener.key
        loop = asyncio.get_running_loop()
        if protocol == "TCP":
            sock = _bound_socket(socket.SOCK_STREAM, ip, port, self._shared(listener.key))
            listener.server = await asyncio.start_server(
                lambda r, w: self._accepted(listener, r, w), sock=sock, limit=_BUFFER
            )
        else:
            sock = _bound_socket(socket.SOCK_DGRAM, ip, port, self._shared(listener.key))
            listener.server, _ = await loop.create_datagram_endpoint(lambda: _UdpFront(self, listener), sock=sock)

    def _close_listener(self, listener: _Listener) -> None:
        if listener.server is not None:
            listener.server.close()
        for session in list(listener.sessions.values()):
            session.close()

    def _accepted(self, listener: _Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._proxy_tcp(listener, reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _proxy_tcp(self, listener: _Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        tried: set[Endpoint] = set()
        frontend = listener.frontend
        while True:
            ep = self.balancer.pick(frontend.sp, listener.frontend.endpoints, peer[0], skip=frozenset(tried))
            if ep is None:
                writer.transport.abort()  # no endpoint answers: reset, as a REJECT would
                return
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(ep.ip, ep.port, limit=_BUFFER), _CONNECT_TIMEOUT
                )
            except (TimeoutError, OSError) as err:
                log.debug("Failed to connect to endpoint %s of %s: %s", ep, frontend.sp.name, err)
                tried.add(ep)
                self.balancer.forget(frontend.sp, peer[0])
                continue
            break
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        for w in (writer, up_writer):
            w.close()

    async def close(self) -> None:
        for listener in self.listeners.values():
            self._close_listener(listener)
        self.listeners.clear()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close the other side; a reset on either side aborts both."""
    try:
        while True:
            data = await reader.read(_BUFFER)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof() and not writer.is_closing():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.transport.abort()
