"""The apiserver's /metrics: Prometheus text that prometheus_client's parser reads, kube-apiserver's metric names and
labels, a request counter that counts, long-running watches, and access as kube-apiserver grants it (the
system:monitoring group through the system:monitoring ClusterRole; everyone else 403)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@contextmanager
def _open(api: ApiServer, path: str, user: str, groups: list[str]) -> Iterator:
    cert, key = api.client_cert(user, groups)
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    ctx.load_cert_chain(str(cert), str(key))
    with urllib.request.urlopen(api.url + path, context=ctx, timeout=30) as resp:
        yield resp


def _scrape(api: ApiServer, user: str = "admin", groups: tuple[str, ...] = ("system:masters",)) -> dict[str, list]:
    with _open(api, "/metrics", user, list(groups)) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def _value(samples: list, name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_parse_and_count_requests(api: ApiServer) -> None:
    before = _scrape(api)
    for name in ("apiserver_request", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests"):
        assert name in before, sorted(before)
    listed = dict(verb="LIST", group="", version="v1", resource="namespaces", scope="cluster", code="200")
    n0 = _value(before.get("apiserver_request", []), "apiserver_request_total", **listed)
    api.kubectl("get", "namespaces")
    api.kubectl("get", "namespaces")
    after = _scrape(api)
    assert _value(after["apiserver_request"], "apiserver_request_total", **listed) == n0 + 2
    assert (
        _value(
            after["apiserver_request_duration_seconds"],
            "apiserver_request_duration_seconds_count",
            verb="LIST",
            resource="namespaces",
        )
        >= 2
    )
    missing = dict(verb="GET", resource="configmaps", scope="resource", code="404")
    n404 = _value(after["apiserver_request"], "apiserver_request_total", **missing)
    api.kubectl("get", "configmap", "nope", "-n", "default", check=False)
    assert _value(_scrape(api)["apiserver_request"], "apiserver_request_total", **missing) == n404 + 1
    assert _value(after["etcd_request_duration_seconds"], "etcd_request_duration_seconds_count", operation="list") > 0


def test_watches_are_long_running_requests(api: ApiServer) -> None:
    with _open(api, "/api/v1/namespaces?watch=true&timeoutSeconds=30", "admin", ["system:masters"]) as resp:
        resp.readline()  # the first (synthetic ADDED) event: the watch is registered
        metrics = _scrape(api)
        running = _value(metrics["apiserver_longrunning_requests"], "apiserver_longrunning_requests",
                         verb="WATCH", resource="namespaces")  # fmt: skip
        assert running == 1
        assert _value(metrics["apiserver_registered_watchers"], "apiserver_registered_watchers", kind="Namespace") >= 1
    # An event on the closed stream ends the watch now rather than at the server's shutdown.
    api.kubectl("create", "namespace", "metrics-watch-done")


def test_metrics_access_follows_rbac(api: ApiServer) -> None:
    assert "apiserver_request" in _scrape(api, "prometheus", ("system:monitoring",))
    with pytest.raises(urllib.error.HTTPError) as err:
        _scrape(api, "mallory", ())
    assert err.value.code == 403
    status = json.loads(err.value.read())
    assert status["message"] == 'forbidden: User "mallory" cannot get path "/metrics"'
    assert status["reason"] == "Forbidden"
