"""Scraping the kubelets: each node's /metrics/resource, parsed into the points the storage keeps.

As metrics-server's scraper: every `--metric-resolution` all nodes are scraped concurrently over HTTPS on the
kubelet's port (`--kubelet-use-node-status-port`: the Node's status.daemonEndpoints.kubeletEndpoint.Port, else
`--kubelet-port`), at the first of the Node's addresses of `--kubelet-preferred-address-types`, with the metrics
server's own bearer token (the kubelet reviews it and authorizes `get nodes/metrics` by SubjectAccessReview); a node
that fails is logged and skipped for that cycle. Only the series metrics-server reads are parsed: node and container
CPU (cumulative core-seconds), working set and container start time, each with the timestamp the kubelet measured it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

__all__ = ["ContainerPoint", "MetricsBatch", "NodePoint", "Scraper", "node_endpoint", "parse_resource_metrics"]

log = logging.getLogger(__name__)

DEFAULT_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")


@dataclass(slots=True)
class NodePoint:
    """One measurement of a node: cumulative CPU core-seconds and working set bytes at `timestamp` (seconds)."""

    timestamp: float = 0.0
    cpu: float | None = None
    memory: float | None = None


@dataclass(slots=True)
class ContainerPoint:
    """One measurement of a container, with the time it started (seconds since the epoch)."""

    timestamp: float = 0.0
    cpu: float | None = None
    memory: float | None = None
    start_time: float = 0.0


@dataclass
class MetricsBatch:
    """What one scrape cycle found: node name → point, (namespace, pod) → container name → point."""

    nodes: dict[str, NodePoint] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, ContainerPoint]] = field(default_factory=dict)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_WANTED = frozenset(
    (
        "node_cpu_usage_seconds_total",
        "node_memory_working_set_bytes",
        "container_cpu_usage_seconds_total",
        "container_memory_working_set_bytes",
        "container_start_time_seconds",
    )
)


def parse_resource_metrics(node: str, text: str, batch: MetricsBatch, now: float | None = None) -> None:
    """Add one kubelet's /metrics/resource (Prometheus text format) to `batch`; unknown series are ignored."""
    fallback = time.time() if now is None else now
    npoint = NodePoint()
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name_end = line.find("{")
        if name_end < 0:
            name_end = line.find(" ")
        if line[:name_end] not in _WANTED:
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        name, labels_text, value_text, ts_text = m.groups()
        try:
            value = float(value_text)
        except ValueError:
            continue
        ts = int(ts_text) / 1000.0 if ts_text else fallback
        if name.startswith("node_"):
            npoint.timestamp = ts
            if name == "node_cpu_usage_seconds_total":
                npoint.cpu = value
            else:
                npoint.memory = value
            continue
        labels = dict(_LABEL.findall(labels_text or ""))
        key = (labels.get("namespace", ""), labels.get("pod", ""))
        container = labels.get("container", "")
        if not key[1] or not container:
            continue
        cpoint = batch.pods.setdefault(key, {}).setdefault(container, ContainerPoint())
        if name == "container_start_time_seconds":
            cpoint.start_time = value
            continue
        cpoint.timestamp = ts
        if name == "container_cpu_usage_seconds_total":
            cpoint.cpu = value
        else:
            cpoint.memory = value
    if npoint.cpu is not None and npoint.memory is not None:
        batch.nodes[node] = npoint


def node_endpoint(
    node: Any, address_types: Sequence[str], default_port: int, use_node_status_port: bool
) -> tuple[str, int] | None:
    """(address, port) of a Node's kubelet, as metrics-server picks them; None when the Node has no such address."""
    status = node.get("status") or {}
    port = default_port
    if use_node_status_port:
        port = int((((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")) or default_port)
    addresses = status.get("addresses") or []
    for kind in address_types:
        for a in addresses:
            if a.get("type") == kind and a.get("address"):
                return str(a["address"]), port
    return None


class Scraper:
    """Scrapes every node's kubelet concurrently; `nodes()` gives the current Node objects as dicts."""

    def __init__(
        self,
        nodes: Callable[[], list[dict[str, Any]]],
        token: Callable[[], str],
        ssl_context: ssl.SSLContext,
        *,
        address_types: Sequence[str] = DEFAULT_ADDRESS_TYPES,
        kubelet_port: int = 10250,
        use_node_status_port: bool = False,
        timeout: float = 10.0,
    ) -> None:
        self.nodes = nodes
        self.token = token
        self.ssl_context = ssl_context
        self.address_types = tuple(address_types)
        self.kubelet_port = kubelet_port
        self.use_node_status_port = use_node_status_port
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        #: node → the last scrape's error text (for /metrics and logs)
        self.errors: dict[str, str] = {}

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self.ssl_context, keepalive_timeout=60),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        return self._session

    async def scrape(self) -> MetricsBatch:
        batch = MetricsBatch()
        nodes = self.nodes()
        texts = await asyncio.gather(*(self._fetch(n) for n in nodes))
        now = time.time()
        for node, text in zip(nodes, texts, strict=True):
            if text is not None:
                parse_resource_metrics(node["metadata"]["name"], text, batch, now)
        return batch

    async def _fetch(self, node: dict[str, Any]) -> str | None:
        name = node["metadata"]["name"]
        endpoint = node_endpoint(node, self.address_types, self.kubelet_port, self.use_node_status_port)
        if endpoint is None:
            self.errors[name] = "no address of the preferred types"
            log.error('Failed to scrape node, err="unable to extract connection information for node %r"', name)
            return None
        host, port = endpoint
        url = f"https://{f'[{host}]' if ':' in host else host}:{port}/metrics/resource"
        try:
            async with self.session.get(url, headers={"Authorization": f"Bearer {self.token()}"}) as r:
                body = await r.text()
                if r.status != 200:
                    raise RuntimeError(f"request failed, status: {r.status} {r.reason}")
        except (aiohttp.ClientError, OSError, TimeoutError, RuntimeError) as err:
            self.errors[name] = str(err)
            log.error('Failed to scrape node, err="%s" node=%r', err or type(err).__name__, name)
            return None
        self.errors.pop(name, None)
        return body

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
