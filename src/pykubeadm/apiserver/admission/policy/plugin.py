"""The ValidatingAdmissionPolicy plugin (admissionregistration.k8s.io/v1, GA in v1.30).

Every binding whose policy matches the request (the policy's `matchConstraints`, then the binding's
`matchResources`) is evaluated once per param object (`paramKind` + the binding's `paramRef` by name or selector,
`parameterNotFoundAction`): `matchConditions` (all true, or the binding is skipped), `variables` (in order, as
`variables.<name>`), then each validation. A false validation acts per the binding's `validationActions`: Deny
(`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: <message>`,
with the validation's reason and its HTTP code), Warn (a `Warning` header) and Audit (the
`validation.policy.admission.k8s.io/validation_failure` audit annotation). Expression errors follow the policy's
`failurePolicy` (Fail by default). Policies and bindings are read from the watch-fed object cache.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.admission.celrequest import activation, admission_env
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.admission.webhook import rules
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.cel import Activation, CompileError, EvalError
from pykubeadm.controllers.controllerutil import selector_matches

__all__ = ["BINDINGS", "POLICIES", "ValidatingAdmissionPolicy", "kinds_from_registry"]

Obj = dict[str, Any]
POLICIES = "validatingadmissionpolicies.admissionregistration.k8s.io"
BINDINGS = "validatingadmissionpolicybindings.admissionregistration.k8s.io"
_CODES = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


class _ExprError(Exception):
    """An expression failed; the message is what kube puts after `denied request: `."""


@dataclass
class _Denial:
    message: str
    reason: str


def _eval(expression: str, data: Obj | Activation) -> Any:
    try:
        return admission_env().compile(expression).evaluate(data)
    except CompileError as e:
        raise _ExprError(f"expression '{expression}' resulted in error: {e}") from None
    except EvalError as e:
        raise _ExprError(f"expression '{expression}' resulted in error: {e}") from None


def _matches_resources(match: Obj | None, attrs: AdmissionAttributes, ns_labels: dict[str, str] | None) -> bool:
    """A MatchResources: resourceRules (with resourceNames), excludeResourceRules and the selectors."""
    if not match:
        return True
    rule_list = match.get("resourceRules")

    def named(rule: Obj) -> bool:
        names = rule.get("resourceNames") or []
        return rules.matches_rules([rule], attrs) and (not names or attrs.name in names)

    if rule_list is not None and not any(named(r) for r in rule_list):
        return False
    if any(named(r) for r in match.get("excludeResourceRules") or []):
        return False
    selector = match.get("namespaceSelector")
    if ns_labels is not None and selector and not selector_matches(selector, ns_labels):
        return False
    return rules.matches_object_selector(match.get("objectSelector"), attrs)


class ValidatingAdmissionPolicy:
    name = "ValidatingAdmissionPolicy"

    def __init__(self, source: ObjectSource, kinds: dict[tuple[str, str], tuple[str, bool]] | None = None):
        """`kinds`: (apiVersion, kind) → (ObjectSource resource name, namespaced), to fetch a policy's params."""
        self._source = source
        self._kinds = kinds or {}

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if rules.exempt(attrs):
            return
        bindings = await self._source.list(BINDINGS)
        if not bindings:
            return
        policies = {(p.get("metadata") or {}).get("name"): p for p in await self._source.list(POLICIES)}
        ns_obj: Obj | None = None
        ns_labels: dict[str, str] | None = None
        applies, is_namespace = rules.namespace_selector_applies(attrs)
        if applies:
            ns_obj = attrs.obj if is_namespace else await self._source.get("namespaces", "", attrs.namespace)
            ns_labels = rules.labels_of(ns_obj)
        denials: list[_Denial] = []
        failures: list[Obj] = []
        for binding in sorted(bindings, key=lambda b: (b.get("metadata") or {}).get("name", "")):
            bspec = binding.get("spec") or {}
            policy = policies.get(bspec.get("policyName"))
            if policy is None:
                continue
            pspec = policy.get("spec") or {}
            if not _matches_resources(pspec.get("matchConstraints") or {}, attrs, ns_labels):
                continue
            if not _matches_resources(bspec.get("matchResources"), attrs, ns_labels):
                continue
            await self._run(attrs, policy, binding, ns_obj, denials, failures)
        if failures:
            recorder.annotate("validation.policy.admission.k8s.io/validation_failure", json.dumps(failures[:50]))
        if denials:
            d = denials[0]
            err = forbidden(attrs, d.message, causes=[{"message": d.message}])
            err.reason, err.code = d.reason, _CODES.get(d.reason, 422)
            raise err

    async def _params(self, policy: Obj, binding: Obj, attrs: AdmissionAttributes) -> list[Obj | None]:
        kind = (policy.get("spec") or {}).get("paramKind")
        ref = (binding.get("spec") or {}).get("paramRef")
        if not kind:
            return [None]
        if not ref:
            raise _ExprError("failed to configure binding: paramRef is required when paramKind is set")
        resource, namespaced = self._kinds.get((kind.get("apiVersion", ""), kind.get("kind", "")), ("", False))
        if not resource:
            raise _ExprError(f"failed to configure binding: paramKind kind `{kind.get('kind')}` not known")
        namespace = ""
        if namespaced:
            namespace = ref.get("namespace") or attrs.namespace
            if not namespace:
                raise _ExprError(
                    "failed to configure binding: cannot use namespaced paramRef in policy binding that matches "
                    "cluster-scoped resources"
                )
        if ref.get("name"):
            found = await self._source.get(resource, namespace, ref["name"])
            params = [found] if found is not None else []
        else:
            params = [
                p
                for p in await self._source.list(resource, namespace if namespaced else None)
                if selector_matches(ref.get("selector") or {}, rules.labels_of(p))
            ]
        if not params:
            if ref.get("parameterNotFoundAction") == "Deny":
                raise _ExprError(
                    "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
                )
            return []
        return list(params)

    async def _run(
        self,
        attrs: AdmissionAttributes,
        policy: Obj,
        binding: Obj,
        ns_obj: Obj | None,
        denials: list[_Denial],
        failures: list[Obj],
    ) -> None:
        pname = (policy.get("metadata") or {}).get("name", "")
        bname = (binding.get("metadata") or {}).get("name", "")
        pspec = policy.get("spec") or {}
        actions = list((binding.get("spec") or {}).get("validationActions") or [])
        prefix = f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request: "

        def fail(message: str) -> None:
            if pspec.get("failurePolicy") == "Ignore":
                return
            denials.append(_Denial(prefix + message, "Invalid"))

        try:
            params_list = await self._params(policy, binding, attrs)
        except _ExprError as e:
            fail(str(e))
            return
        env = admission_env()
        for params in params_list:
            data = activation(attrs, params, ns_obj)
            try:
                bound = env.activation(data)  # converted once for every expression below
                if not all(_eval(c.get("expression", ""), bound) is True for c in pspec.get("matchConditions") or []):
                    continue
                variables: Obj = {}
                for v in pspec.get("variables") or []:
                    # A failed variable is left out: the expression that uses it fails, as with kube's lazy variables.
                    with contextlib.suppress(_ExprError):
                        variables[v.get("name", "")] = _eval(v.get("expression", ""), {**data, "variables": variables})
                if variables:
                    bound = env.activation({**data, "variables": variables})
            except (_ExprError, EvalError) as e:
                fail(str(e))
                continue
            for index, validation in enumerate(pspec.get("validations") or []):
                expression = validation.get("expression", "")
                try:
                    ok = _eval(expression, bound) is True
                except _ExprError as e:
                    fail(str(e))
                    continue
                if ok:
                    continue
                message = ""
                if validation.get("messageExpression"):
                    try:
                        value = _eval(validation["messageExpression"], bound)
                        if isinstance(value, str) and "\n" not in value:
                            message = value.strip()
                    except _ExprError:
                        message = ""
                message = (
                    message or (validation.get("message") or "").strip() or f"failed expression: {expression.strip()}"
                )
                reason = validation.get("reason") or "Invalid"
                if "Deny" in actions:
                    denials.append(_Denial(prefix + message, reason))
                if "Warn" in actions:
                    recorder.warn(
                        f"Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {message}"
                    )
                if "Audit" in actions:
                    failures.append({"message": message, "policy": pname, "binding": bname, "expressionIndex": index,
                                     "validationActions": actions})  # fmt: skip
            for annotation in pspec.get("auditAnnotations") or []:
                try:
                    value = _eval(annotation.get("valueExpression", ""), bound)
                except _ExprError as e:
                    fail(str(e))
                    continue
                if isinstance(value, str):
                    recorder.annotate(f"{pname}/{annotation.get('key', '')}", value)


def kinds_from_registry() -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) → (resource name, namespaced) for every built-in kind, for params."""
    from pykubeadm.apiserver.registry import STRATEGIES

    out: dict[tuple[str, str], tuple[str, bool]] = {}
    for s in STRATEGIES:
        out[(s.api_version, s.kind)] = (s.resource_name, s.namespaced)
    return out
