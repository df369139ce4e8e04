"""Lease strategy (coordination.k8s.io/v1): heartbeats and leader election; the Name/Holder/Age table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import Obj, Strategy, name_age_columns, name_age_row

__all__ = ["LeaseStrategy"]


class LeaseStrategy(Strategy):
    top_fields = frozenset({"spec"})
    kind = "Lease"
    plural = "leases"
    group = "coordination.k8s.io"

    def table_columns(self) -> list[Obj]:
        return name_age_columns(col("Holder", "string", "The holder of the lease"))

    def table_row(self, obj: Obj) -> list[Any]:
        return name_age_row(obj, (obj.get("spec") or {}).get("holderIdentity", "") or "<unknown>")
