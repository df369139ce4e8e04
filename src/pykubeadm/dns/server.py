"""The DNS server process: UDP and TCP listeners, routing each query to its server block, start-up, reload, stop.

`DnsServer(corefile_path, dns_port, env).run()` is what `pykubeadm component coredns` runs. Per configuration it
sets up the blocks (`dns.setup`), starts the plugins (the kubernetes plugin waits up to 5 s for its first sync),
the health/ready/metrics listeners and one UDP and one TCP listener per address, then prints CoreDNS's start-up
lines. Every listener sets SO_REUSEPORT, as CoreDNS's do: replicas whose Pods share one address (two CoreDNS Pods
on one lab node) share its ports, the kernel spreading queries between them. A query goes to the block whose zone
is the longest suffix of its name (REFUSED when none); its reply is sized to the client's UDP limit (TC set when it
does not fit). SIGUSR1 or the reload plugin loads a changed
Corefile (kept running on the old one if the new one fails); SIGTERM/SIGINT stop after the health plugin's lameduck.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import platform
import signal
from typing import Any, cast

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdatatype

from pykubeadm import constants as c
from pykubeadm.dns import metrics
from pykubeadm.dns.corefile import CorefileError
from pykubeadm.dns.plugin import PluginError, Request, in_zone
from pykubeadm.dns.plugins.reload import corefile_sha512
from pykubeadm.dns.setup import Block, Config, load_config

__all__ = ["DnsServer", "Router", "version_lines"]

log = logging.getLogger("coredns")
banner = logging.getLogger("coredns.banner")

#: Idle TCP connections are closed after this long (CoreDNS's read timeout).
TCP_IDLE_TIMEOUT = 10.0
TCP_MAX_SIZE = 65535
_QR = int(dns.flags.QR)


def version_lines(version: str) -> list[str]:
    """`CoreDNS-1.12.0` and the build line (ours names Python and pykubeadm where CoreDNS names Go and a commit)."""
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return [f"CoreDNS-{version}", f"linux/{machine}, {metrics.python_version()}, pykubeadm-{c.KUBEADM_VERSION}"]


class Router:
    """The blocks served on one port, longest zone first: turns a wire query into a wire reply."""

    def __init__(self, port: int, blocks: list[Block]):
        self.port = port
        self.server_label = f"dns://:{port}"
        self.reroute(blocks)

    def reroute(self, blocks: list[Block]) -> None:
        """Serve these blocks from now on (a reload keeps the sockets and swaps the blocks)."""
        self.routes = sorted(
            ((k.zone, b) for b in blocks for k in b.keys if k.port == self.port),
            key=lambda zb: len(zb[0]),
            reverse=True,
        )

    def route(self, name: str) -> tuple[str, Block] | None:
        for zone, block in self.routes:
            if in_zone(name, zone):
                return zone, block
        return None

    async def resolve(self, qname: dns.name.Name, qtype: int, depth: int = 0) -> dns.message.Message:
        """Run a query through the blocks from inside the server (the kubernetes plugin's CNAME targets)."""
        msg = dns.message.make_query(qname, dns.rdatatype.RdataType.make(qtype))
        reply, _ = await self.handle(msg, ("127.0.0.1", 0), "udp", 0, depth=depth)
        return reply

    async def answer(self, data: bytes, client: tuple[str, int], proto: str) -> bytes | None:
        try:
            msg = dns.message.from_wire(data)
        except dns.exception.DNSException:
            return None  # not a DNS message we can answer: dropped, as CoreDNS does
        if msg.flags & _QR:
            return None  # a response sent to us: never answer one (no ping-pong between servers)
        reply, req = await self.handle(msg, client, proto, len(data))
        max_size = req.max_size if req is not None and proto == "udp" else TCP_MAX_SIZE
        try:
            wire = reply.to_wire(max_size=max_size)
        except dns.exception.TooBig:
            short = dns.message.make_response(msg)
            short.set_rcode(reply.rcode())
            short.flags = reply.flags | dns.flags.TC
            wire = short.to_wire()
        if req is not None and "on_written" in req.extra:
            req.extra["on_written"](len(wire))
        return wire

    async def handle(
        self, msg: dns.message.Message, client: tuple[str, int], proto: str, size: int, depth: int = 0
    ) -> tuple[dns.message.Message, Request | None]:
        if msg.opcode() != dns.opcode.QUERY:
            return _error(msg, dns.rcode.NOTIMP), None
        if len(msg.question) != 1:
            return _error(msg, dns.rcode.FORMERR), None
        q = msg.question[0]
        name = q.name.to_text().lower()
        routed = self.route(name)
        if routed is None:
            return _error(msg, dns.rcode.REFUSED), None
        zone, block = routed
        max_size = max(512, msg.payload) if msg.edns >= 0 else 512
        req = Request(
            msg,
            client,
            proto,
            self.server_label,
            zone,
            q.name,
            q.rdtype,
            q.rdclass,
            max_size,
            {"name_text": name, "size": size, "depth": depth},
        )
        try:
            reply = await block.handler(req)
        except Exception as err:
            log.debug("%s %s: %s", name, dns.rdatatype.to_text(q.rdtype), err)
            reply = _error(msg, dns.rcode.SERVFAIL)
        reply.id = msg.id
        return reply, req


def _error(msg: dns.message.Message, rcode: int) -> dns.message.Message:
    reply = dns.message.make_response(msg) if msg.question else dns.message.Message(msg.id)
    reply.flags |= dns.flags.QR
    reply.set_rcode(dns.rcode.Rcode.make(rcode))
    return reply


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, router: Router):
        self.router = router
        self.transport: asyncio.DatagramTransport | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # a datagram endpoint's transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        task = asyncio.ensure_future(self._reply(data, addr))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _reply(self, data: bytes, addr: tuple[str, int]) -> None:
        wire = await self.router.answer(data, addr[:2], "udp")
        if wire is not None and self.transport is not None and not self.transport.is_closing():
            self.transport.sendto(wire, addr)


async def _serve_tcp(router: Router, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername") or ("", 0)
    try:
        while True:
            header = await asyncio.wait_for(reader.readexactly(2), TCP_IDLE_TIMEOUT)
            data = await asyncio.wait_for(reader.readexactly(int.from_bytes(header, "big")), TCP_IDLE_TIMEOUT)
            wire = await router.answer(data, tuple(peer[:2]), "tcp")
            if wire is None:
                break
            writer.write(len(wire).to_bytes(2, "big") + wire)
            await writer.drain()
    except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


class _Running:
    """One configuration, started: its plugins, HTTP listeners and DNS sockets (which a reload can adopt)."""

    def __init__(self, config: Config):
        self.config = config
        self.routers = {k.port: Router(k.port, config.blocks) for b in config.blocks for k in b.keys}
        self.udp: list[asyncio.DatagramTransport] = []
        self.tcp: list[asyncio.base_events.Server] = []
        self.started: list[Any] = []
        self.http_started = False
        shared = config.shared
        shared["plugins"] = config.plugins
        shared["listening"] = asyncio.Event()
        shared["resolve"] = next(iter(self.routers.values())).resolve

    def addresses(self) -> set[tuple[str, int]]:
        return {(h, k.port) for b in self.config.blocks for k in b.keys for h in b.hosts}

    async def start_plugins(self) -> None:
        for plugin in self.config.plugins:
            await plugin.start()
            self.started.append(plugin)

    async def start_http(self) -> None:
        http = self.config.shared.get("http")
        if http is not None:
            await http.start_all()
        self.http_started = True

    async def bind(self) -> None:
        loop = asyncio.get_running_loop()
        for host, port in sorted(self.addresses()):
            router = self.routers[port]
            transport, _ = await loop.create_datagram_endpoint(
                functools.partial(_UdpProtocol, router), local_addr=(host, port), reuse_port=True
            )
            self.udp.append(transport)
            self.tcp.append(
                await asyncio.start_server(
                    functools.partial(_serve_tcp, router), host, port, reuse_address=True, reuse_port=True
                )
            )
        self._listening()

    def adopt(self, old: _Running) -> None:
        """Take over `old`'s sockets (same addresses): its routers now route to this configuration's blocks."""
        for port, router in old.routers.items():
            router.reroute(self.config.blocks)
            self.routers[port] = router
        self.config.shared["resolve"] = next(iter(self.routers.values())).resolve
        self.udp, self.tcp, old.udp, old.tcp = old.udp, old.tcp, [], []
        self._listening()

    def _listening(self) -> None:
        host, port = min(self.addresses())
        self.config.shared["self_address"] = ("127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
        self.config.shared["listening"].set()

    async def start(self) -> None:
        try:
            await self.start_plugins()
            await self.start_http()
            await self.bind()
        except BaseException:
            await self.stop()
            raise

    async def stop_sockets(self) -> None:
        for transport in self.udp:
            transport.close()
        for server in self.tcp:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2.0)
        self.udp.clear()
        self.tcp.clear()

    async def stop_http(self) -> None:
        http = self.config.shared.get("http")
        if http is not None and self.http_started:
            await http.stop_all()
        self.http_started = False

    async def stop_plugins(self) -> None:
        for plugin in reversed(self.started):
            with contextlib.suppress(Exception):
                await plugin.stop()
        self.started.clear()

    async def stop(self) -> None:
        await self.stop_sockets()
        await self.stop_http()
        await self.stop_plugins()


class DnsServer:
    """The whole process: load, start, reload on request, stop on a signal (or a fatal plugin error)."""

    def __init__(self, corefile_path: str, *, dns_port: int, env: dict[str, str], version: str):
        self.path = corefile_path
        self.dns_port = dns_port
        self.env = env
        self.version = version
        self._events: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.exit_code = 0

    def load(self, text: str) -> Config:
        config = load_config(text, self.path, dns_port=self.dns_port, env=self.env, corefile_path=self.path)
        config.shared["corefile_sha512"] = corefile_sha512(text)
        config.shared["request_reload"] = lambda new: self._events.put_nowait(("reload", new))
        config.shared["fatal"] = lambda message: self._events.put_nowait(("fatal", message))
        return config

    def _announce(self, config: Config) -> None:
        log.info("plugin/reload: Running configuration SHA512 = %s", config.shared["corefile_sha512"])
        for block in config.blocks:
            for key in block.keys:
                banner.info("%s:%d", key.zone, key.port)
        for line in version_lines(self.version):
            banner.info("%s", line)
        for block in config.blocks:
            for key in block.keys:
                for plugin in block.plugins:
                    metrics.PLUGIN_ENABLED.labels(f"dns://:{key.port}", key.zone, "", plugin.name).set(1)

    async def _start(self, config: Config) -> _Running:
        running = _Running(config)
        await running.start()
        return running

    async def run(self, text: str) -> int:
        """Serve the Corefile `text` until stopped; the exit code (1 after a fatal error)."""
        config = self.load(text)
        metrics.BUILD_INFO.labels(self.version, "pykubeadm", metrics.python_version()).set(1)
        metrics.RELOAD_VERSION.labels("sha512", config.shared["corefile_sha512"]).set(1)
        running = await self._start(config)
        self._announce(config)
        loop = asyncio.get_running_loop()
        for sig, event in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT"), (signal.SIGUSR1, "SIGUSR1")):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._events.put_nowait, (event, ""))
        try:
            while True:
                kind, arg = await self._events.get()
                if kind in ("SIGTERM", "SIGINT"):
                    log.info("%s: Shutting down servers then terminating", kind)
                    await self._lameduck(running.config)
                    return self.exit_code
                if kind == "fatal":
                    logging.getLogger("coredns.fatal").critical("%s", arg)
                    return 1
                if kind == "SIGUSR1":
                    log.info("SIGUSR1: Reloading")
                    try:
                        with open(self.path, encoding="utf-8") as f:
                            arg = f.read()
                    except OSError as err:
                        log.error("Restart failed: %s", err)
                        continue
                running = await self._reload(running, arg)
        finally:
            await running.stop()

    async def _lameduck(self, config: Config) -> None:
        duration = float(config.shared.get("lameduck") or 0.0)
        config.shared["shutting_down"] = True
        if duration > 0:
            logging.getLogger("plugin/health").info("Going into lameduck mode for %gs", duration)
            await asyncio.sleep(duration)

    async def _reload(self, running: _Running, text: str) -> _Running:
        sha = corefile_sha512(text)
        try:
            config = self.load(text)
        except (CorefileError, PluginError, ValueError) as err:
            log.error("Restart failed: %s", err)
            metrics.RELOAD_FAILED.inc()
            running.config.shared["failed_sha512"] = sha
            return running
        log.info("Reloading")
        # the new configuration starts (its kubernetes plugin syncs) while the old one still answers
        new = _Running(config)
        try:
            await new.start_plugins()
            await running.stop_http()
            try:
                await new.start_http()
            except OSError:
                await running.start_http()
                raise
        except (OSError, PluginError) as err:
            log.error("Restart failed: %s", err)
            metrics.RELOAD_FAILED.inc()
            await new.stop()
            running.config.shared["failed_sha512"] = sha
            return running
        if new.addresses() == running.addresses():
            new.adopt(running)  # same sockets, no query lost
        else:
            await running.stop_sockets()
            try:
                await new.bind()
            except OSError as err:
                log.error("Restart failed: %s", err)
                metrics.RELOAD_FAILED.inc()
                await new.stop()
                await running.start_http()
                await running.bind()
                running.config.shared["failed_sha512"] = sha
                return running
        await running.stop_plugins()
        metrics.RELOAD_VERSION.clear()
        metrics.RELOAD_VERSION.labels("sha512", sha).set(1)
        self._announce(config)
        log.info("Reloading complete")
        return new
