"""Hostile request bodies get kube-apiserver's 4xx Status, never a 5xx: nesting beyond Go's 10 000 levels (JSON and
YAML), gzip bodies (never decompressed), invalid UTF-8, huge and non-finite numbers, duplicate keys under
fieldValidation, malformed protobuf, unknown content types. In-process app over the in-memory store."""

import gzip
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver.app import build_app
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Decision
from pykubeadm.apiserver.bootstrap import ensure_builtin_objects
from pykubeadm.apiserver.discovery import version_info
from pykubeadm.apiserver.handlers.bodyparse import MAX_DEPTH, parse_json, parse_yaml
from pykubeadm.apiserver.state import ApiState
from pykubeadm.apiserver.status import ApiError
from pykubeadm.storage.memory import MemoryStore

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
CMS = "/api/v1/namespaces/default/configmaps"
PROTOBUF = "application/vnd.kubernetes.protobuf"


async def _admin(req):
    return ADMIN


async def _allow(attrs):
    return Decision.ALLOW, ""


@pytest.fixture
async def http():
    state = ApiState(
        backend=MemoryStore(), version_info=version_info("v1.33.2"), authenticator=_admin, authorizer=_allow
    )
    await ensure_builtin_objects(state, "127.0.0.1", 6443, "10.96.0.1")
    server = TestServer(build_app(state))
    await server.start_server(auto_decompress=False)  # as server.py runs it
    client = TestClient(server)
    await client.start_server()
    yield client
    await client.close()


async def _post(http, body: bytes, ct: str = "application/json", path: str = CMS, **headers: str):
    r = await http.post(path, data=body, headers={"Content-Type": ct, **headers})
    return r.status, await r.json()


def _cm(name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


async def test_json_nested_beyond_10000_is_400_with_gos_message(http):
    status, st = await _post(http, b"[" * 100_000)
    assert status == 400 and st["kind"] == "Status" and st["reason"] == "BadRequest"
    assert st["message"] == "couldn't get version/kind; json parse error: invalid character '[' exceeded max depth"
    status, st = await _post(http, b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1))
    assert status == 400 and "invalid character '{' exceeded max depth" in st["message"]


@pytest.mark.parametrize("where", ["x", "data", "metadata"])
async def test_json_nested_within_the_limit_is_judged_not_crashed(http, where):
    deep = "[" * 9000 + "]" * 9000
    head = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{"k":"v"},'
    body = head + f'"{where}":{deep}}}'
    for validation in ("Strict", "Warn", "Ignore"):
        status, st = await _post(http, body.encode(), path=f"{CMS}?fieldValidation={validation}")
        assert 400 <= status < 500 or (where == "x" and status == 201), st
        if status == 201:
            assert (await http.delete(f"{CMS}/deep")).status == 200


async def test_yaml_nested_beyond_10000_is_400(http):
    status, st = await _post(http, b"a: " + b"[" * 20_000, "application/yaml")
    assert status == 400 and st["message"] == "error converting YAML to JSON: yaml: exceeded max depth of 10000"
    status, st = await _post(http, b"- " * 20_000 + b"x", "application/yaml")
    assert status == 400 and "exceeded max depth of 10000" in st["message"]


async def test_gzip_body_is_not_decompressed(http):
    body = gzip.compress(json.dumps(_cm("zipped")).encode())
    status, st = await _post(http, body, **{"Content-Encoding": "gzip"})
    assert status == 400 and st["reason"] == "BadRequest"
    bomb = gzip.compress(b"{" + b" " * 50_000_000 + b"}")
    status, st = await _post(http, bomb, **{"Content-Encoding": "gzip"})
    assert status == 400
    assert (await http.get(f"{CMS}/zipped")).status == 404


async def test_invalid_utf8_becomes_replacement_characters_as_in_go(http):
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"utf"},"data":{"k":"a\xff\xfeb \\ud800"}}'
    status, obj = await _post(http, body)
    assert status == 201, obj
    assert obj["data"]["k"] == "a\ufffd\ufffdb \ufffd"


async def test_numbers_beyond_float64_are_400_and_beyond_int64_are_floats(http):
    status, st = await _post(http, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"x":1e999}')
    assert status == 400 and st["message"] == "json: cannot unmarshal number 1e999 into Go value of type float64"
    status, st = await _post(http, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"x":NaN}')
    assert status == 400
    assert parse_json(b'{"x": 123456789012345678901234567890}').value == {"x": 1.2345678901234568e29}
    status, st = await _post(http, b'{"kind":"ConfigMap","metadata":{"name":"n","generation":' + b"9" * 5000 + b"}}")
    assert status == 400


async def test_duplicate_fields_strict_is_400_warn_is_a_warning(http):
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1","name":"d1"},"data":{"a":"1","a":"2"}}'
    status, st = await _post(http, body, path=CMS + "?fieldValidation=Strict")
    assert status == 400
    assert st["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.name", duplicate field "data.a"'
    )
    r = await http.post(CMS + "?fieldValidation=Warn", data=body, headers={"Content-Type": "application/json"})
    assert r.status == 201 and (await r.json())["data"] == {"a": "2"}
    assert r.headers.getall("Warning") == [
        '299 - "duplicate field \\"metadata.name\\""',
        '299 - "duplicate field \\"data.a\\""',
    ]
    r = await http.post(
        CMS + "?fieldValidation=Ignore", data=body.replace(b"d1", b"d2"), headers={"Content-Type": "application/json"}
    )
    assert r.status == 201 and "Warning" not in r.headers


async def test_malformed_protobuf_is_400_and_unknown_fields_are_ignored(http):
    from pykubeadm.apiserver.proto import _CLASSES, MAGIC

    env = _CLASSES["Unknown"]()
    env.typeMeta.apiVersion, env.typeMeta.kind = "v1", "ConfigMap"
    cm = _CLASSES[_proto_name("ConfigMap")]()
    cm.metadata.name = "pb"
    cm.data["k"] = "v"
    raw = cm.SerializeToString() + b"\xf8\x07\x01"  # + unknown field 127 (varint 1)
    env.raw = raw
    good = MAGIC + env.SerializeToString()
    status, obj = await _post(http, good, PROTOBUF)
    assert status == 201 and obj["data"] == {"k": "v"}, obj
    for bad in (good[:-7], good[:10], b"k8s\x00\xff\xff\xff", b"not protobuf", MAGIC + b"\x0a\x05\x0a\x01"):
        status, st = await _post(http, bad, PROTOBUF)
        assert status in (400, 415) and st["kind"] == "Status", (bad, st)


def _proto_name(kind: str) -> str:
    from pykubeadm.apiserver.proto import KINDS

    return KINDS[kind]


async def test_unknown_content_type_is_415(http):
    status, st = await _post(http, json.dumps(_cm("x")).encode(), "application/x-www-form-urlencoded")
    assert status == 415 and st["reason"] == "UnsupportedMediaType"
    status, st = await _post(http, b"\x00\x01", "application/cbor")
    assert status == 415


async def test_hostile_patch_and_delete_bodies_are_400(http):
    assert (await _post(http, json.dumps(_cm("p")).encode()))[0] == 201
    r = await http.patch(f"{CMS}/p", data=b"[" * 100_000, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 400 and "exceeded max depth" in (await r.json())["message"]
    r = await http.delete(f"{CMS}/p", data=b"{" * 20_000, headers={"Content-Type": "application/json"})
    assert r.status == 400
    r = await http.patch(
        f"{CMS}/p", data=b"a: " + b"[" * 20_000, headers={"Content-Type": "application/apply-patch+yaml"}
    )
    assert r.status == 400


def test_yaml_values_are_what_yamltojson_gives():
    assert parse_yaml(b"a: 2024-01-01\n2: x\ntrue: y\nb: !!binary aGk=\n").value == {
        "a": "2024-01-01",
        "2": "x",
        "true": "y",
        "b": "aGk=",
    }
    with pytest.raises(ApiError) as err:
        parse_yaml(b"a: .inf\n")
    assert err.value.code == 400
    assert parse_yaml(b'{"a": 1, "a": 2}').duplicates == ["a"]
