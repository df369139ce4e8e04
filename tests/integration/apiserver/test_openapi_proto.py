"""/openapi/v2 in gnostic's protobuf form against a real apiserver: the media types and headers kube-openapi answers
with (Content-Type, ETag shared with the JSON form, Vary, 304 on If-None-Match, 406), the decoded document equal to
the JSON one, and kubectl 1.27 — which asks for the protobuf document — explaining and validating with it."""

from __future__ import annotations

import gzip
import http.client
import json
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from pykubeadm.apiserver.openapi.gnostic import message_class
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

PROTO = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PROTO_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
KUBECTL_127 = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27"


def _get(api: ApiServer, path: str, **headers: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    cert, key = api.client_cert("admin", ["system:masters"])
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    ctx.load_cert_chain(str(cert), str(key))
    host, port = api.url.removeprefix("https://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
    try:
        conn.request("GET", path, headers={k.replace("_", "-"): v for k, v in headers.items()})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def _kubectl_127(api: ApiServer, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(KUBECTL_127)
    if exe is None:
        pytest.skip("kubectl 1.27 is not installed (scripts/setup.sh installs it)")
    return subprocess.run([exe, *args], env=api.kubectl_env(), capture_output=True, text=True, timeout=120, check=False)


def test_protobuf_document_is_the_json_document(api: ApiServer) -> None:
    status, jheaders, jbody = _get(api, "/openapi/v2", Accept="application/json")
    assert status == 200 and jheaders["Content-Type"] == "application/json"
    doc = json.loads(jbody)
    for accept in (PROTO, PROTO_DEPRECATED, f"application/json;q=0.5, {PROTO_DEPRECATED}"):
        status, headers, body = _get(api, "/openapi/v2", Accept=accept)
        assert status == 200, accept
        # The deprecated `@` form is answered with the `.v1.0` one: Go's mime parser rejects the `@`.
        assert headers["Content-Type"] == PROTO, accept
        assert headers.get_all("Vary") == ["Accept-Encoding", "Accept"]
        assert headers["ETag"] == jheaders["ETag"] and len(headers["ETag"]) == 130  # quoted SHA-512 hex
    msg = message_class("Document").FromString(body)
    assert (msg.swagger, msg.info.title, msg.info.version) == ("2.0", doc["info"]["title"], doc["info"]["version"])
    assert [d.name for d in msg.definitions.additional_properties] == list(doc["definitions"])
    assert [p.name for p in msg.paths.path] == list(doc["paths"])
    deployment = next(d.value for d in msg.definitions.additional_properties if d.name.endswith("apps.v1.Deployment"))
    gvk = {e.name: yaml.safe_load(e.value.yaml) for e in deployment.vendor_extension}
    assert gvk["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    patch = next(p.value.patch for p in msg.paths.path if p.name.endswith("/deployments/{name}"))
    assert patch.operation_id == "patchAppsV1NamespacedDeployment"
    queries = [q.parameter.non_body_parameter.query_parameter_sub_schema.name for q in patch.parameters]
    assert "fieldValidation" in queries


def test_go_clients_get_it_gzipped(api: ApiServer) -> None:
    _, _, plain = _get(api, "/openapi/v2", Accept=PROTO)
    status, headers, body = _get(api, "/openapi/v2", Accept=PROTO, Accept_Encoding="gzip")
    assert status == 200 and headers["Content-Encoding"] == "gzip" and headers["Content-Type"] == PROTO
    assert gzip.decompress(body) == plain and len(body) < len(plain) // 3
    assert "Content-Encoding" not in _get(api, "/openapi/v2", Accept=PROTO, Accept_Encoding="gzip;q=0")[1]


def test_etag_answers_304_and_unacceptable_types_406(api: ApiServer) -> None:
    status, headers, _ = _get(api, "/openapi/v2", Accept=PROTO)
    etag = headers["ETag"]
    for match in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        status, h304, body = _get(api, "/openapi/v2", Accept=PROTO, If_None_Match=match)
        assert (status, body) == (304, b""), match
        assert h304["ETag"] == etag
    status, _, body = _get(api, "/openapi/v2", Accept="application/json", If_None_Match=etag)
    assert status == 304  # one ETag for both representations, as kube-openapi computes it from the JSON
    status, _, body = _get(api, "/openapi/v2", Accept=PROTO, If_None_Match='"stale"')
    assert status == 200 and body
    status, _, body = _get(api, "/openapi/v2", Accept="application/yaml")
    assert (status, body) == (406, b"")


def test_kubectl_127_explain_reads_the_protobuf_document(api: ApiServer) -> None:
    res = _kubectl_127(api, "explain", "pod.spec.containers", "--output=plaintext-openapiv2", "-v=8")
    assert res.returncode == 0, res.stderr
    assert f"Accept: {PROTO_DEPRECATED}" in res.stderr and f"Content-Type: {PROTO}" in res.stderr
    assert "RESOURCE: containers <[]Object>" in res.stdout
    assert "List of containers belonging to the pod." in " ".join(res.stdout.split())
    assert "imagePullPolicy\t<string>" in res.stdout


def test_kubectl_127_validates_client_side_with_the_protobuf_schemas(api: ApiServer, tmp_path: Path) -> None:
    # kubectl checks a `kind: List` itself (it never asks the server to validate a List), with the /openapi/v2 schemas.
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"
        "  metadata: {name: proto-bad, namespace: default}\n  data: {a: b}\n  datta: {}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: proto-bad, namespace: default}\n"
        '  spec:\n    containers: [{name: c, image: i, imagePullPolcy: x, ports: [{containerPort: "80"}]}]\n'
    )
    res = _kubectl_127(api, "apply", "-f", str(bad), "--validate=strict")
    assert res.returncode != 0
    err = " ".join(res.stderr.split())
    assert 'ValidationError(ConfigMap): unknown field "datta" in io.k8s.api.core.v1.ConfigMap' in err, err
    assert 'unknown field "imagePullPolcy" in io.k8s.api.core.v1.Container' in err, err
    assert "ValidationError(Pod.spec.containers[0].ports[0].containerPort): invalid type" in err, err
    assert "if you choose to ignore these errors, turn validation off with --validate=false" in err
    assert "proto-bad" not in api.kubectl("get", "configmaps", "-n", "default", "-o", "name").stdout
    good = tmp_path / "good.yaml"
    good.write_text(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n"
        "  metadata: {name: proto-good, namespace: default}\n  spec: {ports: [{port: 80, targetPort: http}]}\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: proto-good, namespace: default}\n"
        "  spec:\n    selector: {matchLabels: {a: b}}\n    strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}\n"
        "    template:\n      metadata: {labels: {a: b}}\n"
        "      spec: {containers: [{name: c, image: i, resources: {limits: {cpu: 500m, memory: 1Gi}}}]}\n"
    )
    res = _kubectl_127(api, "apply", "-f", str(good), "--validate=strict")
    assert res.returncode == 0, res.stderr
    assert "service/proto-good created" in res.stdout and "deployment.apps/proto-good created" in res.stdout


CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.proto.example.com}
spec:
  group: proto.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              size: {type: integer, minimum: 1, description: How big.}
              mode: {type: string, enum: [on, off], default: "on"}
              port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


def test_custom_resources_join_the_protobuf_document(api: ApiServer, tmp_path: Path) -> None:
    before = _get(api, "/openapi/v2", Accept=PROTO)[1]["ETag"]
    (tmp_path / "crd.yaml").write_text(CRD)
    api.kubectl("apply", "-f", str(tmp_path / "crd.yaml"))
    deadline = time.monotonic() + 60
    while True:  # the CRD's schema joins the document once the CRD is established
        status, headers, body = _get(api, "/openapi/v2", Accept=PROTO, If_None_Match=before)
        if status == 200:
            names = [d.name for d in message_class("Document").FromString(body).definitions.additional_properties]
            if "com.example.proto.v1.Gadget" in names:
                break
        assert time.monotonic() < deadline, "the Gadget schema never appeared in /openapi/v2"
        time.sleep(0.2)
    assert headers["ETag"] != before
    res = _kubectl_127(api, "explain", "gadgets.spec", "--output=plaintext-openapiv2")
    assert res.returncode == 0, res.stderr
    assert "What the gadget should be." in res.stdout and "size\t<integer>" in res.stdout
    (tmp_path / "list.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: proto.example.com/v1\n  kind: Gadget\n"
        "  metadata: {name: g, namespace: default}\n  spec: {size: big, colour: red}\n"
    )
    res = _kubectl_127(api, "apply", "-f", str(tmp_path / "list.yaml"), "--validate=strict")
    err = " ".join(res.stderr.split())
    assert res.returncode != 0
    assert 'ValidationError(Gadget.spec): unknown field "colour" in com.example.proto.v1.Gadget.spec' in err, err
    assert "ValidationError(Gadget.spec.size): invalid type for com.example.proto.v1.Gadget.spec.size" in err, err
