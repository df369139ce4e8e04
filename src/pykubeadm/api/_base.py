"""Building blocks of the config API models: the pydantic base class, Go durations and Go-style (omitempty) output.

Every model maps snake_case attributes to kubeadm's camelCase YAML names (aliases; explicit ones where Go capitalises
an acronym, e.g. `certSANs`), rejects unknown fields, and serialises like Go's encoding/json would:

* a scalar/list/map field that is *not* Optional is a Go value with `omitempty`: left out when zero/empty;
* an Optional field is a Go pointer: left out only when None (so `imagePullSerial: false` is kept);
* a nested model that is not Optional is a Go struct: always written, `{}` when empty;
* fields named in `_keep` have no `omitempty` in Go and are always written (`taints: null`).
"""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, model_validator
from pydantic.alias_generators import to_camel

from pykubeadm.util.apitime import format_time
from pykubeadm.util.goduration import format_duration, parse_duration

__all__ = [
    "Duration",
    "KubeModel",
    "Time",
    "format_duration",
    "parse_duration",
    "to_obj",
]


def _to_duration(v: Any) -> Any:
    if isinstance(v, timedelta) or v is None:
        return v
    if isinstance(v, str):
        return parse_duration(v)
    raise ValueError(
        f"json: cannot unmarshal {type(v).__name__} into Go value of type string (a duration like 24h0m0s)"
    )


#: A metav1.Duration: `timedelta` in Python, Go duration string in YAML/JSON.
Duration = Annotated[timedelta, BeforeValidator(_to_duration), PlainSerializer(format_duration, when_used="json")]


def _to_time(v: Any) -> Any:
    if isinstance(v, str):
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    if isinstance(v, datetime) and v.tzinfo is None:
        return v.replace(tzinfo=UTC)
    return v


#: A metav1.Time: aware `datetime`, RFC 3339 in YAML/JSON.
Time = Annotated[datetime, BeforeValidator(_to_time), PlainSerializer(format_time, when_used="json")]


# --- the base model ------------------------------------------------------------------------------------------------


def _is_optional(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_optional(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return type(None) in typing.get_args(annotation)
    return False


class KubeModel(BaseModel):
    """Base of every config API type: camelCase aliases, unknown fields rejected, Go-style output via `to_obj`."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        arbitrary_types_allowed=False,
    )

    #: python names of fields without `omitempty` in Go (always serialised).
    _keep: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_zero(cls, data: Any) -> Any:
        """A YAML `null` for a non-pointer Go field decodes to its zero value: drop it so the default applies."""
        if not isinstance(data, dict):
            return data
        drop = []
        for key, value in data.items():
            if value is not None or not isinstance(key, str):  # a non-string key names no field
                continue
            name = _alias_to_name(cls).get(key, key)
            field = cls.model_fields.get(name)
            if field is not None and not _is_optional(field.annotation):
                drop.append(key)
        if drop:
            data = {k: v for k, v in data.items() if k not in drop}
        return data

    def to_obj(self) -> dict[str, Any]:
        """This object as kubeadm would marshal it (aliases, omitempty rules, Go durations); keys unsorted."""
        return to_obj(self)


_ALIAS_CACHE: dict[type, dict[str, str]] = {}


def _alias_to_name(cls: type[BaseModel]) -> dict[str, str]:
    cached = _ALIAS_CACHE.get(cls)
    if cached is None:
        cached = {(f.alias or n): n for n, f in cls.model_fields.items()}
        _ALIAS_CACHE[cls] = cached
    return cached


def _plain(value: Any) -> Any:
    if isinstance(value, KubeModel):
        return to_obj(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, datetime):
        return format_time(value)
    return value


def to_obj(model: KubeModel) -> dict[str, Any]:
    """Serialise `model` the way Go's encoding/json would (see the module docstring)."""
    out: dict[str, Any] = {}
    keep = model._keep
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        key = field.alias or name
        if name not in keep:
            if value is None:
                continue
            if not isinstance(value, BaseModel) and not _is_optional(field.annotation):
                if isinstance(value, timedelta):
                    if value == timedelta(0):
                        continue
                elif not value:
                    continue
        out[key] = _plain(value)
    return out
