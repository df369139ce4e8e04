"""The protobuf form of /openapi/v2: the swagger 2.0 JSON document turned into gnostic's `openapi.v2.Document` the way
kube-openapi does (gnostic's ParseDocument, then proto.Marshal), and `V2Cache`, which keeps the encoded bytes and the
document's ETag per JSON document; used by openapi/handler.py.

Conversion rules (gnostic's compiler): JSON objects map to messages by camel-cased field name (`$ref` is `_ref`);
`x-…` keys become `vendor_extension` entries whose `Any.yaml` holds the value as YAML; `default`, `example` and
`enum` values are `Any` the same way (gnostic writes block-style YAML, we write flow style, i.e. JSON text: the same
values for every YAML reader); maps (definitions, properties, paths, responses, …) become ordered `Named…` pairs; a
schema's `type` is a `TypeItem`, `items` an `ItemsItem`, `additionalProperties` a schema or a boolean. Keys gnostic
does not know (JSON-Schema-only keywords such as `anyOf` in a CRD schema) are left out, as kube-apiserver's v2
publishing drops them.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from pykubeadm.apiserver.openapi.gnostic import MESSAGES, message_class

__all__ = ["EncodedV2", "V2Cache", "document_message", "etag_of"]

Obj = dict[str, Any]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SCALARS = frozenset({"string", "bool", "int64", "double"})


def _json_key(proto_name: str) -> str:
    if proto_name == "_ref":
        return "$ref"
    head, *rest = proto_name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


#: message → JSON key → (proto field name, type); built from gnostic.MESSAGES.
_FIELDS: dict[str, dict[str, tuple[str, str]]] = {
    msg: {_json_key(name): (name, t) for _, name, t in fields} for msg, fields in MESSAGES.items()
}


def _yaml(value: Any) -> str:
    # JSON text is YAML (flow style); ensure_ascii=False keeps astral characters out of surrogate-pair escapes.
    return json.dumps(value, ensure_ascii=False) + "\n"


def _any(value: Any) -> Obj:
    return {"yaml": _yaml(value)}


def _named_any(key: str, value: Any) -> Obj:
    return {"name": key, "value": _any(value)}


def _scalar(type_: str, value: Any) -> Any:
    if type_ == "string":
        return value if isinstance(value, str) else None
    if type_ == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if type_ == "double":
        return float(value)
    return value if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX else None


def _value(type_: str, value: Any) -> Any:
    """The proto form of a JSON value for a field of `type_`; None when the value does not fit (left out)."""
    if type_.startswith("repeated:"):
        inner = type_[len("repeated:") :]
        items = value if isinstance(value, list) else [value]
        out = [_value(inner, v) for v in items]
        return [v for v in out if v is not None]
    if type_ in _SCALARS:
        return _scalar(type_, value)
    if type_ == "Any":
        return _any(value)
    return _message(type_, value)


def _plain(name: str, value: Obj) -> Obj:
    fields = _FIELDS[name]
    out: Obj = {}
    vendor: list[Obj] = []
    for key, v in value.items():
        if key.startswith("x-"):
            if "vendorExtension" in fields:
                vendor.append(_named_any(key, v))
            continue
        field = fields.get(key)
        if field is None or field[0] == "vendor_extension":
            continue
        converted = _value(field[1], v)
        if converted is not None:
            out[field[0]] = converted
    if vendor:
        out["vendor_extension"] = vendor
    return out


def _named_map(value_type: str) -> Callable[[Obj], Obj]:
    """A message that is one ordered map: `additional_properties` of (name, value) pairs."""

    def convert(value: Obj) -> Obj:
        pairs = []
        for k, v in value.items():
            converted = _value(value_type, v)
            if converted is not None:
                pairs.append({"name": k, "value": converted})
        return {"additional_properties": pairs}

    return convert


def _split_map(entries_field: str, value_type: str) -> Callable[[Obj], Obj]:
    """Paths and Responses: `x-…` keys are vendor extensions, every other key an entry."""

    def convert(value: Obj) -> Obj:
        entries, vendor = [], []
        for k, v in value.items():
            if k.startswith("x-"):
                vendor.append(_named_any(k, v))
                continue
            converted = _value(value_type, v)
            if converted is not None:
                entries.append({"name": k, "value": converted})
        out: Obj = {entries_field: entries}
        if vendor:
            out["vendor_extension"] = vendor
        return out

    return convert


def _oneof(field: str, type_: str, value: Any) -> Obj | None:
    converted = _value(type_, value)
    return None if converted is None else {field: converted}


def _parameter(value: Obj) -> Obj | None:
    if value.get("in") == "body":
        return _oneof("body_parameter", "BodyParameter", value)
    return _oneof("non_body_parameter", "NonBodyParameter", value)


_NON_BODY = {
    "header": ("header_parameter_sub_schema", "HeaderParameterSubSchema"),
    "formData": ("form_data_parameter_sub_schema", "FormDataParameterSubSchema"),
    "query": ("query_parameter_sub_schema", "QueryParameterSubSchema"),
    "path": ("path_parameter_sub_schema", "PathParameterSubSchema"),
}
_SECURITY = {
    "basic": ("basic_authentication_security", "BasicAuthenticationSecurity"),
    "apiKey": ("api_key_security", "ApiKeySecurity"),
    "oauth2/implicit": ("oauth2_implicit_security", "Oauth2ImplicitSecurity"),
    "oauth2/password": ("oauth2_password_security", "Oauth2PasswordSecurity"),
    "oauth2/application": ("oauth2_application_security", "Oauth2ApplicationSecurity"),
    "oauth2/accessCode": ("oauth2_access_code_security", "Oauth2AccessCodeSecurity"),
}


def _non_body(value: Obj) -> Obj | None:
    choice = _NON_BODY.get(str(value.get("in")))
    return None if choice is None else _oneof(*choice, value)


def _security_item(value: Obj) -> Obj | None:
    kind = str(value.get("type"))
    choice = _SECURITY.get(f"{kind}/{value.get('flow')}" if kind == "oauth2" else kind)
    return None if choice is None else _oneof(*choice, value)


def _ref_or(field: str, type_: str) -> Callable[[Obj], Obj | None]:
    def convert(value: Obj) -> Obj | None:
        if "$ref" in value:
            return _oneof("json_reference", "JsonReference", value)
        return _oneof(field, type_, value)

    return convert


def _additional_properties(value: Any) -> Obj | None:
    if isinstance(value, bool):
        return {"boolean": value}
    return _oneof("schema", "Schema", value)


def _schema_item(value: Obj) -> Obj | None:
    if value.get("type") == "file":
        return _oneof("file_schema", "FileSchema", value)
    return _oneof("schema", "Schema", value)


def _listify(field: str, item_type: str) -> Callable[[Any], Obj | None]:
    """TypeItem / ItemsItem / StringArray: one value or a list of them."""

    def convert(value: Any) -> Obj | None:
        return {field: _value(f"repeated:{item_type}", value)}

    return convert


_SPECIAL: dict[str, Callable[[Any], Obj | None]] = {
    "Any": _any,
    "AdditionalPropertiesItem": _additional_properties,
    "ItemsItem": _listify("schema", "Schema"),
    "NonBodyParameter": _non_body,
    "Parameter": _parameter,
    "ParametersItem": _ref_or("parameter", "Parameter"),
    "Paths": _split_map("path", "PathItem"),
    "Responses": _split_map("response_code", "ResponseValue"),
    "ResponseValue": _ref_or("response", "Response"),
    "SchemaItem": _schema_item,
    "SecurityDefinitionsItem": _security_item,
    "StringArray": _listify("value", "string"),
    "TypeItem": _listify("value", "string"),
}


#: Messages that stand for a JSON value other than an object.
_NOT_OBJECTS = frozenset({"Any", "AdditionalPropertiesItem", "ItemsItem", "StringArray", "TypeItem"})

for _name, _fields in MESSAGES.items():
    if [f[1] for f in _fields] == ["additional_properties"]:  # Definitions, Properties, SecurityRequirement, …
        _pair_type = _fields[0][2].removeprefix("repeated:")
        _SPECIAL[_name] = _named_map({n: t for _, n, t in MESSAGES[_pair_type]}["value"])


def _message(name: str, value: Any) -> Obj | None:
    special = _SPECIAL.get(name)
    if not isinstance(value, dict) and name not in _NOT_OBJECTS:
        return None
    return _plain(name, value) if special is None else special(value)


def document_message(document: Obj) -> Any:
    """gnostic's `openapi.v2.Document` for a swagger 2.0 document (a decoded /openapi/v2 JSON body)."""
    fields = _message("Document", document) or {}
    return message_class("Document")(**fields)


def etag_of(json_body: bytes) -> str:
    """kube-openapi's ETag: the quoted upper-case hex SHA-512 of the JSON document (both representations share it)."""
    return '"' + hashlib.sha512(json_body).hexdigest().upper() + '"'


@dataclass(frozen=True)
class EncodedV2:
    """One /openapi/v2 JSON document, its ETag and when it was built (Last-Modified)."""

    json: bytes
    etag: str
    last_modified: dt.datetime


class V2Cache:
    """The ETag, protobuf encoding and gzipped forms of the current /openapi/v2 JSON document, each computed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: EncodedV2 | None = None
        #: (entry, {(protobuf?, gzipped?): body}), replaced as a whole so readers never need the lock.
        self._bodies: tuple[EncodedV2, dict[tuple[bool, bool], bytes]] | None = None

    def current(self, json_body: bytes) -> EncodedV2:
        """The cached entry for `json_body` (the object Documents.v2 returned), rebuilt when the document changed."""
        cur = self._current
        if cur is not None and cur.json is json_body:
            return cur
        with self._lock:
            cur = self._current
            if cur is None or cur.json is not json_body:
                now = dt.datetime.now(dt.UTC).replace(microsecond=0)
                cur = self._current = EncodedV2(json_body, etag_of(json_body), now)
            return cur

    def body(self, entry: EncodedV2, proto: bool, gzipped: bool = False) -> bytes:
        """`entry` as JSON or protobuf, optionally gzip-compressed; each form is built once per document (the
        protobuf encoding takes tens of milliseconds for the built-in kinds, gzip about as long)."""
        bodies = self._bodies
        if bodies is not None and bodies[0] is entry and (proto, gzipped) in bodies[1]:
            return bodies[1][proto, gzipped]
        with self._lock:
            bodies = self._bodies
            if bodies is None or bodies[0] is not entry:
                bodies = (entry, {(False, False): entry.json})
            forms = dict(bodies[1])
            if (proto, False) not in forms:
                forms[proto, False] = document_message(orjson.loads(entry.json)).SerializeToString()
            if gzipped and (proto, True) not in forms:
                forms[proto, True] = gzip.compress(forms[proto, False], compresslevel=6, mtime=0)
            if self._current is entry:
                self._bodies = (entry, forms)
            return forms[proto, gzipped]
