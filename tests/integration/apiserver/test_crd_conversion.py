"""A CRD with versions v1 and v2 (storage) converted by a real HTTPS conversion webhook on 127.0.0.1: an object
created at v1 is stored at v2 and reads back converted at either version; the webhook down fails reads at v1 with
kube's message."""

from __future__ import annotations

import base64
import copy

import pytest

from pykubeadm.testing.webhookserver import WebhookServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: paints.conv.example.com}}
spec:
  group: conv.example.com
  scope: Namespaced
  names: {{plural: paints, singular: paint, kind: Paint}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {{url: "{url}", caBundle: {ca}}}
  versions:
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{color: {{type: string}}}}}}
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{colour: {{type: string}}, convertedFrom: {{type: string}}}}}}
"""


def convert(review):
    desired = review["request"]["desiredAPIVersion"]
    out = []
    for obj in review["request"]["objects"]:
        new = copy.deepcopy(obj)
        spec = new.get("spec") or {}
        if desired.endswith("/v2") and "color" in spec:
            new["spec"] = {"colour": spec["color"], "convertedFrom": obj["apiVersion"]}
        elif desired.endswith("/v1") and "colour" in spec:
            new["spec"] = {"color": spec["colour"]}
        new["apiVersion"] = desired
        out.append(new)
    return {"convertedObjects": out, "result": {"status": "Success"}}


@pytest.fixture(scope="module")
def converter(api):
    cert, key = api.pki.sign("conversion", server=True, ips=["127.0.0.1"], name="conversion")
    with WebhookServer(cert, key, {"/convert": convert}) as server:
        ca = base64.b64encode(api.pki.ca_cert.read_bytes()).decode()
        api.kubectl("apply", "-f", "-", input=CRD.format(url=server.url("/convert"), ca=ca))
        api.kubectl("wait", "--for=condition=Established", "crd/paints.conv.example.com", "--timeout=60s")
        api.kubectl("annotate", "crd", "paints.conv.example.com", "example.com/waited=yes", "--overwrite")
        yield server


def test_created_at_v1_reads_back_at_v2_converted(api, converter):
    paint = (
        "apiVersion: conv.example.com/v1\nkind: Paint\nmetadata: {name: red, namespace: default}\nspec: {color: red}\n"
    )
    res = api.kubectl("apply", "-f", "-", input=paint)
    assert "paint.conv.example.com/red created" in res.stdout
    v2 = api.kubectl(
        "get", "paints.v2.conv.example.com", "red", "-o", "jsonpath={.apiVersion} {.spec.colour} {.spec.convertedFrom}"
    )
    assert v2.stdout == "conv.example.com/v2 red conv.example.com/v1"
    v1 = api.kubectl("get", "paints.v1.conv.example.com", "red", "-o", "jsonpath={.apiVersion} {.spec.color}")
    assert v1.stdout == "conv.example.com/v1 red"
    reviews = [r for r in converter.requests if r.get("kind") == "ConversionReview"]
    assert {r["request"]["desiredAPIVersion"] for r in reviews} >= {"conv.example.com/v2", "conv.example.com/v1"}
    # An update at v1 goes through the webhook too.
    api.kubectl("patch", "paints.v1.conv.example.com", "red", "--type=merge", "-p", '{"spec":{"color":"blue"}}')
    v2 = api.kubectl("get", "paints.v2.conv.example.com", "red", "-o", "jsonpath={.spec.colour}")
    assert v2.stdout == "blue"
    # Lists convert every item.
    listed = api.kubectl("get", "paints.v1.conv.example.com", "-o", "jsonpath={.items[*].spec.color}")
    assert listed.stdout == "blue"


def test_watch_at_v1_sees_converted_objects(api, converter):
    from kubernetes import client, watch

    c = api.python_client()
    try:
        custom = client.CustomObjectsApi(c)
        stream = watch.Watch().stream(
            custom.list_namespaced_custom_object, "conv.example.com", "v1", "default", "paints", timeout_seconds=2
        )
        events = [(e["type"], e["object"]["apiVersion"], e["object"]["spec"]) for e in stream]
    finally:
        c.close()
    assert ("ADDED", "conv.example.com/v1", {"color": "blue"}) in events


def test_webhook_down_fails_the_read_with_kubes_message(api, converter):
    converter.stop()
    res = api.kubectl("get", "paints.v1.conv.example.com", "red", check=False)
    assert res.returncode != 0
    assert (
        "Internal error occurred: conversion webhook for conv.example.com/v2, Kind=Paint failed: "
        f'Post "{converter.url("/convert")}?timeout=30s": dial tcp 127.0.0.1:{converter.port}: connect: '
        "connection refused"
    ) in res.stderr
    # The storage version needs no conversion and still reads.
    assert api.kubectl("get", "paints.v2.conv.example.com", "red", "-o", "name").stdout.strip() == (
        "paint.conv.example.com/red"
    )
