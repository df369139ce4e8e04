"""ValidatingAdmissionPolicy through the real kubectl: the issue's replicas policy denied with kube's wording, a
ConfigMap param with Warn + Deny and messageExpression, parameterNotFoundAction, an evaluation error under
failurePolicy Fail and Ignore, and the Audit action's annotation in the audit log."""

import json
import time

import pytest
from tests.integration.apiserver.waiting import eventually

pytestmark = pytest.mark.integration

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, labels: {{tier: {tier}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
"""


def apply(api, obj, **kw):
    return api.kubectl("apply", "-f", "-", input=json.dumps(obj), **kw)


def policy(name, validations, *, param_kind=None, failure="Fail", resources=("deployments",), variables=None):
    spec = {
        "failurePolicy": failure,
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": list(resources),
                }
            ]
        },
        "validations": validations,
    }
    if param_kind:
        spec["paramKind"] = param_kind
    if variables:
        spec["variables"] = variables
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def binding(name, policy_name, actions, *, ns, param_ref=None):
    spec = {
        "policyName": policy_name,
        "validationActions": actions,
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
    }
    if param_ref:
        spec["paramRef"] = param_ref
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def deploy(api, ns, name, replicas, tier="web"):
    return api.kubectl("apply", "-n", ns, "-f", "-", check=False,
                       input=DEPLOY.format(name=name, replicas=replicas, tier=tier))  # fmt: skip


def test_replicas_policy_denies_with_kubes_message(api, kubectl_available):
    api.kubectl("create", "namespace", "vap-deny")
    apply(api, policy("max-replicas", [{"expression": "object.spec.replicas <= 2"}]))
    apply(api, binding("max-replicas-binding", "max-replicas", ["Deny"], ns="vap-deny"))
    eventually(lambda: deploy(api, "vap-deny", f"probe-{time.monotonic_ns()}", 5).returncode != 0, what="the policy")
    res = deploy(api, "vap-deny", "big", 5)
    # kubectl's rendering of kube's Invalid status whose only cause has no field.
    assert res.stderr == (
        "The deployments \"big\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with binding "
        "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 2\n"
    )
    assert deploy(api, "vap-deny", "small", 2).returncode == 0


def test_configmap_params_with_warn_and_deny(api, kubectl_available):
    api.kubectl("create", "namespace", "vap-params")
    api.kubectl("create", "configmap", "limits", "-n", "vap-params", "--from-literal=max=3", "--from-literal=warnAt=2")
    apply(api, policy(
        "replica-limits",
        [{"expression": "object.spec.replicas <= int(params.data.max)",
          "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed the limit ' + params.data.max",
          "reason": "Forbidden"}],
        param_kind={"apiVersion": "v1", "kind": "ConfigMap"},
    ))  # fmt: skip
    apply(api, policy(
        "replica-warning",
        [{"expression": "variables.replicas <= int(params.data.warnAt)", "message": "more replicas than advised"}],
        param_kind={"apiVersion": "v1", "kind": "ConfigMap"},
        variables=[{"name": "replicas", "expression": "object.spec.replicas"}],
    ))  # fmt: skip
    ref = {"name": "limits", "parameterNotFoundAction": "Deny"}
    apply(api, binding("replica-limits", "replica-limits", ["Deny"], ns="vap-params", param_ref=ref))
    apply(api, binding("replica-warning", "replica-warning", ["Warn"], ns="vap-params", param_ref=ref))
    eventually(lambda: deploy(api, "vap-params", f"p-{time.monotonic_ns()}", 9).returncode != 0, what="the policy")
    res = deploy(api, "vap-params", "four", 4)
    assert "Error from server (Forbidden)" in res.stderr
    assert (
        "ValidatingAdmissionPolicy 'replica-limits' with binding 'replica-limits' denied request: replicas 4 exceed "
        "the limit 3"
    ) in res.stderr
    res = deploy(api, "vap-params", "three", 3)
    assert res.returncode == 0
    assert (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-warning' with binding 'replica-warning': "
        "more replicas than advised"
    ) in res.stderr
    # The param gone: parameterNotFoundAction Deny refuses.
    api.kubectl("delete", "configmap", "limits", "-n", "vap-params")
    eventually(lambda: "no params found" in deploy(api, "vap-params", f"q-{time.monotonic_ns()}", 1).stderr,
               what="the missing param to deny")  # fmt: skip


def test_failure_policy_on_an_evaluation_error_and_audit(api, kubectl_available):
    api.kubectl("create", "namespace", "vap-errors")
    apply(api, policy("needs-label", [{"expression": "object.metadata.labels.owner == 'me'"}]))
    apply(api, policy("needs-note-lenient", [{"expression": "object.metadata.annotations.note == 'x'"}],
                      failure="Ignore"))  # fmt: skip
    apply(api, binding("needs-label", "needs-label", ["Audit"], ns="vap-errors"))
    apply(api, binding("needs-note-lenient", "needs-note-lenient", ["Deny"], ns="vap-errors"))
    eventually(lambda: deploy(api, "vap-errors", f"p-{time.monotonic_ns()}", 1).returncode != 0, what="the policy")
    res = deploy(api, "vap-errors", "unlabelled", 1)
    assert (
        "ValidatingAdmissionPolicy 'needs-label' with binding 'needs-label' denied request: expression "
        "'object.metadata.labels.owner == 'me'' resulted in error: no such key: owner"
    ) in res.stderr
    # With the label there, the Audit action records the failed validation instead of refusing, and the lenient
    # policy's error (no annotations) is ignored.
    res = api.kubectl("apply", "-n", "vap-errors", "-f", "-", input=DEPLOY.replace("tier: {tier}", "owner: you").format(
        name="audited", replicas=1))  # fmt: skip
    assert res.returncode == 0

    def annotated() -> list[str]:
        events = [json.loads(line) for line in api.audit_log.read_text().splitlines() if line.strip()]
        return [
            e["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            for e in events
            if (e.get("objectRef") or {}).get("namespace") == "vap-errors"
            and "validation.policy.admission.k8s.io/validation_failure" in (e.get("annotations") or {})
        ]

    # The ResponseComplete event is written once the response has gone out, as kube-apiserver's is: wait for it.
    eventually(lambda: bool(annotated()), what="the audit event of the Audit action")
    assert json.loads(annotated()[-1])[0]["policy"] == "needs-label"


def test_a_policy_whose_expression_does_not_compile_is_refused(api, kubectl_available):
    res = apply(api, policy("broken", [{"expression": "object.spec.replicas <="}]), check=False)
    assert res.returncode != 0
    assert (
        'The ValidatingAdmissionPolicy "broken" is invalid: spec.validations[0].expression: Invalid value: '
        '"object.spec.replicas <=": compilation failed: ERROR: <input>:1:'
    ) in res.stderr
    assert "Syntax error: mismatched input '<EOF>'" in res.stderr
