"""CRD validation rules (`x-kubernetes-validations`), evaluated with the CEL engine as kube-apiextensions does.

Each rule sees `self` (the value at the schema node that declares it) and, on update, `oldSelf` (the stored value at
the same path, followed through properties and map keys). A transition rule (one that uses `oldSelf`) is evaluated
only on an update where the old value exists. A failed rule is a cause on the node's path (plus `fieldPath`) worded
`Invalid value: "<type>": <message>`, the message from `messageExpression`, `message`, or `failed rule: <rule>`;
`reason` picks the cause type.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pykubeadm.apiserver.crd.schema import property_schema
from pykubeadm.apiserver.status import Cause
from pykubeadm.cel import CompileError, Environment, EvalError

__all__ = ["validate_rules"]

Obj = dict[str, Any]
_MISSING = object()
_OLD_SELF = re.compile(r"\boldSelf\b")
_REASONS = {
    "FieldValueInvalid": "FieldValueInvalid",
    "FieldValueForbidden": "FieldValueForbidden",
    "FieldValueRequired": "FieldValueRequired",
    "FieldValueDuplicate": "FieldValueDuplicate",
}


@functools.cache
def _env() -> Environment:
    return Environment(("self", "oldSelf"))


def _type_word(schema: Obj) -> str:
    return str(schema.get("type") or "object")


def _rule_causes(value: Any, old: Any, schema: Obj, path: str) -> list[Cause]:
    out: list[Cause] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        text = str(rule.get("rule") or "")
        transition = bool(_OLD_SELF.search(text))
        if transition and old is _MISSING:
            continue
        data = {"self": value, "oldSelf": None if old is _MISSING else old}
        field = path
        if rule.get("fieldPath"):
            fp = str(rule["fieldPath"])
            field = f"{path}{fp}" if path else fp.lstrip(".")
        reason = _REASONS.get(str(rule.get("reason") or ""), "FieldValueInvalid")
        try:
            ok = _env().compile(text).evaluate(data) is True
        except CompileError as e:
            out.append(Cause("FieldValueInvalid", f'Invalid value: "{_type_word(schema)}": {e}', field))
            continue
        except EvalError as e:
            out.append(Cause("FieldValueInvalid", f'Invalid value: "{_type_word(schema)}": {e}', field))
            continue
        if ok:
            continue
        message = ""
        if rule.get("messageExpression"):
            try:
                result = _env().compile(str(rule["messageExpression"])).evaluate(data)
                message = result.strip() if isinstance(result, str) and "\n" not in result else ""
            except (CompileError, EvalError):
                message = ""
        message = message or str(rule.get("message") or "").strip() or f"failed rule: {text.strip()}"
        if reason == "FieldValueRequired":
            out.append(Cause(reason, f"Required value: {message}", field))
        elif reason == "FieldValueForbidden":
            out.append(Cause(reason, f"Forbidden: {message}", field))
        else:
            out.append(Cause(reason, f'Invalid value: "{_type_word(schema)}": {message}', field))
    return out


def _walk(value: Any, old: Any, schema: Obj, path: str, out: list[Cause]) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            sub = property_schema(schema, key)
            if sub is not None:
                old_child = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _walk(child, old_child, sub, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(item, _MISSING, schema["items"], f"{path}[{i}]", out)
    out.extend(_rule_causes(value, old, schema, path))


def validate_rules(value: Obj, old: Obj | None, schema: Obj) -> list[Cause]:
    """Every failed `x-kubernetes-validations` rule of `value` (with `old` on update) against `schema`."""
    out: list[Cause] = []
    _walk(value, _MISSING if old is None else old, schema, "", out)
    return out
