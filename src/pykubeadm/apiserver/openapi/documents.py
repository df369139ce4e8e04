"""The /openapi/v2 (swagger 2.0) and /openapi/v3 documents (the index and one document per group version), built
from the served kinds and their v1.33 schemas the way kube-apiserver publishes them; served by openapi/handler.py.

kubectl reads them for `explain` (v3 components with x-kubernetes-group-version-kind), for deciding whether the server
validates fields itself (a PATCH operation with the kind's GVK and a `fieldValidation` parameter) and for computing
client-side apply patches (the PATCH operation's `application/strategic-merge-patch+json` request body).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from typing import Any, Protocol

import orjson

from pykubeadm.apiserver.openapi import definitions as defs

__all__ = ["Documents", "OpenAPIKind", "group_path"]

Obj = dict[str, Any]

_QUERY_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_QUERY_LIST = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_PARAM_DOC = {
    "dryRun": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun "
    "directive will result in an error response and no further processing of the request. Valid values are: - All: "
    "all dry run stages will be processed",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is making these changes. The value "
    "must be less than or 128 characters long, and only contain printable characters, as defined by "
    "https://golang.org/pkg/unicode/#IsPrint.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
    "containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
    "force": 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by '
    "other people. Force flag must be unset for non-apply patch requests.",
    "pretty": "If 'true', then the output is pretty printed.",
}
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_BOOL_PARAMS = {"allowWatchBookmarks", "force", "sendInitialEvents", "watch"}
_INT_PARAMS = {"limit", "timeoutSeconds"}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."


class OpenAPIKind(Protocol):
    """What a served kind tells the documents (a registry Strategy satisfies it)."""

    kind: str
    plural: str
    group: str
    version: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...]


def group_path(group: str, version: str) -> str:
    """The /openapi/v3 index key: `api/v1` or `apis/<group>/<version>`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _id_part(group: str, version: str) -> str:
    g = "core" if not group else group.removesuffix(".k8s.io")
    return "".join(w[:1].upper() + w[1:] for w in g.replace("-", ".").split(".")) + version[:1].upper() + version[1:]


def _param(name: str, v3: bool, location: str = "query") -> Obj:
    p: Obj = {"name": name, "in": location, "description": _PARAM_DOC.get(name, name)}
    typ = "boolean" if name in _BOOL_PARAMS else "integer" if name in _INT_PARAMS else "string"
    if location == "path":
        p["required"] = True
    if v3:
        p["schema"] = {"type": typ, "uniqueItems": True}
    else:
        p["type"] = typ
        p["uniqueItems"] = True
    return p


def _ref(name: str, v3: bool) -> Obj:
    return {"$ref": ("#/components/schemas/" if v3 else "#/definitions/") + name}


class Documents:
    """Builds and caches the documents for one set of served kinds; `schema_name(kind)` finds a kind's definition."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._v2: bytes = b""
        self._v3: dict[str, bytes] = {}
        self._hashes: dict[str, str] = {}
        self._extra: dict[str, Obj] = {}

    # --- kinds --------------------------------------------------------------------------------------------------

    @staticmethod
    def schema_name(k: OpenAPIKind) -> str | None:
        custom = getattr(k, "openapi_definition", None)
        if callable(custom):
            return custom()[0]
        return defs.gvk_of(k.group, k.version, k.kind)

    def _definition(self, name: str) -> Obj | None:
        return self._extra.get(name) or defs.definition(name)

    def _collect(self, kinds: Iterable[OpenAPIKind]) -> list[tuple[OpenAPIKind, str, str | None]]:
        out = []
        self._extra = {}
        for k in kinds:
            custom = getattr(k, "openapi_definition", None)
            if callable(custom):
                name, schema = custom()
                self._extra[name] = schema
                list_name = name + "List"
                self._extra[list_name] = _list_schema(k, name)
                out.append((k, name, list_name))
                continue
            name = defs.gvk_of(k.group, k.version, k.kind)
            if name is None:
                continue
            list_name = defs.gvk_of(k.group, k.version, k.kind + "List")
            out.append((k, name, list_name))
        return out

    # --- caching ------------------------------------------------------------------------------------------------

    def _refresh(self, kinds: list[OpenAPIKind]) -> None:
        key = tuple((k.group, k.version, k.plural, k.kind, getattr(k, "schema_revision", 0)) for k in kinds)
        with self._lock:
            if key == self._key:
                return
            collected = self._collect(kinds)
            self._v2 = orjson.dumps(self._build(collected, v3=False))
            by_gv: dict[str, list[tuple[OpenAPIKind, str, str | None]]] = {}
            for item in collected:
                by_gv.setdefault(group_path(item[0].group, item[0].version), []).append(item)
            self._v3 = {gp: orjson.dumps(self._build(items, v3=True)) for gp, items in by_gv.items()}
            self._hashes = {gp: hashlib.sha512(body).hexdigest().upper() for gp, body in self._v3.items()}
            self._key = key

    def v2(self, kinds: Iterable[OpenAPIKind]) -> bytes:
        self._refresh(list(kinds))
        return self._v2

    def v3_index(self, kinds: Iterable[OpenAPIKind]) -> Obj:
        self._refresh(list(kinds))
        paths = {gp: {"serverRelativeURL": f"/openapi/v3/{gp}?hash={digest}"} for gp, digest in self._hashes.items()}
        return {"paths": dict(sorted(paths.items()))}

    def v3(self, kinds: Iterable[OpenAPIKind], gp: str) -> bytes | None:
        self._refresh(list(kinds))
        return self._v3.get(gp)

    # --- building -----------------------------------------------------------------------------------------------

    def _build(self, items: list[tuple[OpenAPIKind, str, str | None]], v3: bool) -> Obj:
        paths: Obj = {}
        roots: set[str] = {_META + "Status", _META + "Patch", _META + "DeleteOptions", _META + "WatchEvent"}
        for k, name, list_name in items:
            roots.add(name)
            if list_name:
                roots.add(list_name)
            paths.update(self._paths(k, name, list_name or name, v3))
        schemas = {n: self._v_schema(n, v3) for n in sorted(self._closure(roots))}
        if v3:
            return {
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": defs.KUBE_VERSION},
                "paths": paths,
                "components": {
                    "schemas": schemas,
                    "securitySchemes": {
                        "BearerToken": {
                            "type": "apiKey",
                            "description": "Bearer Token authentication",
                            "name": "authorization",
                            "in": "header",
                        }
                    },
                },
            }
        return {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": defs.KUBE_VERSION},
            "paths": paths,
            "definitions": schemas,
            "securityDefinitions": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "type": "apiKey",
                    "name": "authorization",
                    "in": "header",
                }
            },
            "security": [{"BearerToken": []}],
        }

    def _v_schema(self, name: str, v3: bool) -> Obj:
        if name in self._extra:
            return defs.to_v3(self._extra[name]) if v3 else self._extra[name]
        return defs.v3_definition(name) if v3 else defs.definitions()[name]

    def _closure(self, roots: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            schema = self._definition(n)
            if schema is None:
                continue
            seen.add(n)
            stack: list[Any] = [schema]
            while stack:
                cur = stack.pop()
                if isinstance(cur, dict):
                    ref = cur.get("$ref")
                    if isinstance(ref, str):
                        todo.append(ref.rsplit("/", 1)[-1])
                    stack.extend(cur.values())
                elif isinstance(cur, list):
                    stack.extend(cur)
        return seen

    def _paths(self, k: OpenAPIKind, name: str, list_name: str, v3: bool) -> Obj:
        prefix = f"/apis/{k.group}/{k.version}" if k.group else f"/api/{k.version}"
        idp = _id_part(k.group, k.version)
        gvk = {"group": k.group, "kind": k.kind, "version": k.version}
        tag = (k.group.removesuffix(".k8s.io").replace(".", "_") or "core") + "_" + k.version
        scope = "Namespaced" if k.namespaced else ""
        coll = f"{prefix}/namespaces/{{namespace}}/{k.plural}" if k.namespaced else f"{prefix}/{k.plural}"
        item = coll + "/{name}"
        path_params = [_param("namespace", v3, "path")] if k.namespaced else []
        verbs = set(k.verbs)

        def op(
            action: str,
            verb_id: str,
            desc: str,
            params: tuple[str, ...],
            resp: str,
            body: str | None = None,
            patch: bool = False,
            codes: tuple[str, ...] = ("200",),
        ) -> Obj:
            o: Obj = {
                "tags": [tag],
                "description": desc,
                "operationId": f"{verb_id}{idp}{scope}{k.kind}",
                "parameters": [_param(p, v3) for p in params],
                "responses": {},
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
            }
            if not v3:
                o["consumes"] = list(_PATCH_TYPES) if patch else ["*/*"]
                o["produces"] = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
                o["schemes"] = ["https"]
            for code in codes:
                if v3:
                    o["responses"][code] = {
                        "description": "OK" if code == "200" else "Created" if code == "201" else "Accepted",
                        "content": {"application/json": {"schema": _ref(resp, v3)}},
                    }
                else:
                    o["responses"][code] = {"description": "OK", "schema": _ref(resp, v3)}
            o["responses"]["401"] = {"description": "Unauthorized"}
            if body is not None:
                types = _PATCH_TYPES if patch else ("*/*",)
                if v3:
                    o["requestBody"] = {"content": {t: {"schema": _ref(body, v3)} for t in types}, "required": True}
                else:
                    o["parameters"].insert(
                        0, {"name": "body", "in": "body", "required": True, "schema": _ref(body, v3)}
                    )
            return o

        out: Obj = {}
        c: Obj = {"parameters": [*path_params, _param("pretty", v3)]}
        if "list" in verbs:
            c["get"] = op("list", "list", f"list or watch objects of kind {k.kind}", _QUERY_LIST, list_name)
        if "create" in verbs:
            c["post"] = op(
                "post", "create", f"create a {k.kind}", _QUERY_WRITE, name, body=name, codes=("200", "201", "202")
            )
        if "deletecollection" in verbs:
            c["delete"] = op(
                "deletecollection",
                "deleteCollection",
                f"delete collection of {k.kind}",
                _QUERY_LIST,
                _META + "Status",
                body=_META + "DeleteOptions",
            )
        out[coll] = c
        i: Obj = {"parameters": [_param("name", v3, "path"), *path_params, _param("pretty", v3)]}
        if "get" in verbs:
            i["get"] = op("get", "read", f"read the specified {k.kind}", (), name)
        if "update" in verbs:
            i["put"] = op(
                "put", "replace", f"replace the specified {k.kind}", _QUERY_WRITE, name, body=name, codes=("200", "201")
            )
        if "patch" in verbs:
            i["patch"] = op(
                "patch",
                "patch",
                f"partially update the specified {k.kind}",
                (*_QUERY_WRITE, "force"),
                name,
                body=_META + "Patch",
                patch=True,
                codes=("200", "201"),
            )
        if "delete" in verbs:
            i["delete"] = op(
                "delete",
                "delete",
                f"delete a {k.kind}",
                ("dryRun", "gracePeriodSeconds"),
                _META + "Status",
                body=_META + "DeleteOptions",
                codes=("200", "202"),
            )
        out[item] = i
        if k.namespaced and "list" in verbs:
            all_ns: Obj = {"parameters": [_param("pretty", v3)]}
            all_ns["get"] = op("list", "list", f"list or watch objects of kind {k.kind}", _QUERY_LIST, list_name)
            all_ns["get"]["operationId"] = f"list{idp}{k.kind}ForAllNamespaces"
            out[f"{prefix}/{k.plural}"] = all_ns
        for sub in k.subresources:
            if sub not in ("status", "scale"):
                continue
            subp: Obj = {"parameters": [_param("name", v3, "path"), *path_params, _param("pretty", v3)]}
            target = name if sub == "status" else "io.k8s.api.autoscaling.v1.Scale"
            cap = sub.capitalize()
            subp["get"] = op("get", "read", f"read {sub} of the specified {k.kind}", (), target)
            subp["get"]["operationId"] = f"read{idp}{scope}{k.kind}{cap}"
            subp["put"] = op(
                "put",
                "replace",
                f"replace {sub} of the specified {k.kind}",
                _QUERY_WRITE,
                target,
                body=target,
                codes=("200", "201"),
            )
            subp["put"]["operationId"] = f"replace{idp}{scope}{k.kind}{cap}"
            subp["patch"] = op(
                "patch",
                "patch",
                f"partially update {sub} of the specified {k.kind}",
                (*_QUERY_WRITE, "force"),
                target,
                body=_META + "Patch",
                patch=True,
                codes=("200", "201"),
            )
            subp["patch"]["operationId"] = f"patch{idp}{scope}{k.kind}{cap}"
            if sub == "scale":
                for o in (subp["get"], subp["put"], subp["patch"]):
                    o["x-kubernetes-group-version-kind"] = {"group": "autoscaling", "kind": "Scale", "version": "v1"}
            out[f"{item}/{sub}"] = subp
        return out


def _list_schema(k: OpenAPIKind, item_name: str) -> Obj:
    return {
        "description": f"{k.kind}List is a list of {k.kind}",
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string",
            },
            "items": {
                "description": f"List of {k.plural.lower()}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "type": "array",
                "items": {"$ref": "#/definitions/" + item_name},
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents.",
                "type": "string",
            },
            "metadata": {"$ref": "#/definitions/" + _META + "ListMeta", "description": "Standard list metadata."},
        },
        "x-kubernetes-group-version-kind": [{"group": k.group, "kind": k.kind + "List", "version": k.version}],
    }
