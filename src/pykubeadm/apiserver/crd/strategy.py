"""The CustomResourceDefinition kind (apiextensions.k8s.io/v1) and the strategy of one custom resource version built
from a CRD: names, scope, subresources, schema (validation, defaults, pruning through the field validation), printer
columns. The CRD controller (controller.py) registers a CustomResourceStrategy store per served version.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from pykubeadm.apiserver.crd.celrules import validate_rules
from pykubeadm.apiserver.crd.schema import apply_defaults, jsonpath_cell, validate_custom
from pykubeadm.apiserver.printing import NAME_COL, age, col, now_rfc3339
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = ["CLEANUP_FINALIZER", "CRDStrategy", "CustomResourceStrategy", "definition_name", "storage_version"]

GROUP = "apiextensions.k8s.io"
#: The finalizer kube-apiextensions-apiserver puts on every CRD: its objects are deleted before the CRD goes.
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_META_REF = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}


def storage_version(crd: Obj) -> str:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return str(v.get("name", ""))
    return ""


def definition_name(group: str, version: str, kind: str) -> str:
    """kube's OpenAPI name of a custom kind: the group reversed (`com.example.stable.v1.CronTab`)."""
    return ".".join([*reversed(group.split(".")), version, kind])


class CRDStrategy(Strategy):
    kind = "CustomResourceDefinition"
    plural = "customresourcedefinitions"
    group = GROUP
    namespaced = False
    short_names = ("crd", "crds")
    categories = ("api-extensions",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        meta = obj.setdefault("metadata", {})
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), CLEANUP_FINALIZER]
        self._defaults(obj)
        # Names never conflict here (no other apiserver serves custom groups), so the CRD is accepted and
        # established at once; the controller serves it before any request can find it missing (see resolve()).
        names = (obj.get("spec") or {}).get("names") or {}
        now = now_rfc3339()
        obj["status"] = {
            "acceptedNames": copy.deepcopy(names),
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
                 "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now,
                 "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
            ],
            "storedVersions": [storage_version(obj)] if storage_version(obj) else [],
        }  # fmt: skip

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        self._defaults(obj)

    @staticmethod
    def _defaults(obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and names.get("kind"):
            names.setdefault("singular", str(names["kind"]).lower())
            names.setdefault("listKind", f"{names['kind']}List")
        spec.setdefault("conversion", {"strategy": "None"})
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and not v.get("additionalPrinterColumns"):
                v.pop("additionalPrinterColumns", None)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        causes: list[Cause] = []
        name = (obj.get("metadata") or {}).get("name", "")
        for f in ("group",):
            if not spec.get(f):
                causes.append(required(f"spec.{f}"))
        for f in ("plural", "kind"):
            if not names.get(f):
                causes.append(required(f"spec.names.{f}"))
        if spec.get("group") and names.get("plural") and name != f"{names['plural']}.{spec['group']}":
            causes.append(field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{spec.get("scope", "")}": supported values: "Cluster", "Namespaced"',
                    "spec.scope",
                )
            )
        versions = spec.get("versions") or []
        if not versions:
            causes.append(required("spec.versions"))
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(
                field_invalid("spec.versions", versions, "must have exactly one version marked as storage version")
            )
        for i, v in enumerate(versions):
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if not isinstance(schema, dict):
                causes.append(
                    Cause(
                        "FieldValueRequired",
                        "Required value: schemas are required",
                        f"spec.versions[{i}].schema.openAPIV3Schema",
                    )
                )
            elif schema.get("type") != "object":
                causes.append(
                    Cause(
                        "FieldValueRequired",
                        "Required value: must not be empty at the root",
                        f"spec.versions[{i}].schema.openAPIV3Schema.type",
                    )
                )
        conversion = spec.get("conversion") or {}
        strategy = conversion.get("strategy", "None")
        if strategy not in ("None", "Webhook"):
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{strategy}": supported values: "None", "Webhook"',
                    "spec.conversion.strategy",
                )
            )
        elif strategy == "Webhook":
            webhook = conversion.get("webhook")
            if not isinstance(webhook, dict) or not webhook.get("clientConfig"):
                causes.append(
                    Cause(
                        "FieldValueRequired",
                        "Required value: required when strategy is set to Webhook",
                        "spec.conversion.webhook",
                    )
                )
            elif not set(webhook.get("conversionReviewVersions") or []) & {"v1", "v1beta1"}:
                causes.append(
                    Cause(
                        "FieldValueRequired",
                        "Required value: must include at least one of v1, v1beta1",
                        "spec.conversion.webhook.conversionReviewVersions",
                    )
                )
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        for f in ("group", "scope"):
            if (obj.get("spec") or {}).get(f) != (old.get("spec") or {}).get(f):
                causes.append(field_invalid(f"spec.{f}", (obj.get("spec") or {}).get(f), "field is immutable"))
        return causes

    def table_columns(self) -> list[Obj]:
        return [NAME_COL, col("Created At", "date", "CreationTimestamp is a timestamp representing the server time.")]


class CustomResourceStrategy(Strategy):
    """One served version of a CRD."""

    custom: ClassVar[bool] = True
    track_generation = True

    def __init__(self, crd: Obj, version: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        self.crd_name = crd["metadata"]["name"]
        self.kind = names["kind"]
        self.plural = names["plural"]
        self.singular_name = names.get("singular") or self.kind.lower()
        self.group = spec["group"]
        self.version = version["name"]
        self.namespaced = spec.get("scope") == "Namespaced"
        self.short_names = tuple(names.get("shortNames") or ())
        self.categories = tuple(names.get("categories") or ())
        subs = version.get("subresources") or {}
        self.scale_paths: Obj | None = subs.get("scale") if isinstance(subs.get("scale"), dict) else None
        self.subresources = tuple(s for s in ("scale", "status") if s in subs)
        self.storage_prefix = f"{self.group}/{self.plural}"
        self.schema: Obj = copy.deepcopy((version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"})
        self.columns: list[Obj] = list(version.get("additionalPrinterColumns") or [])
        self.schema_revision = crd["metadata"].get("resourceVersion", "")

    @property
    def singular(self) -> str:
        return self.singular_name

    # --- OpenAPI --------------------------------------------------------------------------------------------------

    def openapi_definition(self) -> tuple[str, Obj]:
        root = copy.deepcopy(self.schema)
        props = root.setdefault("properties", {})
        props["apiVersion"] = {
            "type": "string",
            "description": "APIVersion defines the versioned schema of this object.",
        }
        props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource."}
        props["metadata"] = {**_META_REF, "description": "Standard object's metadata."}
        root["x-kubernetes-group-version-kind"] = [{"group": self.group, "kind": self.kind, "version": self.version}]
        return definition_name(self.group, self.version, self.kind), root

    # --- hooks ----------------------------------------------------------------------------------------------------

    def _defaults(self, obj: Obj) -> None:
        apply_defaults(obj, self.schema)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        self._defaults(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        self._defaults(obj)

    def _body_and_schema(self, obj: Obj) -> tuple[Obj, Obj]:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        schema = {**self.schema, "properties": {k: v for k, v in (self.schema.get("properties") or {}).items()
                                                if k not in ("apiVersion", "kind", "metadata")}}  # fmt: skip
        return body, schema

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        body, schema = self._body_and_schema(obj)
        causes = validate_custom(body, schema)
        return causes or validate_rules(body, None, schema)

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        body, schema = self._body_and_schema(obj)
        causes = validate_custom(body, schema)
        return causes or validate_rules(body, self._body_and_schema(old)[0], schema)

    def validate_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return self.validate_update(obj, old, ctx)

    # --- printing -------------------------------------------------------------------------------------------------

    def table_columns(self) -> list[Obj]:
        cols = [NAME_COL]
        for c in self.columns:
            cols.append(col(c.get("name", ""), c.get("type", "string"), c.get("description", ""), c.get("priority", 0),
                            c.get("format", "")))  # fmt: skip
        if not self.columns:
            cols.append(col("Age", "date", "CreationTimestamp is a timestamp representing the server time."))
        return cols

    def table_row(self, obj: Obj) -> list[Any]:
        row: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for c in self.columns:
            v = jsonpath_cell(obj, c.get("jsonPath", ""))
            # kube's table convertor turns date columns into ages ("5m"), as kubectl shows them
            row.append(age({"metadata": {"creationTimestamp": v}}) if c.get("type") == "date" and v else v)
        if not self.columns:
            row.append(age(obj))
        return row
