"""Metadata-only answers, as client-go's metadata client asks for them (`Accept:
application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`): a get, a paged list and a watch carry each
object's metadata and nothing of its spec; an Accept naming a transform the endpoint cannot make falls through to the
next media type, or is refused with 406. Asked through the official Python client against a real apiserver."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.integration

AS_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
AS_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@pytest.fixture(scope="module")
def api_client(api):
    c = api.python_client()
    core = client.CoreV1Api(c)
    for i in range(3):
        core.create_namespaced_config_map(
            "default",
            {"metadata": {"name": f"meta-{i}", "labels": {"set": "meta"}}, "data": {"secret-ish": "x" * 100}},
        )
    yield c
    c.close()


def request(c: Any, path: str, accept: str, query: list[tuple[str, Any]]) -> Any:
    """A GET through the official client's own request path (its auth, TLS and error handling)."""
    params = c.param_serialize(
        "GET", path, query_params=query, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    resp = c.call_api(*params)
    resp.read()
    if not 200 <= resp.status <= 299:
        raise ApiException(http_resp=resp)
    return resp


def call(c: Any, path: str, accept: str, **query: Any) -> Any:
    resp = request(c, path, accept, list(query.items()))
    return json.loads(resp.read())


def test_a_list_as_partial_object_metadata_list_pages_and_has_no_data(api_client) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    first = call(api_client, path, AS_LIST, labelSelector="set=meta", limit=2)
    assert first["kind"] == "PartialObjectMetadataList" and first["apiVersion"] == "meta.k8s.io/v1"
    assert first["metadata"]["continue"] and first["metadata"]["resourceVersion"]
    assert [i["metadata"]["name"] for i in first["items"]] == ["meta-0", "meta-1"]
    for item in first["items"]:
        assert item["kind"] == "PartialObjectMetadata" and item["apiVersion"] == "meta.k8s.io/v1"
        assert set(item) == {"kind", "apiVersion", "metadata"}
        assert item["metadata"]["labels"] == {"set": "meta"} and item["metadata"]["resourceVersion"]
    rest = call(
        api_client, path, AS_LIST, labelSelector="set=meta", limit=2, **{"continue": first["metadata"]["continue"]}
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["meta-2"]


def test_a_get_as_partial_object_metadata(api_client) -> None:
    one = call(api_client, "/api/v1/namespaces/default/configmaps/meta-1", AS_ONE)
    assert one["kind"] == "PartialObjectMetadata" and "data" not in one
    assert one["metadata"]["name"] == "meta-1" and one["metadata"]["uid"]


def test_a_transform_the_endpoint_cannot_make_falls_through_or_is_refused(api_client) -> None:
    # A single object cannot be a list: the next media type (plain JSON) answers.
    one = call(api_client, "/api/v1/namespaces/default/configmaps/meta-0", f"{AS_LIST},application/json")
    assert one["kind"] == "ConfigMap" and one["data"]["secret-ish"]
    # A list asked only as a single PartialObjectMetadata: nothing it can write.
    with pytest.raises(ApiException) as e:
        call(api_client, "/api/v1/namespaces/default/configmaps", AS_ONE)
    assert e.value.status == 406
    assert json.loads(e.value.body)["reason"] == "NotAcceptable"


def test_a_watch_as_partial_object_metadata(api_client) -> None:
    core = client.CoreV1Api(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("meta-2", "default", {"metadata": {"labels": {"touched": "yes"}}})
    resp = request(
        api_client,
        "/api/v1/namespaces/default/configmaps",
        AS_ONE,
        [("watch", "true"), ("resourceVersion", rv), ("timeoutSeconds", "5")],
    )
    line = json.loads(resp.read().splitlines()[0])  # the whole stream, ended by timeoutSeconds
    assert line["type"] == "MODIFIED"
    assert line["object"]["kind"] == "PartialObjectMetadata" and set(line["object"]) == {
        "kind",
        "apiVersion",
        "metadata",
    }
    assert line["object"]["metadata"]["labels"]["touched"] == "yes"
