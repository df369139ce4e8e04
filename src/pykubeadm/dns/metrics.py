"""The DNS server's Prometheus metrics, with CoreDNS's names and labels (prometheus_client, one registry per process).

Recorded by the prometheus plugin (requests, responses, durations, sizes), cache, forward, health and reload; served
on `/metrics` by the prometheus plugin. Labels follow CoreDNS 1.12 (`server` is `dns://:53`, `view` is empty).
"""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, disable_created_metrics

__all__ = [
    "BUILD_INFO",
    "CACHE_ENTRIES",
    "CACHE_HITS",
    "CACHE_MISSES",
    "CACHE_REQUESTS",
    "FORWARD_REJECTS",
    "HEALTH_DURATION",
    "PANICS",
    "PLUGIN_ENABLED",
    "PROXY_DURATION",
    "REGISTRY",
    "RELOAD_FAILED",
    "RELOAD_VERSION",
    "REQUESTS",
    "REQUEST_DURATION",
    "REQUEST_SIZE",
    "RESPONSES",
    "RESPONSE_SIZE",
    "python_version",
]

disable_created_metrics()  # CoreDNS exposes no `_created` series
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

_SIZE_BUCKETS = (0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16e3, 32e3, 48e3, 64e3)
_TIME_BUCKETS = tuple(0.00025 * 2**i for i in range(16))


def python_version() -> str:
    """What runs us, where CoreDNS names its Go version: `python3.11.2`."""
    return f"python{platform.python_version()}"


BUILD_INFO = Gauge(
    "coredns_build_info",
    "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.",
    ["version", "revision", "goversion"],
    registry=REGISTRY,
)
PANICS = Counter("coredns_panics_total", "A metrics that counts the number of panics.", registry=REGISTRY)
PLUGIN_ENABLED = Gauge(
    "coredns_plugin_enabled",
    "A metric that indicates whether a plugin is enabled on per server and zone basis.",
    ["server", "zone", "view", "name"],
    registry=REGISTRY,
)
REQUESTS = Counter(
    "coredns_dns_requests",
    "Counter of DNS requests made per zone, protocol and family.",
    ["server", "zone", "view", "proto", "family", "type"],
    registry=REGISTRY,
)
RESPONSES = Counter(
    "coredns_dns_responses",
    "Counter of response status codes.",
    ["server", "zone", "view", "rcode", "plugin"],
    registry=REGISTRY,
)
REQUEST_DURATION = Histogram(
    "coredns_dns_request_duration_seconds",
    "Histogram of the time (in seconds) each request took per zone.",
    ["server", "zone", "view", "type"],
    buckets=_TIME_BUCKETS,
    registry=REGISTRY,
)
REQUEST_SIZE = Histogram(
    "coredns_dns_request_size_bytes",
    "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
    ["server", "zone", "view", "proto"],
    buckets=_SIZE_BUCKETS,
    registry=REGISTRY,
)
RESPONSE_SIZE = Histogram(
    "coredns_dns_response_size_bytes",
    "Size of the returned response in bytes.",
    ["server", "zone", "view", "proto"],
    buckets=_SIZE_BUCKETS,
    registry=REGISTRY,
)
CACHE_ENTRIES = Gauge(
    "coredns_cache_entries",
    "The number of elements in the cache.",
    ["server", "type", "zones", "view"],
    registry=REGISTRY,
)
CACHE_HITS = Counter(
    "coredns_cache_hits", "The count of cache hits.", ["server", "type", "zones", "view"], registry=REGISTRY
)
CACHE_MISSES = Counter(
    "coredns_cache_misses",
    "The count of cache misses. Deprecated, derive misses from cache hits/requests counters.",
    ["server", "zones", "view"],
    registry=REGISTRY,
)
CACHE_REQUESTS = Counter(
    "coredns_cache_requests", "The count of cache requests.", ["server", "zones", "view"], registry=REGISTRY
)
PROXY_DURATION = Histogram(
    "coredns_proxy_request_duration_seconds",
    "Histogram of the time each request took.",
    ["proxy_name", "to", "rcode"],
    buckets=_TIME_BUCKETS,
    registry=REGISTRY,
)
FORWARD_REJECTS = Counter(
    "coredns_forward_max_concurrent_rejects",
    "Counter of the number of queries rejected because the concurrent queries were at maximum.",
    registry=REGISTRY,
)
HEALTH_DURATION = Histogram(
    "coredns_health_request_duration_seconds",
    "Histogram of the time (in seconds) each request took.",
    buckets=(0.00025, 0.0025, 0.025, 0.25, 2.5),
    registry=REGISTRY,
)
RELOAD_FAILED = Counter("coredns_reload_failed", "Counter of the number of failed reload attempts.", registry=REGISTRY)
RELOAD_VERSION = Gauge(
    "coredns_reload_version_info",
    "A metric with a constant '1' value labeled by hash, and value which type of hash generated.",
    ["hash", "value"],
    registry=REGISTRY,
)
