"""OpenAPI against the real kubectl: `kubectl explain` over /openapi/v3 for fields of core, apps, batch and
certificates kinds, server-side strict field validation (unknown fields, wrong value types) as kube-apiserver reports
them, and the /openapi/v2 and /openapi/v3 documents themselves."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path

import pytest

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

EXPLAINED = [
    ("pod.spec.containers", "<[]Container>", "List of containers belonging to the pod."),
    ("pod.spec.containers.name", "<string>", "Name of the container specified as a DNS_LABEL."),
    ("pods.spec.restartPolicy", "<string>", "Restart policy for all containers within the pod."),
    ("service.spec.ports.targetPort", "<IntOrString>", "Number or name of the port to access on the pods"),
    ("configmap.data", "<map[string]string>", "Data contains the configuration data."),
    ("deployment.spec.replicas", "<integer>", "Number of desired pods."),
    ("daemonsets.spec.updateStrategy", "<DaemonSetUpdateStrategy>", "An update strategy to replace existing"),
    ("job.spec.backoffLimit", "<integer>", "Specifies the number of retries before marking this job failed."),
    ("cronjob.spec.schedule", "<string>", "The schedule in Cron format"),
    ("csr.spec.signerName", "<string>", "signerName indicates the requested signer"),
]


def _get(api: ApiServer, path: str, accept: str = "application/json") -> tuple[str, bytes]:
    cert, key = api.client_cert("admin", ["system:masters"])
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    ctx.load_cert_chain(str(cert), str(key))
    req = urllib.request.Request(api.url + path, headers={"Accept": accept})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return resp.headers.get("Content-Type", ""), resp.read()


@pytest.mark.parametrize(("field", "type_", "text"), EXPLAINED)
def test_kubectl_explain(api: ApiServer, field: str, type_: str, text: str) -> None:
    out = api.kubectl("explain", field).stdout
    leaf = field.rsplit(".", 1)[-1]
    assert f"FIELD: {leaf} {type_}" in out, out
    assert text in " ".join(out.split()), out


def test_explain_lists_fields_and_kind(api: ApiServer) -> None:
    out = api.kubectl("explain", "statefulsets.spec").stdout
    assert "GROUP:      apps" in out and "KIND:       StatefulSet" in out
    assert "serviceName\t<string>" in out and "volumeClaimTemplates\t<[]PersistentVolumeClaim>" in out
    assert "selector\t<LabelSelector> -required-" in out
    containers = api.kubectl("explain", "pod.spec.containers").stdout
    assert "name\t<string> -required-" in containers and "image\t<string>" in containers


def test_apply_strict_reports_unknown_nested_fields(api: ApiServer, tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: strict, namespace: default}\nspec:\n  foo: 1\n"
        "  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n"
        "    spec: {containers: [{name: c, image: i, imagePullPolcy: x}]}\n"
    )
    res = api.kubectl("apply", "-f", str(manifest), "--validate=strict", check=False)
    assert res.returncode != 0
    assert (
        'Error from server (BadRequest): error when creating "' + str(manifest) + '": Deployment in version "v1" '
        'cannot be handled as a Deployment: strict decoding error: unknown field "spec.foo", '
        'unknown field "spec.template.spec.containers[0].imagePullPolcy"'
    ) in res.stderr
    # --validate=false: the unknown fields are dropped, the rest is stored.
    api.kubectl("apply", "-f", str(manifest), "--validate=false")
    spec = json.loads(api.kubectl("get", "deployment", "strict", "-o", "json").stdout)["spec"]
    assert "foo" not in spec and "imagePullPolcy" not in spec["template"]["spec"]["containers"][0]


def test_wrong_value_type_is_a_decoding_error(api: ApiServer, tmp_path: Path) -> None:
    manifest = tmp_path / "type.json"
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {"replicas": "two", "selector": {"matchLabels": {"a": "b"}}, "template": template}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "typed"}, "spec": spec}
    manifest.write_text(json.dumps(body))
    res = api.kubectl("create", "-f", str(manifest), "--validate=false", check=False)
    assert res.returncode != 0
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct '
        "field DeploymentSpec.spec.replicas of type int32"
    ) in res.stderr


def test_openapi_documents(api: ApiServer) -> None:
    ctype, body = _get(api, "/openapi/v3")
    index = json.loads(body)
    assert ctype.startswith("application/json")
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/certificates.k8s.io/v1"} <= set(index["paths"])
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert "?hash=" in url
    doc = json.loads(_get(api, url)[1])
    assert doc["openapi"].startswith("3.")
    dep = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    v2 = json.loads(_get(api, "/openapi/v2")[1])
    assert v2["swagger"] == "2.0" and "io.k8s.api.core.v1.Pod" in v2["definitions"]
    ctype, body = _get(api, "/openapi/v2", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    assert ctype == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" and body
