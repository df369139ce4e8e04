"""Decode Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`, sent by kubectl 1.32/1.33) into
the JSON form, on the `protobuf` runtime: message classes are built at import time from `schema.MESSAGES`.

Envelope: the magic `k8s\\x00`, then `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`; `raw` is the object.
Conversion follows JSON `omitempty`: empty strings and empty Times are dropped, Times become RFC 3339, bytes base64,
IntOrString an int or a string, Quantity its string, maps dicts. The server always answers in JSON.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.proto.schema import KINDS, MESSAGES, POINTER_BOOLS, ZERO_MEANS_ABSENT

__all__ = ["MAGIC", "decode_protobuf"]

MAGIC = b"k8s\x00"
_PKG = "pykubeadm.k8s"
_SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
}
_F = descriptor_pb2.FieldDescriptorProto


def _set_type(fd: descriptor_pb2.FieldDescriptorProto, type_: str) -> None:
    if type_ in _SCALARS:
        fd.type = _SCALARS[type_]
    else:
        fd.type = _F.TYPE_MESSAGE
        fd.type_name = f".{_PKG}.{type_}"


def _build() -> dict[str, type[Message]]:
    fdp = descriptor_pb2.FileDescriptorProto(name="pykubeadm_k8s.proto", package=_PKG, syntax="proto2")
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        for number, json_name, type_ in fields:
            fd = msg.field.add(name=json_name, number=number, json_name=json_name)
            if type_.startswith("map:"):
                entry_name = json_name[0].upper() + json_name[1:] + "Entry"
                entry = msg.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, label=_F.LABEL_OPTIONAL, type=_F.TYPE_STRING)
                value = entry.field.add(name="value", number=2, label=_F.LABEL_OPTIONAL)
                _set_type(value, type_[4:])
                fd.label = _F.LABEL_REPEATED
                fd.type = _F.TYPE_MESSAGE
                fd.type_name = f".{_PKG}.{name}.{entry_name}"
            elif type_.startswith("repeated:"):
                fd.label = _F.LABEL_REPEATED
                _set_type(fd, type_[9:])
            else:
                fd.label = _F.LABEL_OPTIONAL
                _set_type(fd, type_)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PKG}.{name}")) for name in MESSAGES}


_CLASSES = _build()


def _field(m: Message, name: str) -> Any:
    """Field `name` of a message of a class built at run time (its fields are unknown to the type checker)."""
    return getattr(m, name)


def _time(m: Message, micro: bool) -> str | None:
    seconds, nanos = getattr(m, "seconds", 0), getattr(m, "nanos", 0)
    if not seconds and not nanos:
        return None
    t = dt.datetime.fromtimestamp(seconds, dt.UTC) + dt.timedelta(microseconds=nanos // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _value(v: Any, type_name: str) -> Any:
    if isinstance(v, Message):
        name = v.DESCRIPTOR.name
        if name in ("Time", "MicroTime"):
            return _time(v, name == "MicroTime")
        if name == "IntOrString":
            return _field(v, "strVal") if _field(v, "type") == 1 else _field(v, "intVal")
        if name == "Quantity":
            return _field(v, "string")
        if name == "RawExtension":
            import json

            raw = _field(v, "raw")
            return json.loads(raw) if raw else None
        if name == "FieldsV1":
            import json

            raw = _field(v, "Raw")
            return json.loads(raw) if raw else {}
        if name == "ExtraValue":
            return list(_field(v, "items"))
        return to_dict(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


def _repeated(fd: Any) -> bool:
    is_repeated = getattr(fd, "is_repeated", None)
    if is_repeated is not None:
        return bool(is_repeated)
    return fd.label == fd.LABEL_REPEATED


def to_dict(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mname = m.DESCRIPTOR.name
    for fd, value in m.ListFields():
        key = fd.json_name or fd.name
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[key] = {k: _value(value[k], vfd.message_type.name if vfd.message_type else "") for k in value}
        elif _repeated(fd):
            out[key] = [_value(x, "") for x in value]
        else:
            conv = _value(value, "")
            if conv is None or conv == "":
                continue
            if conv is False and (mname, key) not in POINTER_BOOLS:
                continue
            if conv == 0 and not isinstance(conv, bool) and (mname, key) in ZERO_MEANS_ABSENT:
                continue
            out[key] = conv
    return out


def decode_protobuf(data: bytes) -> dict[str, Any]:
    """The JSON dict of a `k8s\\0`-framed protobuf object; 415 for unknown kinds, 400 for malformed bytes."""
    if not data.startswith(MAGIC):
        raise st.bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        env = _CLASSES["Unknown"].FromString(data[len(MAGIC) :])
    except DecodeError as e:
        raise st.bad_request(f"unable to decode the protobuf envelope: {e}") from None
    type_meta = _field(env, "typeMeta")
    kind, api_version = type_meta.kind, type_meta.apiVersion
    msg_name = KINDS.get(f"{api_version}/{kind}") or KINDS.get(kind)
    if msg_name is None:
        raise st.unsupported_media_type("application/vnd.kubernetes.protobuf", ["application/json", "application/yaml"])
    try:
        obj = to_dict(_CLASSES[msg_name].FromString(_field(env, "raw")))
    except DecodeError as e:
        raise st.bad_request(f"unable to decode {kind}: {e}") from None
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version} if kind != "DeleteOptions" else {}
    out.update(obj)
    return out
