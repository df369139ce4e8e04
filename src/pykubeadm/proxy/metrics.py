"""kube-proxy's Prometheus metrics, with kube-proxy's names (prometheus_client, one registry per process).

Recorded by `proxy.server` around every sync and by `proxy.health` for each health probe; served on `/metrics` of the
metrics address (10249) by `proxy.health.MetricsServer`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

__all__ = [
    "ENDPOINT_CHANGES_PENDING",
    "ENDPOINT_CHANGES_TOTAL",
    "HEALTHZ_TOTAL",
    "LAST_QUEUED_TIMESTAMP",
    "LAST_TIMESTAMP",
    "LIVEZ_TOTAL",
    "NETWORK_PROGRAMMING_DURATION",
    "NFTABLES_SYNC_FAILURES",
    "NO_LOCAL_ENDPOINTS",
    "REGISTRY",
    "SERVICE_CHANGES_PENDING",
    "SERVICE_CHANGES_TOTAL",
    "SYNC_DURATION",
]

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

_SYNC_BUCKETS = tuple(0.001 * 2**i for i in range(15))
_PROGRAMMING_BUCKETS = (
    *(0.25 * i for i in range(1, 4)),
    *(1.0 * i for i in range(1, 60)),
    *(5.0 * i for i in range(12, 24)),
    *(30.0 * i for i in range(4, 14)),
)

SYNC_DURATION = Histogram(
    "kubeproxy_sync_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds",
    buckets=_SYNC_BUCKETS,
    registry=REGISTRY,
)
LAST_TIMESTAMP = Gauge(
    "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
    "The last time proxy rules were successfully synced",
    registry=REGISTRY,
)
LAST_QUEUED_TIMESTAMP = Gauge(
    "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
    "The last time a sync of proxy rules was queued",
    registry=REGISTRY,
)
NETWORK_PROGRAMMING_DURATION = Histogram(
    "kubeproxy_network_programming_duration_seconds",
    "In Cluster Network Programming Latency in seconds",
    buckets=_PROGRAMMING_BUCKETS,
    registry=REGISTRY,
)
ENDPOINT_CHANGES_PENDING = Gauge(
    "kubeproxy_sync_proxy_rules_endpoint_changes_pending", "Pending proxy rules Endpoint changes", registry=REGISTRY
)
ENDPOINT_CHANGES_TOTAL = Counter(
    "kubeproxy_sync_proxy_rules_endpoint_changes", "Cumulative proxy rules Endpoint changes", registry=REGISTRY
)
SERVICE_CHANGES_PENDING = Gauge(
    "kubeproxy_sync_proxy_rules_service_changes_pending", "Pending proxy rules Service changes", registry=REGISTRY
)
SERVICE_CHANGES_TOTAL = Counter(
    "kubeproxy_sync_proxy_rules_service_changes", "Cumulative proxy rules Service changes", registry=REGISTRY
)
NO_LOCAL_ENDPOINTS = Gauge(
    "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
    "Number of services with a Local traffic policy and no endpoints",
    ["traffic_policy"],
    registry=REGISTRY,
)
NFTABLES_SYNC_FAILURES = Counter(
    "kubeproxy_sync_proxy_rules_nftables_sync_failures",
    "Cumulative proxy nftables sync failures",
    registry=REGISTRY,
)
HEALTHZ_TOTAL = Counter("kubeproxy_proxy_healthz", "Cumulative proxy healthz HTTP status", ["code"], registry=REGISTRY)
LIVEZ_TOTAL = Counter("kubeproxy_proxy_livez", "Cumulative proxy livez HTTP status", ["code"], registry=REGISTRY)
