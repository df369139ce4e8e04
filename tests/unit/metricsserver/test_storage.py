"""The metrics server's parsing of /metrics/resource, its two-point storage and metrics-server's quantity formats."""

from __future__ import annotations

from pathlib import Path

from pykubeadm.kubelet.resourcemetrics import ContainerTarget, render_resource_metrics
from pykubeadm.metricsserver.scrape import MetricsBatch, node_endpoint, parse_resource_metrics
from pykubeadm.metricsserver.storage import MetricsStorage, format_cpu, format_memory


def _text(ts_ms: int, node_cpu: float, ct_cpu: float, start: float = 1000.0) -> str:
    return f"""# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total {node_cpu} {ts_ms}
node_memory_working_set_bytes 4.194304e+06 {ts_ms}
container_cpu_usage_seconds_total{{container="web",namespace="default",pod="web-1"}} {ct_cpu} {ts_ms}
container_memory_working_set_bytes{{container="web",namespace="default",pod="web-1"}} 1.048576e+06 {ts_ms}
container_start_time_seconds{{container="web",namespace="default",pod="web-1"}} {start} {ts_ms}
pod_cpu_usage_seconds_total{{namespace="default",pod="web-1"}} {ct_cpu} {ts_ms}
scrape_error 0
"""


def _batch(ts_ms: int, node_cpu: float, ct_cpu: float, start: float = 1000.0) -> MetricsBatch:
    batch = MetricsBatch()
    parse_resource_metrics("n1", _text(ts_ms, node_cpu, ct_cpu, start), batch)
    return batch


def test_quantities_are_formatted_as_apimachinery_canonical_forms() -> None:
    assert format_cpu(2295417) == "2295417n"
    assert format_cpu(5_000_000) == "5m"
    assert format_cpu(250_000) == "250u"
    assert format_cpu(2_000_000_000) == "2"
    assert format_cpu(0) == "0"
    assert format_memory(12764 * 1024) == "12764Ki"
    assert format_memory(64 * 1024 * 1024) == "64Mi"
    assert format_memory(1000) == "1000"


def test_usage_needs_two_points_and_is_the_rate_between_them() -> None:
    storage = MetricsStorage()
    storage.store(_batch(2_000_000, 100.0, 10.0))
    assert storage.node_usage("n1") is None
    assert storage.pod_usage("default", "web-1") is None
    assert not storage.ready()
    storage.store(_batch(2_015_000, 115.0, 10.75))
    node = storage.node_usage("n1")
    assert node is not None and node.window == 15.0 and node.cpu == 1_000_000_000 and node.memory == 4 << 20
    pod = storage.pod_usage("default", "web-1")
    assert pod is not None and pod["web"].cpu == 50_000_000 and pod["web"].memory == 1 << 20
    assert pod["web"].timestamp == 2015.0
    assert storage.ready()


def test_the_same_measurement_twice_keeps_the_interval() -> None:
    storage = MetricsStorage()
    storage.store(_batch(2_000_000, 100.0, 10.0))
    storage.store(_batch(2_015_000, 115.0, 10.75))
    storage.store(_batch(2_015_000, 115.0, 10.75))
    usage = storage.pod_usage("default", "web-1")
    assert usage is not None and usage["web"].cpu == 50_000_000


def test_a_restarted_container_is_rated_from_its_start() -> None:
    storage = MetricsStorage()
    storage.store(_batch(2_000_000, 100.0, 10.0, start=1000.0))
    storage.store(_batch(2_015_000, 115.0, 1.0, start=2005.0))  # restarted at 2005, used 1 s of CPU since
    usage = storage.pod_usage("default", "web-1")
    assert usage is not None and usage["web"].cpu == 100_000_000 and usage["web"].window == 10.0


def test_a_pod_gone_from_the_scrape_is_forgotten() -> None:
    storage = MetricsStorage()
    storage.store(_batch(2_000_000, 100.0, 10.0))
    storage.store(_batch(2_015_000, 115.0, 10.75))
    batch = MetricsBatch()
    parse_resource_metrics("n1", "node_cpu_usage_seconds_total 130 2030000\nnode_memory_working_set_bytes 1 2030000\n",
                           batch)  # fmt: skip
    storage.store(batch)
    assert storage.pod_usage("default", "web-1") is None
    assert storage.node_usage("n1") is not None


def test_parses_what_the_kubelet_renders(tmp_path: Path) -> None:
    import os

    text = render_resource_metrics([ContainerTarget("main", "ns", "me", os.getpid())]).decode()
    batch = MetricsBatch()
    parse_resource_metrics("n1", text, batch)
    assert batch.nodes["n1"].cpu and batch.nodes["n1"].memory
    point = batch.pods[("ns", "me")]["main"]
    assert point.cpu is not None and point.cpu > 0 and point.memory and point.start_time > 0


def test_node_endpoint_follows_preferred_types_and_status_port() -> None:
    node = {
        "status": {
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "127.0.9.2"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10350}},
        }
    }
    assert node_endpoint(node, ("InternalIP", "Hostname"), 10250, True) == ("127.0.9.2", 10350)
    assert node_endpoint(node, ("Hostname",), 10250, False) == ("n1", 10250)
    assert node_endpoint(node, ("ExternalIP",), 10250, False) is None
