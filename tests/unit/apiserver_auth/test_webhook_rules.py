"""Admission webhook matching (rules, scope, selectors, exempt kinds), the AdmissionReview sent, the checks on the
response and kube's denial wording."""

from __future__ import annotations

import re

import pytest

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.apiserver.admission.webhook import rules
from pykubeadm.apiserver.admission.webhook.caller import CallError, _verify, review_request
from pykubeadm.apiserver.admission.webhook.plugin import denied
from pykubeadm.apiserver.authn.user import UserInfo

USER = UserInfo("alice", "u1", ("dev",), {"scope": ("a",)})


def attrs(op=Operation.CREATE, resource="pods", sub="", ns="ns", group="", obj=None, old=None):
    return AdmissionAttributes(op, resource, USER, namespace=ns, name="x", group=group, kind="Pod", subresource=sub,
                               obj=obj, old_obj=old)  # fmt: skip


def rule(resources, ops=("*",), groups=("",), scope=None):
    r = {"operations": list(ops), "apiGroups": list(groups), "apiVersions": ["*"], "resources": list(resources)}
    if scope:
        r["scope"] = scope
    return r


@pytest.mark.parametrize(
    ("resources", "sub", "expected"),
    [
        (["pods"], "", True),
        (["pods"], "status", False),
        (["pods/*"], "status", True),
        (["pods/*"], "", True),
        (["*"], "", True),
        (["*"], "exec", False),
        (["*/status"], "status", True),
        (["*/status"], "exec", False),
        (["*/*"], "eviction", True),
        (["configmaps"], "", False),
    ],
)
def test_resource_patterns(resources, sub, expected):
    assert rules.matches_rules([rule(resources)], attrs(sub=sub)) is expected


def test_operations_groups_and_scope():
    assert not rules.matches_rules([rule(["pods"], ops=("UPDATE",))], attrs())
    assert rules.matches_rules([rule(["pods"], ops=("CREATE", "DELETE"))], attrs(Operation.DELETE))
    assert not rules.matches_rules([rule(["deployments"], groups=("apps",))], attrs(resource="deployments"))
    assert rules.matches_rules([rule(["deployments"], groups=("*",))], attrs(resource="deployments", group="apps"))
    assert not rules.matches_rules([rule(["*"], scope="Cluster")], attrs())
    assert rules.matches_rules([rule(["*"], scope="Namespaced")], attrs())
    # A Namespace is cluster-scoped even though its requests carry its name as namespace.
    assert rules.matches_rules([rule(["namespaces"], scope="Cluster")], attrs(resource="namespaces", ns="ns"))
    assert not rules.matches_rules([rule(["namespaces"], scope="Namespaced")], attrs(resource="namespaces", ns="ns"))


def test_object_selector_matches_new_or_old_and_configurations_are_exempt():
    sel = {"matchLabels": {"team": "a"}}
    assert rules.matches_object_selector(sel, attrs(obj={"metadata": {"labels": {"team": "a"}}}))
    assert rules.matches_object_selector(sel, attrs(obj={"metadata": {}}, old={"metadata": {"labels": {"team": "a"}}}))
    assert not rules.matches_object_selector(sel, attrs(obj={"metadata": {"labels": {"team": "b"}}}))
    assert rules.matches_object_selector(None, attrs())
    assert rules.exempt(attrs(resource="validatingwebhookconfigurations", group="admissionregistration.k8s.io"))
    assert not rules.exempt(attrs(resource="configmaps"))


def test_review_request_carries_what_kube_sends():
    review = review_request(attrs(Operation.DELETE, old={"metadata": {"name": "x"}}), "v1", "uid-1")
    req = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and req["uid"] == "uid-1"
    assert req["object"] is None and req["oldObject"] == {"metadata": {"name": "x"}}
    assert req["userInfo"] == {"username": "alice", "uid": "u1", "groups": ["dev"], "extra": {"scope": ["a"]}}
    assert req["options"]["kind"] == "DeleteOptions" and req["namespace"] == "ns" and req["dryRun"] is False


def test_response_checks():
    ok = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u", "allowed": True}}
    assert _verify(ok, "u", "v1", mutating=False)["allowed"] is True
    with pytest.raises(CallError, match=re.escape('expected response.uid="u", got "v"')):
        _verify({**ok, "response": {"uid": "v"}}, "u", "v1", mutating=False)
    with pytest.raises(CallError, match=re.escape("validating webhook may not return response.patch")):
        _verify({**ok, "response": {"uid": "u", "patch": "W10="}}, "u", "v1", mutating=False)
    with pytest.raises(CallError, match=re.escape("returned response.patch but not response.patchType")):
        _verify({**ok, "response": {"uid": "u", "patch": "W10="}}, "u", "v1", mutating=True)
    assert _verify({"response": {"allowed": True}}, "u", "v1beta1", mutating=False)["allowed"] is True


def test_denial_wording():
    e = denied("x.example.com", {"code": 200, "message": "no"})
    assert (e.code, e.message) == (400, 'admission webhook "x.example.com" denied the request: no')
    assert (
        denied("x", {"reason": "Forbidden", "code": 403}).message
        == 'admission webhook "x" denied the request: Forbidden'
    )
    assert denied("x", None).message == 'admission webhook "x" denied the request without explanation'


class _Client:
    """Records which webhooks would be called (the HTTP side is covered by the integration tests)."""

    def __init__(self):
        self.called = []

    async def call(self, hook, attrs, *, mutating):
        self.called.append(hook["name"])
        return {"allowed": True}


async def test_match_conditions_select_webhooks_and_errors_follow_failure_policy():
    from pykubeadm.apiserver.admission import recorder
    from pykubeadm.apiserver.admission.interfaces import AdmissionError
    from pykubeadm.apiserver.admission.webhook.plugin import VALIDATING_CONFIGS, ValidatingWebhooks
    from pykubeadm.apiserver.objects import DictObjectSource

    def hook(name, expression, failure="Fail"):
        return {"name": name, "rules": [rule(["pods"])], "failurePolicy": failure,
                "matchConditions": [{"name": "c", "expression": expression}]}  # fmt: skip

    src = DictObjectSource()
    src.put("namespaces", {"metadata": {"name": "ns"}})
    src.put(VALIDATING_CONFIGS, {"metadata": {"name": "cfg"}, "webhooks": [
        hook("yes", "request.userInfo.username == 'alice'"),
        hook("no", "object.metadata.name == 'other'"),
        hook("ignored-error", "object.spec.missing == 1", failure="Ignore"),
    ]})  # fmt: skip
    client = _Client()
    plugin = ValidatingWebhooks(src, client)  # type: ignore[arg-type]
    recorder.begin()
    await plugin.validate(attrs(obj={"metadata": {"name": "x"}, "spec": {}}))
    assert client.called == ["yes"]
    src.put(VALIDATING_CONFIGS, {"metadata": {"name": "cfg"}, "webhooks": [hook("broken", "object.spec.missing == 1")]})
    with pytest.raises(AdmissionError) as e:
        await plugin.validate(attrs(obj={"metadata": {"name": "x"}, "spec": {}}))
    assert e.value.message == (
        'Internal error occurred: failed calling webhook "broken": failed to evaluate match condition "c": '
        "no such key: missing"
    )


async def test_mutating_patches_apply_in_order_and_if_needed_webhooks_run_again():
    import base64
    import json

    from pykubeadm.apiserver.admission import recorder
    from pykubeadm.apiserver.admission.webhook.caller import CallError
    from pykubeadm.apiserver.admission.webhook.plugin import MUTATING_CONFIGS, MutatingWebhooks
    from pykubeadm.apiserver.objects import DictObjectSource

    def patch(ops):
        return {"allowed": True, "patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}

    class Client:
        def __init__(self):
            self.called = []

        async def call(self, hook, attrs, *, mutating):
            self.called.append(hook["name"])
            labels = attrs.obj["metadata"].get("labels") or {}
            if hook["name"] == "first":  # counts what it sees; asks to be re-run if someone changes the object later
                return patch([{"op": "add", "path": "/metadata/labels", "value": {**labels, "seen": str(len(labels))}}])
            if hook["name"] == "second":
                return patch([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}])
            raise CallError("failed to call webhook: down")

    def hook(name, **extra):
        return {"name": name, "rules": [rule(["pods"])], **extra}

    src = DictObjectSource()
    src.put("namespaces", {"metadata": {"name": "ns"}})
    src.put(MUTATING_CONFIGS, {"metadata": {"name": "cfg"}, "webhooks": [
        hook("first", reinvocationPolicy="IfNeeded"), hook("second"), hook("down", failurePolicy="Ignore"),
    ]})  # fmt: skip
    client = Client()
    plugin = MutatingWebhooks(src, client)  # type: ignore[arg-type]
    record = recorder.begin()
    a = attrs(obj={"metadata": {"name": "x"}, "spec": {}})
    await plugin.admit(a)
    assert client.called == ["first", "second", "down", "first"]
    assert a.obj["metadata"]["labels"] == {"seen": "2", "second": "yes"}
    assert record.annotations["failed-open.mutating.webhook.admission.k8s.io/round_0_index_2"] == "down"
    assert json.loads(record.annotations["mutation.webhook.admission.k8s.io/round_0_index_1"])["webhook"] == "second"
