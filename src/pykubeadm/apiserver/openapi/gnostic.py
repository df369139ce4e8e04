"""gnostic's `openapi.v2` protobuf messages (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto): the shape of
the protobuf /openapi/v2 document kube-apiserver serves; message classes are built from `MESSAGES` on first use by
`message_class`, read by protov2.py (encoding) and the tests (decoding).

Each message is a list of (field number, proto field name, type) with gnostic's numbers; type is a scalar ("string",
"bool", "int64", "double"), a message name, "google.protobuf.Any" or "repeated:<type>". Every message listed in
`ONEOFS` keeps all its fields in one oneof named `oneof`, as gnostic declares them.
"""

from __future__ import annotations

import functools

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

__all__ = ["MESSAGES", "ONEOFS", "PACKAGE", "message_class"]

#: gnostic's proto package; full names are `openapi.v2.<Message>`.
PACKAGE = "openapi.v2"

Field = tuple[int, str, str]

_VX = "repeated:NamedAny"  # vendor extensions (x-…), in declaration order
_PARAM_SUB = [
    (1, "required", "bool"),
    (2, "in", "string"),
    (3, "description", "string"),
    (4, "name", "string"),
]
_PRIMITIVE_CHECKS = [
    (1, "type", "string"),
    (2, "format", "string"),
    (3, "items", "PrimitivesItems"),
    (4, "collection_format", "string"),
    (5, "default", "Any"),
    (6, "maximum", "double"),
    (7, "exclusive_maximum", "bool"),
    (8, "minimum", "double"),
    (9, "exclusive_minimum", "bool"),
    (10, "max_length", "int64"),
    (11, "min_length", "int64"),
    (12, "pattern", "string"),
    (13, "max_items", "int64"),
    (14, "min_items", "int64"),
    (15, "unique_items", "bool"),
    (16, "enum", "repeated:Any"),
    (17, "multiple_of", "double"),
]


def _shifted(fields: list[Field], by: int) -> list[Field]:
    """`fields` with their numbers raised by `by` (gnostic's parameter sub-schemas share one run of checks)."""
    return [(n + by, name, t) for n, name, t in fields]


def _param_sub(form: bool) -> list[Field]:
    # header/query/path: type = 5 … multiple_of = 21, vendor_extension = 22; query/formData add allow_empty_value = 5.
    extra = [(5, "allow_empty_value", "bool")] if form else []
    base = 5 if form else 4
    return [*_PARAM_SUB, *extra, *_shifted(_PRIMITIVE_CHECKS, base), (base + 18, "vendor_extension", _VX)]


def _named(value: str) -> list[Field]:
    return [(1, "name", "string"), (2, "value", value)]


def _security(*fields: str) -> list[Field]:
    types = {"scopes": "Oauth2Scopes"}
    out = [(i, f, types.get(f, "string")) for i, f in enumerate(fields, 1)]
    return [*out, (len(fields) + 1, "vendor_extension", _VX)]


MESSAGES: dict[str, list[Field]] = {
    "AdditionalPropertiesItem": [(1, "schema", "Schema"), (2, "boolean", "bool")],
    "Any": [(1, "value", "google.protobuf.Any"), (2, "yaml", "string")],
    "ApiKeySecurity": _security("type", "name", "in", "description"),
    "BasicAuthenticationSecurity": _security("type", "description"),
    "BodyParameter": [
        (1, "description", "string"),
        (2, "name", "string"),
        (3, "in", "string"),
        (4, "required", "bool"),
        (5, "schema", "Schema"),
        (6, "vendor_extension", _VX),
    ],
    "Contact": [(1, "name", "string"), (2, "url", "string"), (3, "email", "string"), (4, "vendor_extension", _VX)],
    "Default": [(1, "additional_properties", "repeated:NamedAny")],
    "Definitions": [(1, "additional_properties", "repeated:NamedSchema")],
    "Document": [
        (1, "swagger", "string"),
        (2, "info", "Info"),
        (3, "host", "string"),
        (4, "base_path", "string"),
        (5, "schemes", "repeated:string"),
        (6, "consumes", "repeated:string"),
        (7, "produces", "repeated:string"),
        (8, "paths", "Paths"),
        (9, "definitions", "Definitions"),
        (10, "parameters", "ParameterDefinitions"),
        (11, "responses", "ResponseDefinitions"),
        (12, "security", "repeated:SecurityRequirement"),
        (13, "security_definitions", "SecurityDefinitions"),
        (14, "tags", "repeated:Tag"),
        (15, "external_docs", "ExternalDocs"),
        (16, "vendor_extension", _VX),
    ],
    "Examples": [(1, "additional_properties", "repeated:NamedAny")],
    "ExternalDocs": [(1, "description", "string"), (2, "url", "string"), (3, "vendor_extension", _VX)],
    "FileSchema": [
        (1, "format", "string"),
        (2, "title", "string"),
        (3, "description", "string"),
        (4, "default", "Any"),
        (5, "required", "repeated:string"),
        (6, "type", "string"),
        (7, "read_only", "bool"),
        (8, "external_docs", "ExternalDocs"),
        (9, "example", "Any"),
        (10, "vendor_extension", _VX),
    ],
    "FormDataParameterSubSchema": _param_sub(form=True),
    "Header": [*_PRIMITIVE_CHECKS, (18, "description", "string"), (19, "vendor_extension", _VX)],
    "HeaderParameterSubSchema": _param_sub(form=False),
    "Headers": [(1, "additional_properties", "repeated:NamedHeader")],
    "Info": [
        (1, "title", "string"),
        (2, "version", "string"),
        (3, "description", "string"),
        (4, "terms_of_service", "string"),
        (5, "contact", "Contact"),
        (6, "license", "License"),
        (7, "vendor_extension", _VX),
    ],
    "ItemsItem": [(1, "schema", "repeated:Schema")],
    "JsonReference": [(1, "_ref", "string"), (2, "description", "string")],
    "License": [(1, "name", "string"), (2, "url", "string"), (3, "vendor_extension", _VX)],
    "NamedAny": _named("Any"),
    "NamedHeader": _named("Header"),
    "NamedParameter": _named("Parameter"),
    "NamedPathItem": _named("PathItem"),
    "NamedResponse": _named("Response"),
    "NamedResponseValue": _named("ResponseValue"),
    "NamedSchema": _named("Schema"),
    "NamedSecurityDefinitionsItem": _named("SecurityDefinitionsItem"),
    "NamedString": _named("string"),
    "NamedStringArray": _named("StringArray"),
    "NonBodyParameter": [
        (1, "header_parameter_sub_schema", "HeaderParameterSubSchema"),
        (2, "form_data_parameter_sub_schema", "FormDataParameterSubSchema"),
        (3, "query_parameter_sub_schema", "QueryParameterSubSchema"),
        (4, "path_parameter_sub_schema", "PathParameterSubSchema"),
    ],
    "Oauth2AccessCodeSecurity": _security("type", "flow", "scopes", "authorization_url", "token_url", "description"),
    "Oauth2ApplicationSecurity": _security("type", "flow", "scopes", "token_url", "description"),
    "Oauth2ImplicitSecurity": _security("type", "flow", "scopes", "authorization_url", "description"),
    "Oauth2PasswordSecurity": _security("type", "flow", "scopes", "token_url", "description"),
    "Oauth2Scopes": [(1, "additional_properties", "repeated:NamedString")],
    "Operation": [
        (1, "tags", "repeated:string"),
        (2, "summary", "string"),
        (3, "description", "string"),
        (4, "external_docs", "ExternalDocs"),
        (5, "operation_id", "string"),
        (6, "produces", "repeated:string"),
        (7, "consumes", "repeated:string"),
        (8, "parameters", "repeated:ParametersItem"),
        (9, "responses", "Responses"),
        (10, "schemes", "repeated:string"),
        (11, "deprecated", "bool"),
        (12, "security", "repeated:SecurityRequirement"),
        (13, "vendor_extension", _VX),
    ],
    "Parameter": [(1, "body_parameter", "BodyParameter"), (2, "non_body_parameter", "NonBodyParameter")],
    "ParameterDefinitions": [(1, "additional_properties", "repeated:NamedParameter")],
    "ParametersItem": [(1, "parameter", "Parameter"), (2, "json_reference", "JsonReference")],
    "PathItem": [
        (1, "_ref", "string"),
        (2, "get", "Operation"),
        (3, "put", "Operation"),
        (4, "post", "Operation"),
        (5, "delete", "Operation"),
        (6, "options", "Operation"),
        (7, "head", "Operation"),
        (8, "patch", "Operation"),
        (9, "parameters", "repeated:ParametersItem"),
        (10, "vendor_extension", _VX),
    ],
    "PathParameterSubSchema": _param_sub(form=False),
    "Paths": [(1, "vendor_extension", _VX), (2, "path", "repeated:NamedPathItem")],
    "PrimitivesItems": [*_PRIMITIVE_CHECKS, (18, "vendor_extension", _VX)],
    "Properties": [(1, "additional_properties", "repeated:NamedSchema")],
    "QueryParameterSubSchema": _param_sub(form=True),
    "Response": [
        (1, "description", "string"),
        (2, "schema", "SchemaItem"),
        (3, "headers", "Headers"),
        (4, "examples", "Examples"),
        (5, "vendor_extension", _VX),
    ],
    "ResponseDefinitions": [(1, "additional_properties", "repeated:NamedResponse")],
    "ResponseValue": [(1, "response", "Response"), (2, "json_reference", "JsonReference")],
    "Responses": [(1, "response_code", "repeated:NamedResponseValue"), (2, "vendor_extension", _VX)],
    "Schema": [
        (1, "_ref", "string"),
        (2, "format", "string"),
        (3, "title", "string"),
        (4, "description", "string"),
        (5, "default", "Any"),
        (6, "multiple_of", "double"),
        (7, "maximum", "double"),
        (8, "exclusive_maximum", "bool"),
        (9, "minimum", "double"),
        (10, "exclusive_minimum", "bool"),
        (11, "max_length", "int64"),
        (12, "min_length", "int64"),
        (13, "pattern", "string"),
        (14, "max_items", "int64"),
        (15, "min_items", "int64"),
        (16, "unique_items", "bool"),
        (17, "max_properties", "int64"),
        (18, "min_properties", "int64"),
        (19, "required", "repeated:string"),
        (20, "enum", "repeated:Any"),
        (21, "additional_properties", "AdditionalPropertiesItem"),
        (22, "type", "TypeItem"),
        (23, "items", "ItemsItem"),
        (24, "all_of", "repeated:Schema"),
        (25, "properties", "Properties"),
        (26, "discriminator", "string"),
        (27, "read_only", "bool"),
        (28, "xml", "Xml"),
        (29, "external_docs", "ExternalDocs"),
        (30, "example", "Any"),
        (31, "vendor_extension", _VX),
    ],
    "SchemaItem": [(1, "schema", "Schema"), (2, "file_schema", "FileSchema")],
    "SecurityDefinitions": [(1, "additional_properties", "repeated:NamedSecurityDefinitionsItem")],
    "SecurityDefinitionsItem": [
        (1, "basic_authentication_security", "BasicAuthenticationSecurity"),
        (2, "api_key_security", "ApiKeySecurity"),
        (3, "oauth2_implicit_security", "Oauth2ImplicitSecurity"),
        (4, "oauth2_password_security", "Oauth2PasswordSecurity"),
        (5, "oauth2_application_security", "Oauth2ApplicationSecurity"),
        (6, "oauth2_access_code_security", "Oauth2AccessCodeSecurity"),
    ],
    "SecurityRequirement": [(1, "additional_properties", "repeated:NamedStringArray")],
    "StringArray": [(1, "value", "repeated:string")],
    "Tag": [
        (1, "name", "string"),
        (2, "description", "string"),
        (3, "external_docs", "ExternalDocs"),
        (4, "vendor_extension", _VX),
    ],
    "TypeItem": [(1, "value", "repeated:string")],
    "VendorExtension": [(1, "additional_properties", "repeated:NamedAny")],
    "Xml": [
        (1, "name", "string"),
        (2, "namespace", "string"),
        (3, "prefix", "string"),
        (4, "attribute", "bool"),
        (5, "wrapped", "bool"),
        (6, "vendor_extension", _VX),
    ],
}

#: Messages whose fields all live in gnostic's `oneof oneof { … }`.
ONEOFS = frozenset(
    {
        "AdditionalPropertiesItem",
        "NonBodyParameter",
        "Parameter",
        "ParametersItem",
        "ResponseValue",
        "SchemaItem",
        "SecurityDefinitionsItem",
    }
)

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _F.TYPE_STRING, "bool": _F.TYPE_BOOL, "int64": _F.TYPE_INT64, "double": _F.TYPE_DOUBLE}


def _file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="openapiv2/OpenAPIv2.proto", package=PACKAGE, syntax="proto3", dependency=[any_pb2.DESCRIPTOR.name]
    )
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        if name in ONEOFS:
            msg.oneof_decl.add(name="oneof")
        for number, field_name, type_ in fields:
            fd = msg.field.add(name=field_name, number=number, label=_F.LABEL_OPTIONAL)
            if type_.startswith("repeated:"):
                fd.label = _F.LABEL_REPEATED
                type_ = type_[len("repeated:") :]
            if type_ in _SCALARS:
                fd.type = _SCALARS[type_]
            else:
                fd.type = _F.TYPE_MESSAGE
                fd.type_name = "." + (type_ if "." in type_ else f"{PACKAGE}.{type_}")
            if name in ONEOFS:
                fd.oneof_index = 0
    return fdp


@functools.cache
def _classes() -> dict[str, type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(any_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(_file())
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{n}")) for n in MESSAGES}


def message_class(name: str) -> type[Message]:
    """The class of gnostic's `openapi.v2.<name>` (e.g. "Document")."""
    return _classes()[name]
