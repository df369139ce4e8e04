"""CustomResourceDefinitions end to end with the real kubectl and the official Python client: a CRD with what real
projects' CRDs use (nested structural schema, enums, patterns, defaults, int-or-string, preserve-unknown-fields,
status and scale subresources, printer columns, short names, categories), its objects validated with kube's field
paths and messages, pruned and defaulted, served through discovery, OpenAPI (explain), /scale and /status, selectors
and watch, a Local APIService per group version; deleting the CRD deletes its objects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Mode, type: string, jsonPath: .spec.mode}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A Widget is a test widget.
        properties:
          spec:
            type: object
            description: The desired widget.
            required: [image]
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10, default: 1, description: How many widgets run.}
              image: {type: string, pattern: '^[a-z0-9./:-]+$'}
              mode: {type: string, enum: [fast, slow], default: slow}
              port: {x-kubernetes-int-or-string: true}
              template:
                type: object
                properties:
                  labels: {type: object, additionalProperties: {type: string}}
                  items:
                    type: array
                    items: {type: object, required: [name], properties: {name: {type: string}}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
              conditions:
                type: array
                items: {type: object, properties: {type: {type: string}, status: {type: string}}}
"""
VALID = """apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default, labels: {tier: front}}
spec:
  image: "nginx:1"
  port: http
  unknown: dropped
  template: {labels: {a: b}, items: [{name: i1}]}
  extra: {anything: {goes: 1}}
status: {replicas: 99}
"""
INVALID = """apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: default}
spec: {image: "Bad Image", replicas: "three", mode: medium, port: true, template: {items: [{}]}}
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def crd(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("crd") / "crd.yaml"
    path.write_text(CRD)
    api.kubectl("apply", "-f", str(path))
    _wait_established(api, "widgets.example.com")
    return "widgets.example.com"


def _wait_established(api: ApiServer, name: str) -> None:
    api.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    # kubectl wait leaves its watch behind; an event on it lets the server see the closed stream now.
    api.kubectl("annotate", "crd", name, "example.com/waited=yes", "--overwrite")


def test_crd_status_discovery_and_apiservice(api: ApiServer, crd: str) -> None:
    obj = json.loads(api.kubectl("get", "crd", crd, "-o", "json").stdout)
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True" and conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert obj["status"]["acceptedNames"]["kind"] == "Widget" and obj["status"]["storedVersions"] == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" in obj["metadata"]["finalizers"]
    rows = [
        line.split()
        for line in api.kubectl("api-resources", "--api-group=example.com", "--no-headers").stdout.splitlines()
    ]
    assert rows == [["widgets", "wd", "example.com/v1", "true", "Widget"]]
    svc = json.loads(api.kubectl("get", "apiservice", "v1.example.com", "-o", "json").stdout)
    assert svc["spec"]["group"] == "example.com" and "service" not in svc["spec"]
    assert "FIELD: replicas <integer>" in api.kubectl("explain", "widget.spec.replicas").stdout
    assert "How many widgets run." in api.kubectl("explain", "wd.spec.replicas").stdout


def test_valid_object_is_defaulted_pruned_and_printed(api: ApiServer, crd: str, tmp_path: Path) -> None:
    api.kubectl("apply", "-f", _write(tmp_path, "ok.yaml", VALID), "--validate=false")
    spec = json.loads(api.kubectl("get", "widget", "w1", "-o", "json").stdout)
    assert spec["spec"]["replicas"] == 1 and spec["spec"]["mode"] == "slow"  # defaults
    assert "unknown" not in spec["spec"]  # pruned
    assert spec["spec"]["extra"] == {"anything": {"goes": 1}}  # x-kubernetes-preserve-unknown-fields
    assert spec["spec"]["port"] == "http"
    assert "status" not in spec or "replicas" not in spec.get("status", {})  # status only through /status
    table = api.kubectl("get", "wd").stdout.splitlines()
    assert table[0].split() == ["NAME", "REPLICAS", "MODE", "READY", "AGE"]
    assert table[1].split()[:3] == ["w1", "1", "slow"]  # READY: no such condition yet, an empty cell
    res = api.kubectl("apply", "-f", _write(tmp_path, "strict.yaml", VALID), check=False)
    assert 'strict decoding error: unknown field "spec.unknown"' in res.stderr
    assert "widget.example.com/w1" in api.kubectl("get", "all", "-o", "name").stdout.split()


def test_invalid_object_is_refused_with_kube_messages(api: ApiServer, crd: str, tmp_path: Path) -> None:
    res = api.kubectl("create", "-f", _write(tmp_path, "bad.yaml", INVALID), check=False)
    assert res.returncode != 0
    err = res.stderr
    assert 'The Widget "w2" is invalid: ' in err
    assert """spec.image: Invalid value: "Bad Image": spec.image in body should match '^[a-z0-9./:-]+$'""" in err
    assert 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' in err
    assert 'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"' in err
    assert 'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"' in err
    assert "spec.template.items[0].name: Required value" in err
    big = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, namespace: default}\nspec: {image: x, replicas: 11}\n"
    res = api.kubectl("create", "-f", _write(tmp_path, "big.yaml", big), check=False)
    assert "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10" in res.stderr


def test_scale_status_selectors_and_watch(api: ApiServer, crd: str, tmp_path: Path) -> None:
    from kubernetes import client, watch

    api.kubectl("apply", "-f", _write(tmp_path, "ok.yaml", VALID), "--validate=false")
    api.kubectl("scale", "widget", "w1", "--replicas=4")
    assert json.loads(api.kubectl("get", "widget", "w1", "-o", "json").stdout)["spec"]["replicas"] == 4
    api.kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge",
                "-p", '{"status":{"replicas":4,"conditions":[{"type":"Ready","status":"True"}]}}')  # fmt: skip
    assert api.kubectl("get", "wd", "w1", "--no-headers").stdout.split()[3] == "True"
    with api.python_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        scale = custom.get_namespaced_custom_object_scale("example.com", "v1", "default", "widgets", "w1")
        assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 4
        listed = custom.list_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", label_selector="tier=front"
        )
        assert [i["metadata"]["name"] for i in listed["items"]] == ["w1"]
        none = custom.list_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", label_selector="tier=back"
        )
        assert none["items"] == []
        rv = listed["metadata"]["resourceVersion"]
        api.kubectl("label", "widget", "w1", "seen=yes")
        events = watch.Watch().stream(
            custom.list_namespaced_custom_object, "example.com", "v1", "default", "widgets",
            resource_version=rv, field_selector="metadata.name=w1", timeout_seconds=10,
        )  # fmt: skip
        for ev in events:
            assert ev["type"] == "MODIFIED" and ev["object"]["metadata"]["labels"]["seen"] == "yes"
            break
        events.close()  # closes the stream
    api.kubectl("label", "widget", "w1", "seen=twice", "--overwrite")  # the server sees the closed stream now


def test_conversion_webhook_needs_its_client_config(api: ApiServer, tmp_path: Path) -> None:
    hooked = (
        CRD.replace("widgets", "gadgets").replace("Widget", "Gadget").replace("shortNames: [wd]", "shortNames: [gd]")
    )
    hooked = hooked.replace("  versions:\n", "  conversion: {strategy: Webhook}\n  versions:\n", 1)
    res = api.kubectl("apply", "-f", _write(tmp_path, "hook.yaml", hooked), check=False)
    assert res.returncode != 0
    assert "spec.conversion.webhook: Required value: required when strategy is set to Webhook" in res.stderr


def test_deleting_the_crd_deletes_its_objects(api: ApiServer, crd: str, tmp_path: Path) -> None:
    api.kubectl("apply", "-f", _write(tmp_path, "ok.yaml", VALID), "--validate=false")
    api.kubectl("delete", "crd", crd, "--timeout=60s")
    res = api.kubectl("get", "crd", crd, check=False)
    assert "NotFound" in res.stderr
    res = api.kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/w1", check=False)
    assert res.returncode != 0 and "NotFound" in res.stderr
    assert "NotFound" in api.kubectl("get", "apiservice", "v1.example.com", check=False).stderr
    # Re-creating the CRD serves an empty collection: the objects are gone from storage, not just hidden.
    api.kubectl("apply", "-f", _write(tmp_path, "crd.yaml", CRD))
    _wait_established(api, crd)
    assert api.kubectl("get", "widgets", "-o", "name").stdout.strip() == ""
