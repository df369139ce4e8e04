"""ServiceAccount strategy: the Name/Secrets/Age table; tokens are issued by the TokenRequest subresource."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import Obj, Strategy, name_age_columns, name_age_row

__all__ = ["ServiceAccountStrategy"]


class ServiceAccountStrategy(Strategy):
    top_fields = frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"})
    kind = "ServiceAccount"
    plural = "serviceaccounts"
    return_deleted_object = True
    short_names = ("sa",)

    def table_columns(self) -> list[Obj]:
        return name_age_columns(col("Secrets", "integer", "Secrets is the list of secrets allowed to be used by pods"))

    def table_row(self, obj: Obj) -> list[Any]:
        return name_age_row(obj, len(obj.get("secrets") or []))
