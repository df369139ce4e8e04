"""Fuzzing request bodies against ONE real apiserver process: for every kind the server can create (from its own
discovery), random and mutated objects over JSON (plus YAML and garbage) and over protobuf (kubectl 1.32+'s
encoding: valid, truncated, bit-flipped, unknown fields, random bytes in the envelope). Every answer is a success or a
4xx with a Status, never a 5xx; afterwards /readyz is still `ok` and the server logged no panic. Fixed seed, bounded
budget (a few examples per kind)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pykubeadm.apiserver.proto import _CLASSES, KINDS, MAGIC
from pykubeadm.testing.apiserver import ApiServer, running_apiserver
from tests.fuzz import fuzz_settings

pytestmark = pytest.mark.integration

NS = "fuzz"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("fuzz-apiserver")) as server:
        yield server


@pytest.fixture(scope="module")
def http(api: ApiServer) -> Iterator[httpx.Client]:
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    ctx.load_cert_chain(str(api.pki.admin_cert), str(api.pki.admin_key))
    with httpx.Client(base_url=api.url, verify=ctx, timeout=60, trust_env=False) as client:
        r = client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        assert r.status_code in (201, 409), r.text
        yield client


def _creatable(http: httpx.Client) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, collection URL) of every resource whose discovery lists `create`."""
    out = []
    docs = [("v1", "/api/v1")]
    for g in http.get("/apis").json()["groups"]:
        gv = g["preferredVersion"]["groupVersion"]
        docs.append((gv, f"/apis/{gv}"))
    for gv, prefix in docs:
        for r in http.get(prefix).json()["resources"]:
            if "/" in r["name"] or "create" not in r["verbs"]:
                continue
            base = f"{prefix}/namespaces/{NS}/{r['name']}" if r["namespaced"] else f"{prefix}/{r['name']}"
            out.append((gv, r["kind"], base))
    return out


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.text(max_size=30),
    st.sampled_from(["", "10.96.0.10", "TCP", "Always", "ClusterIP", "2024-01-01T00:00:00Z", "1Gi", "x" * 300]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=10,
)
names = st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True), st.text(max_size=20))
fields = st.sampled_from(["spec", "status", "data", "stringData", "metadata", "rules", "subjects", "roleRef", "x"])


@st.composite
def json_bodies(draw: st.DrawFn, api_version: str, kind: str) -> tuple[bytes, str]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": draw(names)}}
    for _ in range(draw(st.integers(0, 3))):
        obj[draw(fields)] = draw(values)
    if draw(st.booleans()):
        obj["metadata"] = draw(st.one_of(values, st.just({"name": draw(names), "labels": draw(values)})))
    if draw(st.integers(0, 9)) == 0:
        obj.pop(draw(st.sampled_from(["apiVersion", "kind"])))
    style = draw(st.sampled_from(["json", "json", "yaml", "garbage", "truncated"]))
    if style == "yaml":
        return yaml.safe_dump(obj).encode(), "application/yaml"
    text = json.dumps(obj).encode()
    if style == "garbage":
        return draw(st.binary(max_size=200)), draw(st.sampled_from(["application/json", "application/yaml", ""]))
    if style == "truncated":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))], "application/json"
    return text, "application/json"


@st.composite
def protobuf_bodies(draw: st.DrawFn, api_version: str, kind: str) -> bytes:
    env = _CLASSES["Unknown"]()
    env.typeMeta.apiVersion = api_version
    env.typeMeta.kind = draw(st.sampled_from([kind, kind, "ConfigMap", "Bogus", ""]))
    msg = _CLASSES[KINDS[kind]]()
    msg.metadata.name = draw(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True))
    raw = msg.SerializeToString()
    how = draw(st.sampled_from(["valid", "unknown-field", "truncated", "flipped", "random"]))
    if how == "unknown-field":
        raw += draw(st.sampled_from([b"\xf8\x07\x01", b"\xfa\x07\x03abc", b"\x9a\x05\x02\x08\x01"]))
    elif how == "truncated" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif how == "flipped" and raw:
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ draw(st.integers(1, 255))]) + raw[i + 1 :]
    elif how == "random":
        raw = draw(st.binary(max_size=120))
    env.raw = raw
    body = MAGIC + env.SerializeToString()
    if draw(st.integers(0, 9)) == 0:
        body = body[: draw(st.integers(0, len(body)))]
    return body


def _assert_answer(r: httpx.Response, what: str) -> None:
    assert r.status_code < 500, f"{what}: {r.status_code} {r.text[:500]}"
    if r.status_code >= 400:
        st_ = r.json()
        assert st_["kind"] == "Status" and st_["code"] == r.status_code, f"{what}: {r.text[:300]}"


VALIDATION = st.sampled_from(["", "?fieldValidation=Strict", "?fieldValidation=Warn", "?dryRun=All"])


def _fuzz_kind(http: httpx.Client, api_version: str, kind: str, url: str) -> None:
    @fuzz_settings(20)
    @given(json_bodies(api_version, kind), VALIDATION)
    def over_json(case: tuple[bytes, str], query: str) -> None:
        body, ct = case
        headers = {"Content-Type": ct} if ct else {}
        _assert_answer(http.post(url + query, content=body, headers=headers), f"POST {url} {ct} {body[:200]!r}")

    over_json()
    if kind in KINDS:

        @fuzz_settings(12)
        @given(protobuf_bodies(api_version, kind))
        def over_protobuf(body: bytes) -> None:
            r = http.post(url, content=body, headers={"Content-Type": PROTOBUF})
            _assert_answer(r, f"POST {url} protobuf {body[:200]!r}")

        over_protobuf()


def test_every_kind_over_json_and_protobuf_is_never_a_5xx(api: ApiServer, http: httpx.Client) -> None:
    kinds = _creatable(http)
    assert len(kinds) >= 20, kinds
    for api_version, kind, url in kinds:
        _fuzz_kind(http, api_version, kind, url)
    r = http.get("/readyz")
    assert (r.status_code, r.text) == (200, "ok")
    assert "panic serving" not in Path(api.log_path).read_text()


def test_hostile_bodies_on_updates_and_patches(api: ApiServer, http: httpx.Client) -> None:
    url = f"/api/v1/namespaces/{NS}/configmaps"
    r = http.post(url, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}})
    assert r.status_code in (201, 409)
    patch_types = [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ]

    @fuzz_settings(60)
    @given(st.sampled_from(patch_types), values, st.sampled_from(["PATCH", "PUT"]))
    def hostile(ct: str, patch: Any, method: str) -> None:
        body = json.dumps(patch).encode()
        query = "?fieldManager=fuzz" if ct.startswith("application/apply") else ""
        r = http.request(
            method, f"{url}/target{query}", content=body, headers={"Content-Type": ct if method == "PATCH" else ""}
        )
        _assert_answer(r, f"{method} {ct} {body[:200]!r}")

    hostile()
    assert http.get("/readyz").text == "ok"
