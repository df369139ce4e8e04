"""CRD validation rules (x-kubernetes-validations) through the real kubectl: a rule on a field, a root rule with
messageExpression, and a transition rule with oldSelf that only applies on update."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.rules.example.com}
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "!has(self.spec.maxReplicas) || self.spec.replicas <= self.spec.maxReplicas"
          messageExpression: "'replicas ' + string(self.spec.replicas) + ' exceed maxReplicas'"
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.replicas >= oldSelf.replicas", message: replicas may not decrease}
            properties:
              replicas: {type: integer}
              maxReplicas: {type: integer}
              name:
                type: string
                x-kubernetes-validations:
                - {rule: "self.startsWith('g-')", message: "must start with g-", reason: FieldValueForbidden}
"""


def gadget(name: str, replicas: int, *, max_replicas: int | None = None, gname: str = "g-one") -> str:
    extra = f", maxReplicas: {max_replicas}" if max_replicas is not None else ""
    return (
        "apiVersion: rules.example.com/v1\nkind: Gadget\n"
        f"metadata: {{name: {name}, namespace: default}}\nspec: {{replicas: {replicas}, name: {gname}{extra}}}\n"
    )


@pytest.fixture(scope="module")
def crd(api):
    api.kubectl("apply", "-f", "-", input=CRD)
    api.kubectl("wait", "--for=condition=Established", "crd/gadgets.rules.example.com", "--timeout=60s")
    api.kubectl("annotate", "crd", "gadgets.rules.example.com", "example.com/waited=yes", "--overwrite")
    return "gadgets.rules.example.com"


def test_field_and_root_rules_reject_an_invalid_object(api, crd):
    res = api.kubectl("apply", "-f", "-", input=gadget("bad", 5, max_replicas=3, gname="x-one"), check=False)
    assert res.returncode != 0
    assert 'The Gadget "bad" is invalid:' in res.stderr
    assert "spec.name: Forbidden: must start with g-" in res.stderr
    assert ': Invalid value: "object": replicas 5 exceed maxReplicas' in res.stderr


def test_transition_rule_applies_only_on_update(api, crd):
    # On create there is no oldSelf: the transition rule does not apply.
    api.kubectl("apply", "-f", "-", input=gadget("g1", 3))
    res = api.kubectl("apply", "-f", "-", input=gadget("g1", 2), check=False)
    assert res.returncode != 0
    assert 'The Gadget "g1" is invalid: spec: Invalid value: "object": replicas may not decrease' in res.stderr
    api.kubectl("apply", "-f", "-", input=gadget("g1", 4))
    got = api.kubectl("get", "gadget", "g1", "-o", "jsonpath={.spec.replicas}")
    assert got.stdout == "4"
