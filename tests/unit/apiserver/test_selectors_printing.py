"""Label/field selectors, request-info parsing and server-side printing helpers."""

import pytest

from pykubeadm.apiserver.printing import human_duration
from pykubeadm.apiserver.requestinfo import parse_request_info
from pykubeadm.apiserver.selectors import parse_field_selector, parse_label_selector
from pykubeadm.apiserver.status import ApiError


@pytest.mark.parametrize(
    ("sel", "labels", "want"),
    [
        ("a=1", {"a": "1"}, True),
        ("a==1,b", {"a": "1", "b": ""}, True),
        ("a!=1", {}, True),
        ("a in (1,2),!c", {"a": "2"}, True),
        ("a notin (1,2)", {"a": "2"}, False),
        ("kubernetes.io/cluster-service=true", {"kubernetes.io/cluster-service": "true"}, True),
        ("b", {"a": "1"}, False),
    ],
)
def test_label_selector(sel, labels, want):
    assert parse_label_selector(sel).matches(labels) is want


def test_field_selector_supported_labels_and_errors():
    fs = parse_field_selector("metadata.name=x,metadata.namespace!=y", lambda f: f.startswith("metadata."))
    assert fs.single_name() == "x"
    assert fs.matches({"metadata.name": "x", "metadata.namespace": "z"})
    with pytest.raises(ApiError) as e:
        parse_field_selector("spec.foo=1", lambda f: False)
    assert e.value.code == 400 and e.value.message == "field label not supported: spec.foo"


@pytest.mark.parametrize(
    ("secs", "want"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (40 * 86400, "40d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration(secs, want):
    assert human_duration(secs) == want


def test_request_info():
    i = parse_request_info("GET", "/api/v1/namespaces/ns1/pods/p1/status", {})
    assert (i.verb, i.namespace, i.resource, i.name, i.subresource) == ("get", "ns1", "pods", "p1", "status")
    i = parse_request_info("GET", "/apis/apps/v1/deployments", {"watch": "True"})
    assert (i.verb, i.api_group, i.resource) == ("watch", "apps", "deployments")
    i = parse_request_info("DELETE", "/api/v1/namespaces/ns1/configmaps", {})
    assert i.verb == "deletecollection"
    i = parse_request_info("PUT", "/api/v1/namespaces/x/finalize", {})
    assert (i.resource, i.name, i.subresource, i.namespace) == ("namespaces", "x", "finalize", "x")
    assert not parse_request_info("GET", "/healthz", {}).is_resource
    assert not parse_request_info("GET", "/apis/apps/v1", {}).is_resource
