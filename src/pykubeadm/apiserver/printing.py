"""Server-side printing helpers for `Table` responses: HumanDuration ages, column definitions, timestamps.

Strategies declare their columns with `col()` and compute cells with these helpers; handlers/table.py builds the Table.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubeadm.util.apitime import now_time as now_rfc3339
from pykubeadm.util.apitime import parse_time

__all__ = ["age", "col", "human_duration", "now_rfc3339", "parse_time"]


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        rem = s % 60
        return f"{m}m{rem}s" if rem else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        rem = m % 60
        return f"{h}h{rem}m" if rem else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        rem = h % 24
        return f"{d}d{rem}h" if rem else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    if h < 24 * 365 * 8:
        rem = d % 365
        return f"{y}y{rem}d" if rem else f"{y}y"
    return f"{y}y"


def age(obj: dict[str, Any]) -> str:
    t = parse_time(obj.get("metadata", {}).get("creationTimestamp"))
    if t is None:
        return "<unknown>"
    return human_duration((dt.datetime.now(dt.UTC) - t).total_seconds())


def col(name: str, type_: str = "string", description: str = "", priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME_COL = col("Name", "string", "Name must be unique within a namespace.", fmt="name")
AGE_COL = col(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
)
