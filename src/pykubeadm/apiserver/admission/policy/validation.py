"""Validation of the admission configuration kinds' CEL expressions at write time, as kube-apiserver refuses a
ValidatingAdmissionPolicy (or a webhook's matchConditions) whose expression does not compile:
`spec.validations[0].expression: Invalid value: "<expr>": compilation failed: ERROR: <input>:1:5: …`."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.admission.celrequest import admission_env
from pykubeadm.apiserver.status import Cause
from pykubeadm.cel import CompileError

__all__ = ["validate_policy", "validate_webhook_configuration"]

Obj = dict[str, Any]


def _compile(expression: Any, path: str, out: list[Cause]) -> None:
    if not isinstance(expression, str) or not expression.strip():
        out.append(Cause("FieldValueRequired", "Required value", path))
        return
    try:
        admission_env().compile(expression)
    except CompileError as e:
        shown = expression.replace("\\", "\\\\").replace('"', '\\"')
        out.append(Cause("FieldValueInvalid", f'Invalid value: "{shown}": {e}', path))


def validate_policy(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    out: list[Cause] = []
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        out.append(Cause("FieldValueRequired", "Required value: validations or auditAnnotations must contain at least one item", "spec.validations"))  # fmt: skip
    for field, key in (("matchConditions", "expression"), ("variables", "expression"), ("validations", "expression"),
                       ("auditAnnotations", "valueExpression")):  # fmt: skip
        for i, item in enumerate(spec.get(field) or []):
            item = item if isinstance(item, dict) else {}
            _compile(item.get(key), f"spec.{field}[{i}].{key}", out)
            if field == "validations" and item.get("messageExpression"):
                _compile(item["messageExpression"], f"spec.validations[{i}].messageExpression", out)
    return out


def validate_webhook_configuration(obj: Obj) -> list[Cause]:
    out: list[Cause] = []
    for i, hook in enumerate(obj.get("webhooks") or []):
        for j, cond in enumerate((hook or {}).get("matchConditions") or []):
            _compile((cond or {}).get("expression"), f"webhooks[{i}].matchConditions[{j}].expression", out)
    return out
