"""The per-kind `Strategy` base class (no-op defaults) and the request context strategies see; one subclass per kind.

The generic `Store` (store.py) calls the hooks in a fixed order: create → prepare_for_create, validate; update →
prepare_for_update (or prepare_for_subresource), validate_update. Hooks mutate the object in place, validators return
`Cause`s and never mutate. Discovery, tables and field selectors also read their facts from the strategy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.status import Cause

__all__ = ["Obj", "RequestContext", "Strategy", "validate_dns_label", "validate_dns_subdomain", "validate_path_segment"]

Obj = dict[str, Any]

EIGHT_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class RequestContext:
    """Who asks, and in which namespace; passed to strategies and admission."""

    user: UserInfo = field(default_factory=lambda: UserInfo(name="system:apiserver", groups=("system:masters",)))
    namespace: str = ""
    dry_run: bool = False
    #: The writer recorded in managedFields (`?fieldManager=` or the user agent's first token); "" = not recorded.
    field_manager: str = ""
    #: "Apply" when the PATCH handler records managedFields itself (server-side apply); else writes are "Update"s.
    operation: str = "Update"


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_dns_label(name: str, path: str = "metadata.name") -> list[Cause]:
    if len(name) > 63 or not _DNS1123_LABEL.match(name):
        return [
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                path,
            )
        ]
    return []


def validate_dns_subdomain(name: str, path: str = "metadata.name") -> list[Cause]:
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
                "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                path,
            )
        ]
    return []


def validate_path_segment(name: str, path: str = "metadata.name") -> list[Cause]:
    if name in (".", ".."):
        return [Cause("FieldValueInvalid", f"Invalid value: \"{name}\": may not be '{name}'", path)]
    for bad in ("/", "%"):
        if bad in name:
            return [Cause("FieldValueInvalid", f"Invalid value: \"{name}\": may not contain '{bad}'", path)]
    return []


def required(path: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", path)


def field_invalid(path: str, value: Any, detail: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)


def field_immutable(path: str, value: Any) -> Cause:
    return field_invalid(path, value, "field is immutable")


class Strategy:
    """Facts and hooks of one resource kind. Subclasses set the facts as class attributes (the generic and CRD
    strategies, one instance per kind, set them in `__init__`) and override what they need."""

    kind: str
    plural: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = EIGHT_VERBS
    #: etcd key segment under /registry (kube-apiserver's layout: nodes → "minions", services → "services/specs").
    storage_prefix: str = ""
    #: Subresources served as `<plural>/<sub>` (status, approval, binding, finalize).
    subresources: tuple[str, ...] = ()
    #: Bump metadata.generation on spec changes (kinds with spec/status semantics).
    track_generation: bool = False
    #: "subdomain", "label" or "path": how metadata.name is validated.
    name_rule: ClassVar[str] = "subdomain"
    #: Extra field-selector labels beyond metadata.name / metadata.namespace.
    field_labels: tuple[str, ...] = ()
    #: Top-level fields of the kind besides apiVersion/kind/metadata (unknown ones are dropped or, with
    #: ?fieldValidation=Strict, rejected); empty = not checked.
    top_fields: ClassVar[frozenset[str]] = frozenset()
    allow_create_on_update: ClassVar[bool] = False
    allow_unconditional_update: ClassVar[bool] = True
    #: DELETE answers the deleted object instead of a Status Success (kube's generic store `ReturnDeletedObject`,
    #: default false; true for pods, services, serviceaccounts).
    return_deleted_object: bool = False
    #: A built-in kind served at more than one version stores every object at one of them: a version served but not
    #: stored names the stored one here and converts with `to_storage` / `from_storage` (registry/versioned.py).
    storage_version: str = ""

    # --- identity -------------------------------------------------------------------------------------------------

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def resource_name(self) -> str:
        """RBAC-style name: `plural` or `plural.group` (the ObjectSource naming)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def key_prefix(self) -> str:
        return "/registry/" + (self.storage_prefix or self.plural) + "/"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def to_storage(self, obj: Obj) -> Obj:
        """The object at `storage_version` (only called when it is set)."""
        return obj

    def from_storage(self, obj: Obj) -> Obj:
        """A stored object at this version (only called when `storage_version` is set)."""
        return obj

    # --- hooks ----------------------------------------------------------------------------------------------------

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        """Normalise a new object (clear status for kinds with a status subresource)."""
        if self.has_status:
            obj.pop("status", None)
            default = self.default_status()
            if default is not None:
                obj["status"] = default

    def default_status(self) -> Obj | None:
        return None

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        """Updates of the main resource keep the stored status when the kind has a status subresource."""
        if self.has_status:
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)

    def prepare_for_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        """`/status`: only .status changes; the rest is taken from the stored object."""
        status = obj.get("status")
        keep_meta = obj.get("metadata", {})
        obj.clear()
        obj.update({k: v for k, v in old.items() if k != "status"})
        obj["metadata"] = dict(old.get("metadata", {}))
        if "resourceVersion" in keep_meta:
            obj["metadata"]["resourceVersion"] = keep_meta["resourceVersion"]
        if status is not None:
            obj["status"] = status

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return []

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return self.validate(obj, ctx)

    def validate_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return []

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return []

    def warnings_on_delete(self, options: dict[str, Any]) -> list[str]:
        """Warning headers for a DELETE with these DeleteOptions."""
        return []

    def canonicalize(self, obj: Obj) -> None:
        return None

    #: DefaultGarbageCollectionPolicy: "DeleteDependents" (background), "OrphanDependents" or "Unsupported".
    default_gc_policy: ClassVar[str] = "DeleteDependents"

    def graceful_delete(self, obj: Obj, options: dict[str, Any] | None = None) -> bool:
        """CheckGracefulDelete, on DELETE of an object not yet being deleted (a copy): return True and set
        metadata.deletionGracePeriodSeconds (> 0) to delete gracefully; finalizers are handled by the store."""
        return False

    def prepare_for_delete(self, obj: Obj) -> None:
        """Called on the copy a DELETE keeps (marked with deletionTimestamp), e.g. a Namespace turns Terminating."""

    def has_finalizers(self, obj: Obj) -> bool:
        return bool(obj.get("metadata", {}).get("finalizers"))

    def get_attrs(self, obj: Obj) -> dict[str, str]:
        """Field-selector values: metadata.name, metadata.namespace plus the kind's `field_labels`."""
        meta = obj.get("metadata", {})
        attrs = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
        for label in self.field_labels:
            cur: Any = obj
            for part in label.split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            attrs[label] = "" if cur is None else (str(cur).lower() if isinstance(cur, bool) else str(cur))
        return attrs

    def supports_field(self, label: str) -> bool:
        return label in ("metadata.name", "metadata.namespace") or label in self.field_labels

    # --- printing -------------------------------------------------------------------------------------------------

    def table_columns(self) -> list[Obj]:
        """Column definitions; the default table is Name + Created At, as for kinds without a printer."""
        return [NAME_COL, col("Created At", "date", "CreationTimestamp is a timestamp representing the server time.")]

    def table_row(self, obj: Obj) -> list[Any]:
        meta = obj.get("metadata", {})
        return [meta.get("name", ""), meta.get("creationTimestamp", "")]


def name_age_columns(*middle: Obj) -> list[Obj]:
    return [NAME_COL, *middle, AGE_COL]


def name_age_row(obj: Obj, *middle: Any) -> list[Any]:
    return [obj.get("metadata", {}).get("name", ""), *middle, age(obj)]
