"""The namespace controller: empties a Terminating namespace of every namespaced kind, then finalizes it.

For a Namespace with a deletionTimestamp and the `kubernetes` finalizer (kube's namespacedResourcesDeleter): discover
every namespaced kind (failures are reported, not fatal), delete each kind's content (deletecollection when served,
else one DELETE per object; background propagation), count what remains and which finalizers hold it, write the five
status conditions kube writes (NamespaceDeletionDiscoveryFailure, …GroupVersionParsingFailure, …ContentFailure,
NamespaceContentRemaining, NamespaceFinalizersRemaining — each True with a failure reason or False with kube's "ok"
reason), and once nothing is left remove `kubernetes` from spec.finalizers through `namespaces/<ns>/finalize`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.core_v1 import Namespace

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.batchutil import ApiPath, Discovery, discover, request
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time

__all__ = ["FINALIZER", "NamespaceController", "content_conditions", "merge_conditions"]

log = logging.getLogger(__name__)

#: The finalizer the namespace controller owns (v1.FinalizerKubernetes).
FINALIZER: Final = "kubernetes"

#: Seconds between checks while content is going away (objects with finalizers or graceful deletion).
REMAINING_RECHECK: Final = 1.0

#: (type, ok reason, ok message) in the order kube writes them.
CONDITIONS: Final = (
    ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
    ("NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    ("NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
)


def content_conditions(
    discovery_failed: Mapping[str, str],
    delete_errors: Sequence[str],
    remaining: Mapping[ApiPath, int],
    finalizers: Mapping[str, int],
) -> dict[str, tuple[str, str, str]]:
    """type → (status, reason, message) for the failures found (types without one are "ok")."""
    out: dict[str, tuple[str, str, str]] = {}
    if discovery_failed:
        detail = ", ".join(f"{gv}: {err}" for gv, err in sorted(discovery_failed.items()))
        out["NamespaceDeletionDiscoveryFailure"] = (
            "True",
            "DiscoveryFailed",
            f"Discovery failed for some groups, {len(discovery_failed)} failing: "
            f"unable to retrieve the complete list of server APIs: {detail}",
        )
    if delete_errors:
        errs = delete_errors[0] if len(delete_errors) == 1 else "[" + ", ".join(delete_errors) + "]"
        out["NamespaceDeletionContentFailure"] = (
            "True",
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(delete_errors)} remaining: {errs}",
        )
    counts = sorted(f"{p.plural}.{p.group} has {n} resource instances" for p, n in remaining.items() if n)
    if counts:
        out["NamespaceContentRemaining"] = (
            "True",
            "SomeResourcesRemain",
            f"Some resources are remaining: {', '.join(counts)}",
        )
    held = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items() if n)
    if held:
        out["NamespaceFinalizersRemaining"] = (
            "True",
            "SomeFinalizersRemain",
            f"Some content in the namespace has finalizers remaining: {', '.join(held)}",
        )
    return out


def merge_conditions(
    existing: Sequence[Mapping[str, Any]], found: Mapping[str, tuple[str, str, str]], now: datetime
) -> list[dict[str, Any]]:
    """The namespace's conditions after this pass: all five types; unchanged ones keep their lastTransitionTime."""
    by_type = {c.get("type"): c for c in existing}
    out = [dict(c) for c in existing if c.get("type") not in {t for t, _, _ in CONDITIONS}]
    for ctype, ok_reason, ok_message in CONDITIONS:
        status, reason, message = found.get(ctype, ("False", ok_reason, ok_message))
        old = by_type.get(ctype)
        if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message):
            out.append(dict(old))
            continue
        out.append(
            {
                "type": ctype,
                "status": status,
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": message,
            }
        )
    return out


def deletable(path: ApiPath) -> bool:
    """A namespaced kind whose objects the controller can list and delete."""
    return path.namespaced and "list" in path.verbs and bool({"delete", "deletecollection"} & path.verbs)


class NamespaceController(Controller):
    name = "namespace"
    service_account = "namespace-controller"

    def setup(self) -> None:
        self.namespaces = self.watch(Namespace, self._on_namespace)

    def _on_namespace(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED" and obj.metadata.deletionTimestamp is not None:
            self.queue.add(obj.metadata.name)

    async def sync(self, key: Any) -> None:
        obj = self.namespaces.get(key)
        if obj is None or obj.metadata.deletionTimestamp is None:
            return
        ns = obj.to_dict()
        if FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or []):
            return
        found = await discover(self.client)
        errors, remaining, finalizers = await self._delete_content(key, found)
        conditions = content_conditions(found.failed, errors, remaining, finalizers)
        await self._write_conditions(ns, conditions)
        if found.failed or errors:
            raise TemporaryError(f"namespace {key}: content deletion failed")
        if any(remaining.values()):
            raise TemporaryError(f"namespace {key} still has content", REMAINING_RECHECK)
        await self._finalize(ns)

    async def _delete_content(
        self, namespace: str, found: Discovery
    ) -> tuple[list[str], dict[ApiPath, int], Counter[str]]:
        errors: list[str] = []
        remaining: dict[ApiPath, int] = {}
        finalizers: Counter[str] = Counter()
        for path in found.paths:
            if not deletable(path):
                continue
            url = path.url(namespace)
            try:
                if "deletecollection" in path.verbs:
                    await request(
                        self.client,
                        "DELETE",
                        url,
                        body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
                    )
                listing = await request(self.client, "GET", url)
                items = (listing or {}).get("items") or []
                if "deletecollection" not in path.verbs:
                    for item in items:
                        if not item["metadata"].get("deletionTimestamp"):
                            await self._delete_one(path, namespace, item)
                    listing = await request(self.client, "GET", url)
                    items = (listing or {}).get("items") or []
            except ApiError as err:
                if is_not_found(err):
                    continue
                errors.append(f'failed to delete {path.plural}.{path.group}: "{err}"')
                continue
            if items:
                remaining[path] = len(items)
                for item in items:
                    finalizers.update(item["metadata"].get("finalizers") or [])
        return errors, remaining, finalizers

    async def _delete_one(self, path: ApiPath, namespace: str, item: Mapping[str, Any]) -> None:
        try:
            await request(
                self.client,
                "DELETE",
                path.url(namespace, item["metadata"]["name"]),
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            )
        except ApiError as err:
            if not is_not_found(err):
                raise

    async def _write_conditions(self, ns: dict[str, Any], found: Mapping[str, tuple[str, str, str]]) -> None:
        status = ns.setdefault("status", {})
        new = merge_conditions(status.get("conditions") or [], found, datetime.now(UTC))
        if new == (status.get("conditions") or []):
            return
        status["conditions"] = new
        name = ns["metadata"]["name"]
        try:
            await request(self.client, "PUT", f"/api/v1/namespaces/{name}/status", body=ns)
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError(f"namespace {name} changed meanwhile") from err
            raise

    async def _finalize(self, ns: dict[str, Any]) -> None:
        name = ns["metadata"]["name"]
        live = await request(self.client, "GET", f"/api/v1/namespaces/{name}")
        spec = live.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER]
        log.info("namespace %s: all content deleted; removing the %s finalizer", name, FINALIZER)
        try:
            await request(self.client, "PUT", f"/api/v1/namespaces/{name}/finalize", body=live)
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError(f"namespace {name} changed meanwhile") from err
            raise
