"""Event strategy (core v1 events): field selectors on the involved object, the LAST SEEN/TYPE/REASON/OBJECT table."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubeadm.apiserver.printing import col, human_duration, parse_time
from pykubeadm.apiserver.registry.base import Obj, Strategy

__all__ = ["EventStrategy"]


class EventStrategy(Strategy):
    top_fields = frozenset(
        {
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        }
    )
    kind = "Event"
    plural = "events"
    short_names = ("ev",)
    field_labels: tuple[str, ...] = (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    )

    def table_columns(self) -> list[Obj]:
        return [
            col("Last Seen", "string", "Time of the last occurrence."),
            col("Type", "string", "Type of this event."),
            col("Reason", "string", "Short, machine understandable string."),
            col("Object", "string", "The object that this event is about."),
            col("Message", "string", "A human-readable description of the status of this operation."),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        last = parse_time(obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp"))
        seen = human_duration((dt.datetime.now(dt.UTC) - last).total_seconds()) if last else "<unknown>"
        io = obj.get("involvedObject") or {}
        return [
            seen,
            obj.get("type", ""),
            obj.get("reason", ""),
            f"{str(io.get('kind', '')).lower()}/{io.get('name', '')}",
            obj.get("message", ""),
        ]
