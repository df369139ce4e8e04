"""Building blocks of the config API models: the msgspec base class, Go durations and times, strict decoding with
kubeadm's errors, and Go-style (omitempty) output.

Every model maps snake_case attributes to kubeadm's camelCase YAML names (explicit ones where Go capitalises an acronym,
e.g. `certSANs`) and serialises like Go's encoding/json would:

* a scalar/list/map field that is *not* Optional is a Go value with `omitempty`: left out when zero/empty;
* an Optional field is a Go pointer: left out only when None (so `imagePullSerial: false` is kept);
* a nested model that is not Optional is a Go struct: always written, `{}` when empty;
* fields named in `_keep` have no `omitempty` in Go and are always written (`taints: null`).

Decoding (`KubeModel.from_obj`) is strict, as kubeadm's is: every unknown field of a document is reported with its path,
a YAML null for a non-pointer field is its zero value (the default applies), durations are Go strings (`24h0m0s`) and
times RFC 3339; msgspec checks the types (no coercion: `bindPort: "6443"` is an error, as in Go) and builds the objects.
The models are msgspec Structs rather than pydantic models because a command that reads a config pays for them at
start-up: msgspec defines the ~40 classes in about a millisecond, pydantic spends ~0.1 s importing and building them.
"""

from __future__ import annotations

import copy
import re
import types
import typing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Self, TypeAlias

import msgspec

from pykubeadm.errors import FieldError
from pykubeadm.util.apitime import format_time
from pykubeadm.util.goduration import format_duration, parse_duration

__all__ = [
    "DecodeError",
    "Duration",
    "KubeModel",
    "Time",
    "field",
    "field_default",
    "field_names",
    "format_duration",
    "parse_duration",
    "to_obj",
]

#: A metav1.Duration: `timedelta` in Python, Go duration string in YAML/JSON.
Duration: TypeAlias = timedelta

#: A metav1.Time: aware `datetime`, RFC 3339 in YAML/JSON.
Time: TypeAlias = datetime

#: A field with a default factory and/or its YAML name (`field(default_factory=list, name="certSANs")`).
field = msgspec.field


class DecodeError(Exception):
    """A document that does not decode into its model: the unknown fields (paths) and the other field errors."""

    def __init__(self, unknown: list[str], errors: list[FieldError | str]):
        self.unknown = unknown
        self.errors = errors
        super().__init__("; ".join([*(f'unknown field "{u}"' for u in unknown), *(str(e) for e in errors)]))


# --- the base model ------------------------------------------------------------------------------------------------


class KubeModel(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Base of every config API type: camelCase YAML names, strict decoding via `from_obj`, Go-style output via
    `to_obj`. Defaults that depend on other fields are applied in `__post_init__` (run on construction and decoding)."""

    #: python names of fields without `omitempty` in Go (always serialised).
    _keep: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_obj(cls, data: Any) -> Self:
        """Decode a parsed YAML/JSON document (names as in YAML); raises DecodeError naming every bad field."""
        unknown: list[str] = []
        errors: list[FieldError | str] = []
        body = _normalise(cls, data, "", unknown, errors)
        if unknown or errors:
            raise DecodeError(unknown, errors)
        try:
            return msgspec.convert(body, cls, strict=True)
        except msgspec.ValidationError as e:
            raise DecodeError([], [_field_error(str(e), body)]) from None

    def to_obj(self) -> dict[str, Any]:
        """This object as kubeadm would marshal it (YAML names, omitempty rules, Go durations); keys unsorted."""
        return to_obj(self)

    def copy(self, deep: bool = True) -> Self:
        """A copy; deep by default, so changing the copy's nested objects leaves this one alone."""
        return copy.deepcopy(self) if deep else copy.copy(self)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str  # python attribute
    key: str  # YAML name
    optional: bool  # a Go pointer: None is written as absent, null decodes as None
    kind: str  # "model", "models" (a list of models), "duration", "time" or "value"
    model: type[KubeModel] | None
    default: Any  # msgspec.NODEFAULT where the field has a default factory
    factory: Any


_SCHEMAS: dict[type, dict[str, _Field]] = {}


def _schema(cls: type[KubeModel]) -> dict[str, _Field]:
    """YAML name → field, in declaration order (cached per class)."""
    schema = _SCHEMAS.get(cls)
    if schema is None:
        schema = {}
        for info in msgspec.structs.fields(cls):
            inner, optional = _unwrap_optional(info.type)
            kind, model = _kind_of(inner)
            schema[info.encode_name] = _Field(
                info.name, info.encode_name, optional, kind, model, info.default, info.default_factory
            )
        _SCHEMAS[cls] = schema
    return schema


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else tp), len(args) < len(typing.get_args(tp))
    return tp, False


def _kind_of(tp: Any) -> tuple[str, type[KubeModel] | None]:
    if isinstance(tp, type) and issubclass(tp, KubeModel):
        return "model", tp
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp)
        if isinstance(item, type) and issubclass(item, KubeModel):
            return "models", item
    if tp is timedelta:
        return "duration", None
    if tp is datetime:
        return "time", None
    return "value", None


def field_names(cls: type[KubeModel]) -> list[str]:
    """The python names of `cls`'s fields, in declaration order."""
    return [f.name for f in _schema(cls).values()]


def field_default(cls: type[KubeModel], name: str) -> Any:
    """The static default of field `name` of `cls` (a fresh value where the field has a default factory)."""
    for f in _schema(cls).values():
        if f.name == name:
            return f.factory() if f.default is msgspec.NODEFAULT else f.default
    raise KeyError(name)


# --- decoding ------------------------------------------------------------------------------------------------------


def _normalise(cls: type[KubeModel], data: Any, path: str, unknown: list[str], errors: list[FieldError | str]) -> Any:
    """`data` with unknown fields reported, nulls of non-pointer fields dropped and Go durations/times parsed, for
    msgspec to check and build; anything not a mapping is left for msgspec to reject with its type."""
    if not isinstance(data, dict):
        return data
    schema = _schema(cls)
    out: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        f = schema.get(key) if isinstance(key, str) else None
        if f is None:
            unknown.append(where)
            continue
        if value is None:
            if f.optional:
                out[key] = None
            continue
        if f.kind == "model":
            assert f.model is not None
            value = _normalise(f.model, value, where, unknown, errors)
        elif f.kind == "models" and isinstance(value, list):
            assert f.model is not None
            value = [_normalise(f.model, v, f"{where}[{i}]", unknown, errors) for i, v in enumerate(value)]
        elif f.kind == "duration":
            value = _duration(value, where, errors)
        elif f.kind == "time":
            value = _time(value, where, errors)
        out[key] = value
    return out


def _duration(value: Any, where: str, errors: list[FieldError | str]) -> Any:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as e:
            errors.append(FieldError(where, value, str(e)))
            return None
    errors.append(
        FieldError(
            where,
            value,
            f"json: cannot unmarshal {type(value).__name__} into Go value of type string (a duration like 24h0m0s)",
        )
    )
    return None


def _time(value: Any, where: str, errors: list[FieldError | str]) -> Any:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            errors.append(FieldError(where, value, "not an RFC 3339 time (like 2006-01-02T15:04:05Z)"))
            return None
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")


def _field_error(message: str, body: Any) -> FieldError | str:
    """A msgspec error ("Expected `int`, got `str` - at `$.localAPIEndpoint.bindPort`") as a field error. A bad value
    in a map (`$.featureGates[...]`, msgspec does not name the key) is reported on the map."""
    m = _AT.search(message)
    if m is None:
        return message.replace("`", "")
    value: Any = body
    path = ""
    for key, index, in_map in _PATH_PART.findall(m.group("path")):
        if in_map:
            break
        try:
            value = value[int(index)] if index else value[key]
        except (KeyError, IndexError, TypeError):
            value = None
            break
        path += f"[{index}]" if index else (f".{key}" if path else key)
    return FieldError(path, value, message[: m.start()].replace("`", ""))


# --- encoding ------------------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, KubeModel):
        return to_obj(value)
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
    for f in _schema(type(model)).values():
        value = getattr(model, f.name)
        if f.name not in keep:
            if value is None:
                continue
            if not isinstance(value, KubeModel) and not f.optional:
                if isinstance(value, timedelta):
                    if value == timedelta(0):
                        continue
                elif not value:
                    continue
        out[f.key] = _plain(value)
    return out
