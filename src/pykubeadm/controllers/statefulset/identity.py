"""A StatefulSet's stable identities, as kube's stateful_set_utils.go makes them: names, labels, claims, revisions.

Pod `<set>-<ordinal>` (ordinals from `spec.ordinals.start`, default 0) gets the template's labels plus
`statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and `controller-revision-hash` (the revision's
name), `hostname` = its name and `subdomain` = `spec.serviceName` (so `web-0.nginx` resolves through the headless
Service), and for each `volumeClaimTemplates` entry a volume of that name on the claim `<template>-<set>-<ordinal>`.
Claims carry the template's labels and the set's selector labels; their owner references follow
`persistentVolumeClaimRetentionPolicy` (the set owns them with `whenDeleted: Delete`, a scaled-away Pod with
`whenScaled: Delete`, so the garbage collector removes them after it).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from pykubeadm.controllers.controllerutil import CONTROLLER_REVISION_HASH_LABEL, new_controller_ref

__all__ = [
    "API_VERSION",
    "KIND",
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "claim_name",
    "claim_owner_refs",
    "new_claims",
    "new_pod",
    "ordinal_of",
    "pod_revision",
    "start_ordinal",
    "template_of_revision",
]

Obj = Mapping[str, Any]
KIND: Final = "StatefulSet"
API_VERSION: Final = "apps/v1"
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
_ORDINAL: Final = re.compile(r"^(.*)-([0-9]+)$")


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def start_ordinal(sts: Obj) -> int:
    return int((_spec(sts).get("ordinals") or {}).get("start") or 0)


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    """The Pod's ordinal when its name is `<set>-<n>` (getParentNameAndOrdinal), else None."""
    match = _ORDINAL.match(str((pod.get("metadata") or {}).get("name") or ""))
    if match is None or match.group(1) != (sts.get("metadata") or {}).get("name"):
        return None
    return int(match.group(2))


def pod_revision(pod: Obj) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) or "")


def claim_name(template_name: str, set_name: str, ordinal: int) -> str:
    return f"{template_name}-{set_name}-{ordinal}"


def template_of_revision(revision: Obj) -> dict[str, Any]:
    """The Pod template a ControllerRevision stores (its `{"spec": {"template": …}}` patch)."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return dict(template)


def new_pod(sts: Obj, template: Obj, ordinal: int, revision_name: str) -> dict[str, Any]:
    """newVersionedStatefulSetPod: the Pod of `ordinal` from `template` (the current or the update revision's)."""
    meta = sts.get("metadata") or {}
    name = f"{meta.get('name')}-{ordinal}"
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), CONTROLLER_REVISION_HASH_LABEL: revision_name})
    pod_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta.get("namespace"),
        "labels": labels,
        "ownerReferences": [new_controller_ref(sts, API_VERSION, KIND)],
    }
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            pod_meta[key] = copy.deepcopy(tmeta[key])
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    spec["hostname"] = name
    if _spec(sts).get("serviceName"):
        spec["subdomain"] = _spec(sts)["serviceName"]
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    for claim in _spec(sts).get("volumeClaimTemplates") or []:
        template_name = (claim.get("metadata") or {}).get("name", "")
        volumes[template_name] = {
            "name": template_name,
            "persistentVolumeClaim": {"claimName": claim_name(template_name, str(meta.get("name")), ordinal)},
        }
    if volumes:
        spec["volumes"] = list(volumes.values())
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def claim_owner_refs(sts: Obj, claim: Obj, pod: Obj | None, condemned: bool) -> list[dict[str, Any]]:
    """The claim's owner references under the set's retention policy (updateClaimOwnerRefForSetAndPod): other
    owners kept, the set's and its Pods' references made to match the policy."""
    policy = _spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    set_uid = (sts.get("metadata") or {}).get("uid")
    refs = [
        dict(r)
        for r in (claim.get("metadata") or {}).get("ownerReferences") or []
        if r.get("uid") != set_uid and r.get("kind") != "Pod"
    ]
    if policy.get("whenDeleted") == "Delete":
        refs.append(new_controller_ref(sts, API_VERSION, KIND))
    if pod is not None and condemned and policy.get("whenScaled") == "Delete":
        pmeta = pod.get("metadata") or {}
        refs.append({"apiVersion": "v1", "kind": "Pod", "name": pmeta.get("name"), "uid": pmeta.get("uid")})
    return refs


def new_claims(sts: Obj, ordinal: int) -> list[dict[str, Any]]:
    """getPersistentVolumeClaims: one claim per volumeClaimTemplates entry for `ordinal`."""
    meta = sts.get("metadata") or {}
    selector_labels = (_spec(sts).get("selector") or {}).get("matchLabels") or {}
    out = []
    for template in _spec(sts).get("volumeClaimTemplates") or []:
        tmeta = template.get("metadata") or {}
        claim_meta: dict[str, Any] = {
            "name": claim_name(str(tmeta.get("name", "")), str(meta.get("name")), ordinal),
            "namespace": meta.get("namespace"),
            "labels": {**(tmeta.get("labels") or {}), **selector_labels},
        }
        if tmeta.get("annotations"):
            claim_meta["annotations"] = dict(tmeta["annotations"])
        claim: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_meta,
            "spec": copy.deepcopy(dict(template.get("spec") or {})),
        }
        refs = claim_owner_refs(sts, claim, None, False)
        if refs:
            claim_meta["ownerReferences"] = refs
        out.append(claim)
    return out
