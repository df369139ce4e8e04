"""Container probes as the kubelet runs them: httpGet (HTTP and HTTPS, no certificate verification) and tcpSocket.

Used by the static Pod workers for startup, liveness and readiness probes. Success is a 2xx/3xx answer or an accepted
TCP connection within `timeoutSeconds`. Containers share the host network, so an empty `host` is the node's IP.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from pykubeadm.util.tlscontext import insecure_client_context

__all__ = ["Probe", "ProbeLoops", "ProbeResult", "run_probe"]


@dataclass(frozen=True)
class Probe:
    """A parsed probe with Kubernetes defaults (period 10 s, timeout 1 s, success 1, failure 3)."""

    spec: Mapping[str, Any]
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def parse(cls, spec: Mapping[str, Any] | None) -> Probe | None:
        if not spec:
            return None
        return cls(
            spec=spec,
            initial_delay=float(spec.get("initialDelaySeconds") or 0),
            period=float(spec.get("periodSeconds") or 10),
            timeout=float(spec.get("timeoutSeconds") or 1),
            success_threshold=int(spec.get("successThreshold") or 1),
            failure_threshold=int(spec.get("failureThreshold") or 3),
        )


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str = ""


def _port(value: Any, ports: Mapping[str, int]) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if value in ports:
        return ports[value]
    raise ValueError(f"unknown named port {value!r}")


_INSECURE = insecure_client_context()  # probes never verify; no CA bundle to load


async def run_probe(probe: Probe, pod_ip: str, named_ports: Mapping[str, int] | None = None) -> ProbeResult:
    """Run one probe attempt."""
    spec = probe.spec
    ports = named_ports or {}
    target = ""
    try:
        if "httpGet" in spec:
            hg = spec["httpGet"]
            scheme = (hg.get("scheme") or "HTTP").lower()
            host = hg.get("host") or pod_ip
            port = _port(hg.get("port"), ports)
            path = hg.get("path") or "/"
            if not path.startswith("/"):
                path = "/" + path
            headers = {h["name"]: h["value"] for h in hg.get("httpHeaders") or []}
            headers.setdefault("User-Agent", "kube-probe/1.33")
            url_host = f"[{host}]" if ":" in host else host
            target = f"{url_host}:{port}"
            # As the kubelet's prober: TLS without verification for every probe (it also makes no default context, which
            # would load the system CA bundle, ~35 ms, on every probe), and no connection kept for the next one.
            connector = aiohttp.TCPConnector(ssl=_INSECURE, force_close=True)
            timeout = aiohttp.ClientTimeout(total=probe.timeout)
            async with (
                aiohttp.ClientSession(connector=connector, timeout=timeout) as cl,
                cl.get(f"{scheme}://{url_host}:{port}{path}", headers=headers, allow_redirects=False) as resp,
            ):
                status = resp.status
            if 200 <= status < 400:
                return ProbeResult(True)
            return ProbeResult(False, f"HTTP probe failed with statuscode: {status}")
        if "tcpSocket" in spec:
            ts = spec["tcpSocket"]
            host = ts.get("host") or pod_ip
            port = _port(ts.get("port"), ports)
            target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), probe.timeout)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return ProbeResult(True)
        if "exec" in spec:
            return ProbeResult(True, "exec probes are not supported by the built-in runtime; treated as success")
        return ProbeResult(False, "probe has no handler")
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
        return ProbeResult(False, _failure(e, target))


def _failure(e: BaseException, target: str) -> str:
    """The Go net/http wording kubectl users know: `dial tcp HOST:PORT: connect: connection refused`."""
    if not target:
        return str(e)
    if isinstance(e, aiohttp.ClientConnectorError):
        e = e.os_error  # the connect's own error (aiohttp's text names its SSL settings)
    if isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower():
        return f"dial tcp {target}: connect: connection refused"
    if isinstance(e, TimeoutError):
        return f"dial tcp {target}: i/o timeout"
    return f"dial tcp {target}: {e}"


class ProbeLoops:
    """The kubelet's probe workers for one container instance: startup, then liveness and readiness, setting
    `started`/`ready` and telling `pod.changed()`. A container worker (built-in or CRI) provides `spec`, `pod`,
    `_probe` (one probe run: ok, message), `_probe_failed` (a failed startup/liveness probe: kill for restart) and
    `_probe_event`."""

    spec: dict[str, Any]
    pod: Any
    started: bool
    ready: bool

    async def _probe(self, probe: Probe) -> tuple[bool, str]:
        raise NotImplementedError

    async def _probe_failed(self, why: str, kind: str) -> None:
        raise NotImplementedError

    def _probe_event(self, kind: str, reason: str, message: str) -> None:
        raise NotImplementedError

    async def _probe_loop(self, started_mono: float) -> None:
        loop = asyncio.get_running_loop()
        startup = Probe.parse(self.spec.get("startupProbe"))
        liveness = Probe.parse(self.spec.get("livenessProbe"))
        readiness = Probe.parse(self.spec.get("readinessProbe"))
        if startup is not None:
            await asyncio.sleep(startup.initial_delay)
            failures = 0
            while True:
                ok, msg = await self._probe(startup)
                if ok:
                    break
                failures += 1
                self._probe_event("Warning", "Unhealthy", f"Startup probe failed: {msg}")
                if failures >= startup.failure_threshold:
                    await self._probe_failed(f"failed startup probe: {msg}", "startup")
                    return
                await asyncio.sleep(startup.period)
        self.started = True
        if readiness is None:
            self.ready = True
        self.pod.changed()
        tasks = []
        if liveness is not None:
            tasks.append(self._liveness(liveness, max(0.0, started_mono + liveness.initial_delay - loop.time())))
        if readiness is not None:
            tasks.append(self._readiness(readiness))
        if tasks:
            await asyncio.gather(*tasks)

    async def _liveness(self, probe: Probe, delay: float) -> None:
        await asyncio.sleep(delay)
        failures = 0
        while True:
            ok, msg = await self._probe(probe)
            failures = 0 if ok else failures + 1
            if not ok:
                self._probe_event("Warning", "Unhealthy", f"Liveness probe failed: {msg}")
            if failures >= probe.failure_threshold:
                await self._probe_failed(f"failed liveness probe: {msg}", "liveness")
                return
            await asyncio.sleep(probe.period)

    async def _readiness(self, probe: Probe) -> None:
        await asyncio.sleep(probe.initial_delay)
        ok_count = fail_count = 0
        while True:
            ok, msg = await self._probe(probe)
            if ok:
                ok_count, fail_count = ok_count + 1, 0
                if ok_count >= probe.success_threshold and not self.ready:
                    self.ready = True
                    self.pod.changed()
            else:
                ok_count, fail_count = 0, fail_count + 1
                self._probe_event("Warning", "Unhealthy", f"Readiness probe failed: {msg}")
                if fail_count >= probe.failure_threshold and self.ready:
                    self.ready = False
                    self.pod.changed()
            await asyncio.sleep(probe.period)
