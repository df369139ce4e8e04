"""Endpoints strategy (`/registry/services/endpoints`): the Name/Endpoints/Age table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import Obj, Strategy, name_age_columns, name_age_row

__all__ = ["EndpointsStrategy"]


class EndpointsStrategy(Strategy):
    top_fields = frozenset({"subsets"})
    kind = "Endpoints"
    plural = "endpoints"
    short_names = ("ep",)
    storage_prefix = "services/endpoints"

    @property
    def singular(self) -> str:
        return "endpoints"

    def table_columns(self) -> list[Obj]:
        return name_age_columns(col("Endpoints", "string", "Endpoints is the list of endpoints."))

    def table_row(self, obj: Obj) -> list[Any]:
        eps = []
        for sub in obj.get("subsets") or []:
            for a in sub.get("addresses") or []:
                for p in sub.get("ports") or [{}]:
                    eps.append(f"{a.get('ip')}:{p['port']}" if "port" in p else a.get("ip", ""))
        shown = ",".join(eps[:3]) + (f" + {len(eps) - 3} more..." if len(eps) > 3 else "")
        return name_age_row(obj, shown or "<none>")
