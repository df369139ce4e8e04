"""Admission end to end on a lab (issue #38): webhook and conversion servers written for the test run as a Pod behind
Services, with a CA and serving certificate the test makes, and the machine's kubectl does the user's part.

The server is `pykubeadm.testing.webhookserver` (standard library only) plus a small program, both in a ConfigMap, the
certificate in a `kubernetes.io/tls` Secret, mounted into a `python:3` Pod that serves HTTPS on its own port. Through
it: a mutating webhook (namespaceSelector) labels new ConfigMaps, a validating webhook refuses a name, a CRD with v1
and v2 is converted by the same server; a second copy of the Pod deleted shows failurePolicy Ignore letting a request
through and Fail refusing it with kube's message. Then the issue's three refusals in kube's words: PodSecurity
restricted against a privileged Pod, a webhook whose Service does not exist, and a ValidatingAdmissionPolicy
`object.spec.replicas <= 2` with a Deny binding. One lab (a single control-plane node) for the module.
"""

from __future__ import annotations

import base64
import datetime as dt
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for

from pykubeadm.pki.certs import AltNames, CertConfig, encode_cert_pem, new_cert_and_key, new_self_signed_ca
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key
from pykubeadm.testing import webhookserver

pytestmark = pytest.mark.e2e

PREFIX = "127.0.39."  # a prefix no other test or benchmark uses
ENV = {**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}, "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX}
NS = "hooks"  # where the webhook Pods and their Services live
SERVICE = "hook"  # the webhook Pod that stays
GONE = "hook-gone"  # the one deleted for the failurePolicy test
# Pods share their node's address: ports no lab component (apiserver 6443, kubelet 10250, ...) holds, one per Pod.
PORTS = {SERVICE: 8443, GONE: 8444}

SERVER_PROGRAM = '''"""The admission and conversion webhooks of the e2e test, served over HTTPS on $POD_IP:$PORT."""
import copy
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webhookserver import WebhookServer, json_patch


def mutate(review):
    labels = review["request"]["object"]["metadata"].get("labels")
    if labels is None:
        op = {"op": "add", "path": "/metadata/labels", "value": {"stamped-by": "e2e-webhook"}}
    else:
        op = {"op": "add", "path": "/metadata/labels/stamped-by", "value": "e2e-webhook"}
    return {"allowed": True, **json_patch([op])}


def validate(review):
    name = review["request"]["name"]
    if name.startswith("forbidden"):
        return {"allowed": False, "status": {"code": 403, "message": f'name "{name}" is not allowed here'}}
    return {"allowed": True}


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


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # PID 1 of its namespace: TERM ends it
handlers = {"/mutate": mutate, "/validate": validate, "/convert": convert}
with WebhookServer("/tls/tls.crt", "/tls/tls.key", handlers, host=os.environ["POD_IP"], port=int(os.environ["PORT"])):
    threading.Event().wait()
'''


def pykubeadm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


def kubectl(lab: Lab, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def apply(lab: Lab, *objs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    return kubectl(lab, "apply", "-f", "-", stdin=doc)


def applied(lab: Lab, *objs: dict[str, Any]) -> None:
    res = apply(lab, *objs)
    assert res.returncode == 0, res.stderr


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def create_cm(lab: Lab, ns: str, name: str) -> subprocess.CompletedProcess[str]:
    return kubectl(lab, "create", "configmap", name, "-n", ns, "--from-literal=k=v")


def service_ref(name: str, path: str) -> dict[str, Any]:
    return {"service": {"namespace": NS, "name": name, "path": path}}


def webhook(name: str, client_config: dict[str, Any], ca: str, ns: str, failure: str = "Fail") -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {**client_config, "caBundle": ca},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "failurePolicy": failure,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}  # fmt: skip


def server_pod(name: str) -> dict[str, Any]:
    port = PORTS[name]
    env = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "PORT", "value": str(port)},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {
            # the lab has one node, its control plane
            "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}],
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "server",
                    "image": "python:3",
                    "command": ["python3", "/app/server.py"],
                    "env": env,
                    "ports": [{"name": "https", "containerPort": port}],
                    "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
                    "volumeMounts": [
                        {"name": "app", "mountPath": "/app", "readOnly": True},
                        {"name": "tls", "mountPath": "/tls", "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                {"name": "app", "configMap": {"name": "webhook-server"}},
                {"name": "tls", "secret": {"secretName": "webhook-tls"}},
            ],
        },
    }


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"app": name}, "ports": [{"name": "https", "port": 443, "targetPort": PORTS[name]}]},
    }


def make_pki() -> tuple[bytes, bytes, bytes]:
    """A CA and a serving certificate for both Services' names: (CA PEM, cert PEM, key PEM)."""
    ca_key = generate_private_key()
    ca = new_self_signed_ca(CertConfig("admission-e2e-ca"), ca_key)
    names = tuple(f"{svc}.{NS}.svc" for svc in (SERVICE, GONE))
    cfg = CertConfig(
        names[0],
        alt_names=AltNames(dns_names=names),
        usages=(ExtendedKeyUsageOID.SERVER_AUTH,),
        not_after=dt.datetime.now(dt.UTC) + dt.timedelta(days=1),
    )
    cert, key = new_cert_and_key(ca, ca_key, cfg)
    return encode_cert_pem(ca), encode_cert_pem(cert), encode_private_key_pem(key)


def endpoints_ready(lab: Lab, name: str) -> bool:
    res = kubectl(lab, "get", "endpoints", name, "-n", NS, "-o", "jsonpath={.subsets[*].addresses[*].ip}")
    return res.returncode == 0 and bool(res.stdout.strip())


def wait_default_service_account(lab: Lab, ns: str) -> None:
    """Pods are admitted only once their namespace's default ServiceAccount exists (its controller makes it after the
    namespace), as on kube: ServiceAccount admission runs before every validating plugin."""
    wait_for(
        lambda: kubectl(lab, "get", "serviceaccount", "default", "-n", ns).returncode == 0,
        60,
        f"the default ServiceAccount of {ns}",
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("admission")
    try:
        res = pykubeadm("lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--workers", "0")
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        yield Lab(lab_dir)
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = _kill_leftovers(lab_dir)
        assert not left, f"lab down left processes running: {left}"


@pytest.fixture(scope="module")
def ca_bundle(lab: Lab) -> str:
    """The webhook Pods running Ready behind their Services; returns the caBundle that trusts them."""
    ca, cert, key = make_pki()
    server_module = inspect.getsource(webhookserver)
    applied(lab, namespace(NS))
    wait_default_service_account(lab, NS)
    applied(
        lab,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "webhook-server", "namespace": NS},
         "data": {"server.py": SERVER_PROGRAM, "webhookserver.py": server_module}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": "webhook-tls", "namespace": NS},
         "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}},
        server_pod(SERVICE), service(SERVICE), server_pod(GONE), service(GONE),
    )  # fmt: skip
    for name in (SERVICE, GONE):
        wait_for(partial(endpoints_ready, lab, name), 90, f"the {name} Pod Ready in its Service's Endpoints")
    return base64.b64encode(ca).decode()


def test_mutating_webhook_labels_new_configmaps(lab: Lab, ca_bundle: str) -> None:
    applied(lab, namespace("mutated"), namespace("untouched"))
    applied(lab, configuration("MutatingWebhookConfiguration", "stamp",
                               webhook("stamp.e2e.example.com", service_ref(SERVICE, "/mutate"), ca_bundle,
                                       ns="mutated")))  # fmt: skip

    def stamped(name: str) -> bool:
        assert create_cm(lab, "mutated", name).returncode == 0
        res = kubectl(lab, "get", "configmap", name, "-n", "mutated", "-o", "jsonpath={.metadata.labels}")
        return json.loads(res.stdout or "{}").get("stamped-by") == "e2e-webhook"

    counter = iter(range(1000))
    wait_for(lambda: stamped(f"probe-{next(counter)}"), 30, "the mutating webhook to label a new ConfigMap")
    assert stamped("settings")
    assert create_cm(lab, "untouched", "settings").returncode == 0  # outside the namespaceSelector: left alone
    res = kubectl(lab, "get", "configmap", "settings", "-n", "untouched", "-o", "jsonpath={.metadata.labels}")
    assert "stamped-by" not in res.stdout


def test_validating_webhook_rejects_a_name(lab: Lab, ca_bundle: str) -> None:
    applied(lab, namespace("checked"))
    applied(lab, configuration("ValidatingWebhookConfiguration", "names",
                               webhook("names.e2e.example.com", service_ref(SERVICE, "/validate"), ca_bundle,
                                       ns="checked")))  # fmt: skip
    counter = iter(range(1000))
    wait_for(lambda: create_cm(lab, "checked", f"forbidden-{next(counter)}").returncode != 0, 30, "the webhook")
    res = create_cm(lab, "checked", "forbidden-one")
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'error: failed to create configmap: admission webhook "names.e2e.example.com" denied the request: '
        'name "forbidden-one" is not allowed here'
    )
    assert create_cm(lab, "checked", "allowed-one").returncode == 0
    assert kubectl(lab, "get", "configmap", "forbidden-one", "-n", "checked").returncode != 0


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "paints.e2e.example.com"},
    "spec": {
        "group": "e2e.example.com",
        "scope": "Namespaced",
        "names": {"plural": "paints", "singular": "paint", "kind": "Paint"},
        "versions": [
            {"name": "v1", "served": True, "storage": False,
             "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                 "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}},
            {"name": "v2", "served": True, "storage": True,
             "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                 "spec": {"type": "object", "properties": {"colour": {"type": "string"},
                                                           "convertedFrom": {"type": "string"}}}}}}},
        ],
    },
}  # fmt: skip


def test_crd_conversion_webhook_in_a_pod(lab: Lab, ca_bundle: str) -> None:
    crd = json.loads(json.dumps(CRD))
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {**service_ref(SERVICE, "/convert"), "caBundle": ca_bundle},
        },
    }
    applied(lab, crd)
    res = kubectl(lab, "wait", "--for=condition=Established", "crd/paints.e2e.example.com", "--timeout=60s")
    assert res.returncode == 0, res.stderr
    paint = {"apiVersion": "e2e.example.com/v1", "kind": "Paint", "metadata": {"name": "red", "namespace": "default"},
             "spec": {"color": "red"}}  # fmt: skip
    # the new version is served once discovery has it: retry the create until then
    wait_for(lambda: apply(lab, paint).returncode == 0, 30, "the Paint created at v1")
    v2 = kubectl(lab, "get", "paints.v2.e2e.example.com", "red", "-o",
                 "jsonpath={.apiVersion} {.spec.colour} {.spec.convertedFrom}")  # fmt: skip
    assert v2.returncode == 0, v2.stderr
    assert v2.stdout == "e2e.example.com/v2 red e2e.example.com/v1"
    v1 = kubectl(lab, "get", "paints.v1.e2e.example.com", "red", "-o", "jsonpath={.apiVersion} {.spec.color}")
    assert v1.stdout == "e2e.example.com/v1 red"


def test_failure_policy_once_the_webhook_pod_is_gone(lab: Lab, ca_bundle: str) -> None:
    applied(lab, namespace("lenient"), namespace("strict"))
    applied(lab, configuration("ValidatingWebhookConfiguration", "gone",
                               webhook("lenient.e2e.example.com", service_ref(GONE, "/validate"), ca_bundle,
                                       ns="lenient", failure="Ignore"),
                               webhook("strict.e2e.example.com", service_ref(GONE, "/validate"), ca_bundle,
                                       ns="strict", failure="Fail")))  # fmt: skip
    counter = iter(range(1000))
    wait_for(lambda: create_cm(lab, "strict", f"forbidden-{next(counter)}").returncode != 0, 30, "the webhooks")
    assert create_cm(lab, "lenient", "forbidden-while-up").returncode != 0  # the webhook answers while its Pod runs

    assert kubectl(lab, "delete", "pod", GONE, "-n", NS, "--wait=true").returncode == 0
    wait_for(lambda: not endpoints_ready(lab, GONE), 30, f"the {GONE} Endpoints emptied")
    assert create_cm(lab, "lenient", "forbidden-while-down").returncode == 0  # Ignore: let through
    res = create_cm(lab, "strict", "refused")
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'error: failed to create configmap: Internal error occurred: failed calling webhook "strict.e2e.example.com": '
        f'failed to call webhook: Post "https://{GONE}.{NS}.svc:443/validate?timeout=10s": '
        f'no endpoints available for service "{GONE}"'
    )


PRIVILEGED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "priv", "namespace": "restricted"},
    "spec": {"containers": [{"name": "c", "image": "python:3", "securityContext": {"privileged": True}}]},
}


def test_pod_security_restricted_refuses_a_privileged_pod(lab: Lab) -> None:
    applied(lab, namespace("restricted", **{"pod-security.kubernetes.io/enforce": "restricted"}))
    wait_default_service_account(lab, "restricted")
    res = apply(lab, PRIVILEGED_POD)
    assert res.returncode != 0
    assert (
        'pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged '
        '(container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    ) in res.stderr
    assert res.stderr.startswith("Error from server (Forbidden): ")
    assert kubectl(lab, "get", "pods", "-n", "restricted", "-o", "name").stdout == ""


def test_a_webhook_whose_service_does_not_exist_refuses(lab: Lab) -> None:
    applied(lab, namespace("no-service"))
    ca = base64.b64encode(make_pki()[0]).decode()
    applied(lab, configuration("ValidatingWebhookConfiguration", "nowhere",
                               webhook("nowhere.e2e.example.com", service_ref("no-such-svc", "/validate"), ca,
                                       ns="no-service")))  # fmt: skip
    counter = iter(range(1000))
    wait_for(lambda: create_cm(lab, "no-service", f"p{next(counter)}").returncode != 0, 30, "the webhook")
    res = create_cm(lab, "no-service", "x")
    assert res.stderr.strip() == (
        'error: failed to create configmap: Internal error occurred: failed calling webhook "nowhere.e2e.example.com": '
        f'failed to call webhook: Post "https://no-such-svc.{NS}.svc:443/validate?timeout=10s": '
        'service "no-such-svc" not found'
    )


def test_validating_admission_policy_denies_three_replicas(lab: Lab) -> None:
    applied(lab, namespace("capped"))
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
              "resources": ["deployments"]}]  # fmt: skip
    applied(
        lab,
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": "max-replicas"},
         "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules},
                  "validations": [{"expression": "object.spec.replicas <= 2"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": "max-replicas-binding"},
         "spec": {"policyName": "max-replicas", "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "capped"}}}}},
    )  # fmt: skip

    def deploy(name: str, replicas: int) -> subprocess.CompletedProcess[str]:
        labels = {"app": name}
        return apply(lab, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "capped"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "python:3"}]}}},
        })  # fmt: skip

    counter = iter(range(1000))
    wait_for(lambda: deploy(f"probe-{next(counter)}", 3).returncode != 0, 30, "the policy to apply")
    res = deploy("big", 3)
    assert res.returncode != 0
    assert (
        "The deployments \"big\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with binding "
        "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 2"
    ) in res.stderr
    res = deploy("small", 2)
    assert res.returncode == 0, res.stderr
