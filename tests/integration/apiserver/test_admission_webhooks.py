"""Admission webhooks against real HTTPS webhook servers on 127.0.0.1 (certificates signed by the test's CA),
through the real kubectl: a mutating webhook adds a label in selected namespaces, a validating webhook rejects a name
with kube's wording and passes its warning on, failurePolicy Ignore vs Fail with the webhook down, a webhook slower
than timeoutSeconds, a Service that does not exist, a webhook reached through a Service's endpoints, and a
configuration change applying at once."""

import base64
import json
import time

import pytest
from tests.integration.apiserver.waiting import eventually

from pykubeadm.testing.etcd import free_port
from pykubeadm.testing.webhookserver import WebhookServer, json_patch

pytestmark = pytest.mark.integration


def add_label(review):
    labels = ((review["request"]["object"] or {}).get("metadata") or {}).get("labels")
    if labels is None:
        return {"allowed": True, **json_patch([{"op": "add", "path": "/metadata/labels", "value": {"stamped": "yes"}}])}
    return {"allowed": True, **json_patch([{"op": "add", "path": "/metadata/labels/stamped", "value": "yes"}])}


def deny_name(review):
    name = review["request"]["name"]
    if name.startswith("forbidden"):
        return {"allowed": False, "status": {"code": 403, "message": f'name "{name}" is not allowed here'}}
    return {"allowed": True, "warnings": [f"{name} checked by the test webhook"]}


def bad_label(review):
    return {"allowed": True, **json_patch([{"op": "add", "path": "/metadata/labels", "value": {"team": "not valid!"}}])}


def slow(review):
    time.sleep(3)
    return {"allowed": True}


@pytest.fixture(scope="module")
def hook(api):
    cert, key = api.pki.sign("webhook", server=True, ips=["127.0.0.1"], dns=["hook-svc.default.svc"], name="webhook")
    with WebhookServer(
        cert, key, {"/mutate": add_label, "/validate": deny_name, "/slow": slow, "/bad-label": bad_label}
    ) as server:
        yield server


@pytest.fixture(scope="module")
def ca_bundle(api) -> str:
    return base64.b64encode(api.pki.ca_cert.read_bytes()).decode()


def apply(api, obj) -> None:
    api.kubectl("apply", "-f", "-", input=json.dumps(obj))


def webhook(name, client_config, *, ns, failure="Fail", timeout=None, ops=("CREATE",), resources=("configmaps",)):
    h = {
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": list(ops), "apiGroups": [""], "apiVersions": ["v1"], "resources": list(resources)}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "failurePolicy": failure,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    if timeout:
        h["timeoutSeconds"] = timeout
    return h


def config(kind, name, *hooks):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}  # fmt: skip


def create_cm(api, ns, name):
    return api.kubectl("create", "configmap", name, "-n", ns, check=False)


def test_mutating_webhook_labels_configmaps_in_selected_namespaces(api, hook, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-mutate")
    api.kubectl("create", "namespace", "wh-plain")
    apply(api, config("MutatingWebhookConfiguration", "stamp",
                      webhook("stamp.example.com", {"url": hook.url("/mutate"), "caBundle": ca_bundle}, ns="wh-mutate")))  # fmt: skip

    def stamped() -> bool:
        name = f"cm-{time.monotonic_ns()}"
        create_cm(api, "wh-mutate", name)
        out = api.kubectl("get", "configmap", name, "-n", "wh-mutate", "-o", "jsonpath={.metadata.labels.stamped}")
        return out.stdout == "yes"

    eventually(stamped, what="the mutating webhook to label a ConfigMap")
    create_cm(api, "wh-plain", "untouched")
    out = api.kubectl("get", "configmap", "untouched", "-n", "wh-plain", "-o", "jsonpath={.metadata.labels}")
    assert "stamped" not in out.stdout
    review = next(r for r in hook.requests if r["request"].get("namespace") == "wh-mutate")
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["request"]["operation"] == "CREATE"
    assert review["request"]["userInfo"]["username"] == "kubernetes-admin"
    assert review["request"]["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}


def test_validating_webhook_rejects_a_name_and_warns(api, hook, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-validate")
    apply(api, config("ValidatingWebhookConfiguration", "names",
                      webhook("names.example.com", {"url": hook.url("/validate"), "caBundle": ca_bundle},
                              ns="wh-validate")))  # fmt: skip
    eventually(lambda: create_cm(api, "wh-validate", "forbidden-probe").returncode != 0, what="the webhook")
    res = create_cm(api, "wh-validate", "forbidden-one")
    assert res.stderr.strip() == (
        'error: failed to create configmap: admission webhook "names.example.com" denied the request: '
        'name "forbidden-one" is not allowed here'
    )
    res = create_cm(api, "wh-validate", "fine")
    assert res.returncode == 0 and "Warning: fine checked by the test webhook" in res.stderr
    # Deleting the configuration applies at once: the name is accepted again.
    api.kubectl("delete", "validatingwebhookconfiguration", "names")
    eventually(lambda: create_cm(api, "wh-validate", f"forbidden-{time.monotonic_ns()}").returncode == 0, timeout=2,
               what="the deleted configuration to stop applying")  # fmt: skip


def test_failure_policy_with_the_webhook_down(api, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-ignore")
    api.kubectl("create", "namespace", "wh-fail")
    down = f"https://127.0.0.1:{free_port()}/"
    apply(api, config("ValidatingWebhookConfiguration", "down",
                      webhook("ignore.example.com", {"url": down, "caBundle": ca_bundle}, ns="wh-ignore",
                              failure="Ignore"),
                      webhook("fail.example.com", {"url": down, "caBundle": ca_bundle}, ns="wh-fail")))  # fmt: skip
    eventually(lambda: create_cm(api, "wh-fail", f"p{time.monotonic_ns()}").returncode != 0, what="the webhook")
    assert create_cm(api, "wh-ignore", "through").returncode == 0
    res = create_cm(api, "wh-fail", "refused")
    port = down.split(":")[2].rstrip("/")
    assert res.stderr.strip() == (
        'error: failed to create configmap: Internal error occurred: failed calling webhook "fail.example.com": '
        f'failed to call webhook: Post "{down}?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


def test_a_missing_service_fails_with_kubes_message(api, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-nosvc")
    svc = {"service": {"namespace": "default", "name": "deny-svc"}, "caBundle": ca_bundle}
    apply(api, config("ValidatingWebhookConfiguration", "deny", webhook("deny.example.com", svc, ns="wh-nosvc")))
    eventually(lambda: create_cm(api, "wh-nosvc", f"p{time.monotonic_ns()}").returncode != 0, what="the webhook")
    res = create_cm(api, "wh-nosvc", "x")
    assert res.stderr.strip() == (
        'error: failed to create configmap: Internal error occurred: failed calling webhook "deny.example.com": '
        'failed to call webhook: Post "https://deny-svc.default.svc:443/?timeout=10s": service "deny-svc" not found'
    )


def test_webhook_slower_than_its_timeout(api, hook, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-slow")
    apply(api, config("ValidatingWebhookConfiguration", "slow",
                      webhook("slow.example.com", {"url": hook.url("/slow"), "caBundle": ca_bundle}, ns="wh-slow",
                              timeout=1)))  # fmt: skip
    eventually(lambda: create_cm(api, "wh-slow", f"p{time.monotonic_ns()}").returncode != 0, what="the webhook")
    res = create_cm(api, "wh-slow", "late")
    assert res.stderr.strip() == (
        'error: failed to create configmap: Internal error occurred: failed calling webhook "slow.example.com": '
        f'failed to call webhook: Post "{hook.url("/slow")}?timeout=1s": context deadline exceeded'
    )


def test_webhook_behind_a_service_through_its_endpoints(api, hook, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-svc")
    apply(api, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook-svc", "namespace": "default"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.port}]}})  # fmt: skip
    apply(api, {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook-svc", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": hook.port}]}]})  # fmt: skip
    svc = {"service": {"namespace": "default", "name": "hook-svc", "path": "/validate"}, "caBundle": ca_bundle}
    apply(api, config("ValidatingWebhookConfiguration", "via-svc", webhook("svc.example.com", svc, ns="wh-svc")))
    eventually(lambda: create_cm(api, "wh-svc", f"forbidden-{time.monotonic_ns()}").returncode != 0, what="the hook")
    res = create_cm(api, "wh-svc", "forbidden-svc")
    assert (
        'admission webhook "svc.example.com" denied the request: name "forbidden-svc" is not allowed here' in res.stderr
    )
    assert create_cm(api, "wh-svc", "allowed").returncode == 0


def test_an_object_a_mutating_webhook_made_invalid_is_refused(api, hook, ca_bundle, kubectl_available):
    api.kubectl("create", "namespace", "wh-badmutate")
    apply(api, config("MutatingWebhookConfiguration", "bad-label",
                      webhook("bad.example.com", {"url": hook.url("/bad-label"), "caBundle": ca_bundle},
                              ns="wh-badmutate")))  # fmt: skip
    eventually(lambda: create_cm(api, "wh-badmutate", f"p{time.monotonic_ns()}").returncode != 0, what="the webhook")
    res = create_cm(api, "wh-badmutate", "mutated")
    assert 'ConfigMap "mutated" is invalid: metadata.labels: Invalid value: "not valid!"' in res.stderr
    assert api.kubectl("get", "configmaps", "-n", "wh-badmutate", "-o", "name").stdout == ""
