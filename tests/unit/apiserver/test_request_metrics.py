"""The apiserver's request metrics and audit IDs on the hot path: labelled children made once per label set still
count each request under its own code and verb, and every generated Audit-Id is an RFC 4122 version-4 UUID."""

from __future__ import annotations

import uuid

from pykubeadm.apiserver.flowcontrol import _uuid4
from pykubeadm.apiserver.metrics import ApiMetrics

_GET = ("GET", "", "", "v1", "configmaps", "", "resource", "apiserver")
_PUT = ("PUT", "", "", "v1", "configmaps", "", "resource", "apiserver")


def _sample(m: ApiMetrics, name: str, **labels: str) -> float:
    value = m.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _labels(t: tuple[str, ...], **extra: str) -> dict[str, str]:
    names = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
    return {**dict(zip(names, t, strict=True)), **extra}


def test_series_counts_each_request_by_code_and_kind() -> None:
    m = ApiMetrics()
    for code in (200, 200, 404):
        s = m.series(_GET, False, "readOnly")
        s.gauge.inc()
        assert _sample(m, "apiserver_current_inflight_requests", request_kind="readOnly") == 1
        s.gauge.dec()
        m.count(s, _GET, code)
        s.duration.observe(0.001)
    put = m.series(_PUT, False, "mutating")
    m.count(put, _PUT, 200)
    assert m.series(_GET, False, "readOnly") is m.series(_GET, False, "readOnly")
    assert _sample(m, "apiserver_request_total", **_labels(_GET, code="200")) == 2
    assert _sample(m, "apiserver_request_total", **_labels(_GET, code="404")) == 1
    assert _sample(m, "apiserver_request_total", **_labels(_PUT, code="200")) == 1
    assert _sample(m, "apiserver_request_duration_seconds_count", **_labels(_GET)) == 3
    assert _sample(m, "apiserver_current_inflight_requests", request_kind="readOnly") == 0


def test_long_running_series_uses_the_longrunning_gauge_and_no_histogram() -> None:
    m = ApiMetrics()
    watch = ("WATCH", "", "", "v1", "configmaps", "", "namespace", "apiserver")
    s = m.series(watch, True, "readOnly")
    assert s.duration is None
    s.gauge.inc()
    running = {k: v for k, v in _labels(watch).items() if k != "dry_run"}
    assert _sample(m, "apiserver_longrunning_requests", **running) == 1
    assert _sample(m, "apiserver_current_inflight_requests", request_kind="readOnly") == 0


def test_generated_audit_ids_are_version_4_uuids() -> None:
    ids = {_uuid4() for _ in range(2000)}
    assert len(ids) == 2000
    for aid in ids:
        u = uuid.UUID(aid)
        assert str(u) == aid and u.version == 4 and u.variant == uuid.RFC_4122
