"""Protobuf request bodies (kubectl 1.32/1.33) decode into the JSON form with omitempty semantics."""

import pytest

from pykubeadm.apiserver.proto import _CLASSES, MAGIC, decode_protobuf
from pykubeadm.apiserver.status import ApiError


def _envelope(kind, api_version, msg):
    u = _CLASSES["Unknown"]()
    u.typeMeta.kind, u.typeMeta.apiVersion = kind, api_version
    u.raw = msg.SerializeToString()
    u.contentEncoding = ""
    return MAGIC + u.SerializeToString()


def test_secret_bytes_are_base64_and_zero_values_dropped():
    s = _CLASSES["Secret"]()
    s.metadata.name, s.metadata.namespace, s.metadata.generateName = "s1", "", ""
    s.metadata.generation = 0
    s.metadata.creationTimestamp.SetInParent()
    s.data["p"] = b"\x00secret"
    s.type = "Opaque"
    out = decode_protobuf(_envelope("Secret", "v1", s))
    assert out == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s1"},
        "data": {"p": "AHNlY3JldA=="},
        "type": "Opaque",
    }


def test_ssar_and_times_and_int_or_string():
    r = _CLASSES["SelfSubjectAccessReview"]()
    ra = r.spec.resourceAttributes
    ra.namespace, ra.verb, ra.resource, ra.group = "foo", "get", "secrets", ""
    out = decode_protobuf(_envelope("SelfSubjectAccessReview", "authorization.k8s.io/v1", r))
    assert out["spec"] == {"resourceAttributes": {"namespace": "foo", "verb": "get", "resource": "secrets"}}
    c = _CLASSES["CertificateSigningRequest"]()
    cond = c.status.conditions.add()
    cond.type, cond.status = "Approved", "True"
    cond.lastUpdateTime.seconds = 1704067200
    out = decode_protobuf(_envelope("CertificateSigningRequest", "certificates.k8s.io/v1", c))
    assert out["status"]["conditions"] == [
        {"type": "Approved", "status": "True", "lastUpdateTime": "2024-01-01T00:00:00Z"}
    ]
    d = _CLASSES["Deployment"]()
    d.spec.replicas = 0
    d.spec.strategy.rollingUpdate.maxSurge.type = 1
    d.spec.strategy.rollingUpdate.maxSurge.strVal = "25%"
    out = decode_protobuf(_envelope("Deployment", "apps/v1", d))
    assert out["spec"]["replicas"] == 0  # a pointer field: explicit zero is kept
    assert out["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"


def test_bad_bytes_are_400_and_unknown_kinds_415():
    with pytest.raises(ApiError) as e:
        decode_protobuf(b"not protobuf")
    assert e.value.code == 400
    with pytest.raises(ApiError) as e:
        decode_protobuf(MAGIC + b"\x0a\xff\xff")
    assert e.value.code == 400
    u = _CLASSES["Unknown"]()
    u.typeMeta.kind = "Pod"
    with pytest.raises(ApiError) as e:
        decode_protobuf(MAGIC + u.SerializeToString())
    assert e.value.code == 415
