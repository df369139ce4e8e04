"""ConfigMap strategy: data/binaryData keys, `immutable`, the Name/Data/Age table."""

from __future__ import annotations

import re
from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import (
    Obj,
    RequestContext,
    Strategy,
    field_invalid,
    name_age_columns,
    name_age_row,
)
from pykubeadm.apiserver.status import Cause

__all__ = ["ConfigMapStrategy", "immutable_rules", "validate_data_keys"]

_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def validate_data_keys(obj: Obj, fields: tuple[str, ...]) -> list[Cause]:
    causes = []
    for f in fields:
        data = obj.get(f)
        if data is None:
            continue
        if not isinstance(data, dict):
            causes.append(field_invalid(f, "", "must be a map"))
            continue
        for k in data:
            if not _KEY.match(k) or len(k) > 253 or k in (".", ".."):
                causes.append(
                    field_invalid(
                        f"{f}[{k}]",
                        k,
                        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                    )
                )
    return causes


def immutable_rules(obj: Obj, old: Obj, fields: tuple[str, ...]) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = []
    if not obj.get("immutable"):
        causes.append(
            Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "immutable")
        )
    for f in fields:
        if (obj.get(f) or {}) != (old.get(f) or {}):
            causes.append(Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", f))
    return causes


class ConfigMapStrategy(Strategy):
    top_fields = frozenset({"data", "binaryData", "immutable"})
    kind = "ConfigMap"
    plural = "configmaps"
    short_names = ("cm",)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        causes = validate_data_keys(obj, ("data", "binaryData"))
        for k, v in (obj.get("data") or {}).items() if isinstance(obj.get("data"), dict) else []:
            if not isinstance(v, str):
                causes.append(field_invalid(f"data[{k}]", v, "must be a string"))
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return self.validate(obj, ctx) + immutable_rules(obj, old, ("data", "binaryData"))

    def table_columns(self) -> list[Obj]:
        return name_age_columns(col("Data", "integer", "Data contains the configuration data."))

    def table_row(self, obj: Obj) -> list[Any]:
        return name_age_row(obj, len(obj.get("data") or {}) + len(obj.get("binaryData") or {}))
