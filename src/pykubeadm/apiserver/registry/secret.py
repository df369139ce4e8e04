"""Secret strategy: default type Opaque, stringData folded into data, base64 values, `immutable`, never echoed in errors."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, name_age_columns, name_age_row
from pykubeadm.apiserver.registry.configmap import immutable_rules, validate_data_keys
from pykubeadm.apiserver.status import Cause

__all__ = ["SecretStrategy"]


class SecretStrategy(Strategy):
    top_fields = frozenset({"data", "stringData", "type", "immutable"})
    kind = "Secret"
    plural = "secrets"
    field_labels: tuple[str, ...] = ("type",)

    def _fold(self, obj: Obj) -> None:
        sd = obj.pop("stringData", None)
        if isinstance(sd, dict) and sd:
            data = obj.get("data") or {}
            for k, v in sd.items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        if not obj["type"]:
            obj["type"] = "Opaque"

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        self._fold(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        self._fold(obj)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        causes = validate_data_keys(obj, ("data",))
        data = obj.get("data")
        if isinstance(data, dict):
            for k, v in data.items():
                try:
                    if not isinstance(v, str):
                        raise TypeError
                    base64.b64decode(v, validate=True)
                except (binascii.Error, TypeError, ValueError):
                    # The value is secret material: never echo it.
                    causes.append(
                        Cause(
                            "FieldValueInvalid", "Invalid value: <value omitted>: must be base64-encoded", f"data[{k}]"
                        )
                    )
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx) + immutable_rules(obj, old, ("data",))
        if obj.get("type") != old.get("type"):
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{obj.get("type")}": field is immutable', "type"))
        return causes

    def table_columns(self) -> list[Obj]:
        return name_age_columns(
            col("Type", "string", "The type of the secret"),
            col("Data", "integer", "The number of entries in the secret"),
        )

    def table_row(self, obj: Obj) -> list[Any]:
        return name_age_row(obj, obj.get("type", ""), len(obj.get("data") or {}))
