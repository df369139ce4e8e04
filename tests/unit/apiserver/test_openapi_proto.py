"""The protobuf /openapi/v2 document: gnostic's field numbers on the wire, the JSON → openapi.v2.Document conversion
rules, the served document decoded and compared with the JSON one, the per-document cache, and Accept negotiation."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest
import yaml

from pykubeadm.apiserver.openapi.documents import Documents
from pykubeadm.apiserver.openapi.gnostic import message_class
from pykubeadm.apiserver.openapi.handler import PROTO_V2, negotiate_v2
from pykubeadm.apiserver.openapi.protov2 import V2Cache, document_message, etag_of
from pykubeadm.apiserver.registry import STRATEGIES

Document = message_class("Document")


def _varint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _ld(field: int, *payload: bytes) -> bytes:
    """A length-delimited field (string or message), written by hand from gnostic's field numbers."""
    body = b"".join(payload)
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def _s(field: int, text: str) -> bytes:
    return _ld(field, text.encode())


def test_wire_bytes_use_gnostic_field_numbers() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "v"},
        "paths": {"/p": {"get": {"operationId": "o", "x-a": "b"}}},
        "definitions": {"D": {"type": "object", "properties": {"f": {"$ref": "#/definitions/E"}}, "x-k": 1}},
    }
    operation = _s(5, "o") + _ld(13, _s(1, "x-a"), _ld(2, _s(2, '"b"\n')))  # operation_id, vendor_extension
    paths = _ld(2, _s(1, "/p"), _ld(2, _ld(2, operation)))  # Paths.path → NamedPathItem → PathItem.get
    prop = _ld(1, _s(1, "f"), _ld(2, _s(1, "#/definitions/E")))  # Properties → NamedSchema{name, Schema{_ref}}
    schema = _ld(22, _s(1, "object")) + _ld(25, prop) + _ld(31, _s(1, "x-k"), _ld(2, _s(2, "1\n")))
    definitions = _ld(1, _s(1, "D"), _ld(2, schema))
    expected = _s(1, "2.0") + _ld(2, _s(1, "T"), _s(2, "v")) + _ld(8, paths) + _ld(9, definitions)
    assert document_message(doc).SerializeToString() == expected


def _schema(doc: dict[str, Any], name: str) -> Any:
    msg = document_message(doc)
    return next(d.value for d in msg.definitions.additional_properties if d.name == name)


def test_schema_conversion_rules() -> None:
    doc = {
        "definitions": {
            "S": {
                "type": ["string", "null"],
                "enum": ["a", "b"],
                "default": {"k": [1, 2]},
                "maxLength": 2**70,  # out of int64: left out instead of failing the whole document
                "minimum": 1,
                "anyOf": [{"type": "string"}],  # not swagger 2.0: left out, as kube's v2 publishing does
                "items": {"type": "integer", "format": "int32"},
                "additionalProperties": False,
            },
            "M": {"type": "object", "additionalProperties": {"type": "string"}, "required": ["x"]},
            "T": {"items": [{"type": "string"}, {"type": "boolean"}]},
        }
    }
    s = _schema(doc, "S")
    assert list(s.type.value) == ["string", "null"]
    assert [yaml.safe_load(e.yaml) for e in s.enum] == ["a", "b"]
    assert yaml.safe_load(s.default.yaml) == {"k": [1, 2]}
    assert s.max_length == 0 and s.minimum == 1.0
    assert [i.type.value[0] for i in s.items.schema] == ["integer"] and s.items.schema[0].format == "int32"
    assert s.additional_properties.WhichOneof("oneof") == "boolean" and s.additional_properties.boolean is False
    m = _schema(doc, "M")
    assert m.additional_properties.schema.type.value[0] == "string" and list(m.required) == ["x"]
    assert [i.type.value[0] for i in _schema(doc, "T").items.schema] == ["string", "boolean"]


def test_parameters_responses_and_security() -> None:
    op = {
        "parameters": [
            {"name": "body", "in": "body", "required": True, "schema": {"$ref": "#/definitions/X"}},
            {"name": "limit", "in": "query", "type": "integer", "uniqueItems": True},
            {"$ref": "#/parameters/shared"},
        ],
        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/X"}}, "x-r": True},
    }
    doc = {
        "paths": {"/x/{name}": {"parameters": [{"name": "name", "in": "path", "required": True}], "put": op}},
        "securityDefinitions": {
            "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"},
            "OAuth": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "u", "scopes": {"read": "r"}},
        },
        "security": [{"BearerToken": []}],
    }
    msg = document_message(doc)
    item = msg.paths.path[0].value
    path_param = item.parameters[0].parameter.non_body_parameter.path_parameter_sub_schema
    assert (path_param.name, path_param.required) == ("name", True)
    body, query, ref = item.put.parameters
    assert body.parameter.body_parameter.schema._ref == "#/definitions/X"
    assert query.parameter.non_body_parameter.query_parameter_sub_schema.type == "integer"
    assert ref.json_reference._ref == "#/parameters/shared"
    (code,) = item.put.responses.response_code
    assert (code.name, code.value.response.schema.schema._ref) == ("200", "#/definitions/X")
    assert [(v.name, v.value.yaml) for v in item.put.responses.vendor_extension] == [("x-r", "true\n")]
    sec = {s.name: s.value for s in msg.security_definitions.additional_properties}
    assert sec["BearerToken"].api_key_security.name == "authorization"
    assert sec["OAuth"].oauth2_implicit_security.scopes.additional_properties[0].value == "r"
    assert msg.security[0].additional_properties[0].name == "BearerToken"
    assert msg.security[0].additional_properties[0].HasField("value")


@pytest.fixture(scope="module")
def served() -> tuple[dict[str, Any], Any]:
    """The built-in kinds' /openapi/v2 JSON document and its protobuf form, decoded."""
    cache = V2Cache()
    body = Documents().v2(STRATEGIES)
    return orjson.loads(body), Document.FromString(cache.body(cache.current(body), proto=True))


def test_served_definitions_match_the_json_document(served: tuple[dict[str, Any], Any]) -> None:
    doc, msg = served
    assert (msg.swagger, msg.info.title, msg.info.version) == ("2.0", "Kubernetes", doc["info"]["version"])
    decoded = {d.name: d.value for d in msg.definitions.additional_properties}
    assert list(decoded) == list(doc["definitions"])
    for name, schema in doc["definitions"].items():
        props = {p.name: p.value for p in decoded[name].properties.additional_properties}
        assert list(props) == list(schema.get("properties", {})), name
        for prop, value in schema.get("properties", {}).items():
            assert props[prop].description == value.get("description", ""), (name, prop)
            assert props[prop]._ref == value.get("$ref", ""), (name, prop)
        extensions = {e.name: yaml.safe_load(e.value.yaml) for e in decoded[name].vendor_extension}
        assert extensions == {k: v for k, v in schema.items() if k.startswith("x-")}, name
    pod = decoded["io.k8s.api.core.v1.PodSpec"]
    containers = next(p.value for p in pod.properties.additional_properties if p.name == "containers")
    assert containers.items.schema[0]._ref == "#/definitions/io.k8s.api.core.v1.Container"
    assert {e.name: yaml.safe_load(e.value.yaml) for e in containers.vendor_extension} == {
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-list-type": "map",
        "x-kubernetes-patch-merge-key": "name",
        "x-kubernetes-patch-strategy": "merge",
    }


def test_served_operations_match_the_json_document(served: tuple[dict[str, Any], Any]) -> None:
    doc, msg = served
    decoded = {p.name: p.value for p in msg.paths.path}
    assert list(decoded) == list(doc["paths"])
    for path, item in doc["paths"].items():
        for verb in ("get", "put", "post", "delete", "patch"):
            if verb not in item:
                assert not decoded[path].HasField(verb)
                continue
            op, want = getattr(decoded[path], verb), item[verb]
            assert op.operation_id == want["operationId"], (path, verb)
            ext = {e.name: yaml.safe_load(e.value.yaml) for e in op.vendor_extension}
            assert ext["x-kubernetes-group-version-kind"] == want["x-kubernetes-group-version-kind"]
            assert len(op.parameters) == len(want["parameters"])
    patch = decoded["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].patch
    assert "application/strategic-merge-patch+json" in patch.consumes


def test_cache_encodes_each_document_once() -> None:
    cache = V2Cache()
    first = orjson.dumps({"swagger": "2.0", "info": {"title": "a", "version": "1"}})
    entry = cache.current(first)
    assert entry.etag == etag_of(first) and entry.etag.startswith('"') and len(entry.etag) == 130
    assert entry.etag[1:-1] == entry.etag[1:-1].upper()
    assert cache.body(entry, proto=False) is first
    pb = cache.body(entry, proto=True)
    zipped = cache.body(entry, proto=True, gzipped=True)
    assert gzip.decompress(zipped) == pb and gzip.decompress(cache.body(entry, proto=False, gzipped=True)) == first
    assert cache.current(first) is entry
    assert cache.body(entry, proto=True) is pb and cache.body(entry, proto=True, gzipped=True) is zipped
    second = orjson.dumps({"swagger": "2.0", "info": {"title": "b", "version": "1"}})
    changed = cache.current(second)
    assert changed.etag != entry.etag and Document.FromString(cache.body(changed, proto=True)).info.title == "b"


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        ("", "application/json"),
        ("*/*", "application/json"),
        ("application/json, */*", "application/json"),
        ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", PROTO_V2),  # kubectl <= 1.28
        (PROTO_V2, PROTO_V2),
        ("application/json;q=0.9, " + PROTO_V2, PROTO_V2),  # the best q wins, not the first clause
        ("*/*;q=0.5, application/json;q=0.7", "application/json"),
        ("application/*", "application/json"),
        ("application/yaml", None),
        ("text/plain, application/vnd.kubernetes.protobuf", None),
    ],
)
def test_accept_negotiation(accept: str, answer: str | None) -> None:
    assert negotiate_v2(accept) == answer
