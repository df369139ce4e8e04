"""Which PersistentVolume a claim may bind: kube's findMatchingVolume and the helpers around it, as pure functions.

Used by the binder (controller.py) with no Node, and by the scheduler's volume-binding step with a Node (a local
volume's node affinity must match it, and only `Available` volumes count). A volume matches a claim when it is at
least as large as the request, offers every access mode the claim asks for, has the same volume mode, is not being
deleted, has the claim's class (`""` only matches `""`), is not bound or pre-bound to another claim and its labels
satisfy the claim's selector; among matches the volume with the fewest access modes wins, then the smallest. A volume
pre-bound to the claim (`spec.claimRef` naming it) is taken at once whatever its class. With `delay_binding` (the
class is WaitForFirstConsumer) and no Node, only pre-bound volumes match: the scheduler picks the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from pykubeadm.controllers.controllerutil import selector_matches
from pykubeadm.scheduler.matching import node_selector_term_matches
from pykubeadm.util.quantity import parse_quantity

__all__ = [
    "claim_class",
    "claim_request",
    "find_matching_volume",
    "is_volume_bound_to_claim",
    "pod_claims",
    "volume_capacity",
    "volume_class",
    "volume_mismatch",
    "volume_node_affinity_matches",
]

Obj = Mapping[str, Any]


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def claim_class(claim: Obj) -> str:
    """storageclass.GetPersistentVolumeClaimClass: spec.storageClassName, else the beta annotation, else ``""``."""
    name = _spec(claim).get("storageClassName")
    if name is not None:
        return str(name)
    return str((_meta(claim).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class", ""))


def volume_class(volume: Obj) -> str:
    name = _spec(volume).get("storageClassName")
    if name is not None:
        return str(name)
    return str((_meta(volume).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class", ""))


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(str(value)) if value not in (None, "") else Decimal(0)
    except (ValueError, ArithmeticError):
        return Decimal(0)


def claim_request(claim: Obj) -> Decimal:
    return _quantity(((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage"))


def volume_capacity(volume: Obj) -> Decimal:
    return _quantity((_spec(volume).get("capacity") or {}).get("storage"))


def is_volume_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """The volume's claimRef names the claim (and, if it has a uid, the claim's uid)."""
    ref = _spec(volume).get("claimRef")
    if not ref:
        return False
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != (meta.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def volume_node_affinity_matches(volume: Obj, node: Obj) -> bool:
    """volumeutil.CheckNodeAffinity: the volume's required node selector terms (ORed) match the Node."""
    required = (_spec(volume).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    return any(node_selector_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def _modes(obj: Obj) -> set[str]:
    return set(_spec(obj).get("accessModes") or [])


def find_matching_volume(
    claim: Obj, volumes: Iterable[Obj], *, node: Obj | None = None, delay_binding: bool = False
) -> Obj | None:
    """The volume the claim binds to, or None (pv_controller's findBestMatchForClaim / findMatchingVolume)."""
    requested = claim_request(claim)
    wanted_modes = _modes(claim)
    wanted_class = claim_class(claim)
    claim_mode = _spec(claim).get("volumeMode") or "Filesystem"
    selector = _spec(claim).get("selector")
    best: tuple[int, Decimal, str] | None = None
    chosen: Obj | None = None
    for volume in volumes:
        modes = _modes(volume)
        if not wanted_modes <= modes:
            continue
        size = volume_capacity(volume)
        if size < requested:
            continue
        if (_spec(volume).get("volumeMode") or "Filesystem") != claim_mode:
            continue
        if _meta(volume).get("deletionTimestamp"):
            continue
        affinity_ok = node is None or volume_node_affinity_matches(volume, node)
        if is_volume_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if _spec(volume).get("claimRef"):
            continue
        if selector is not None and not selector_matches(selector, _meta(volume).get("labels")):
            continue
        if volume_class(volume) != wanted_class or not affinity_ok:
            continue
        if node is not None and (volume.get("status") or {}).get("phase") != "Available":
            continue
        rank = (len(modes), size, str(_meta(volume).get("name") or ""))
        if best is None or rank < best:
            best, chosen = rank, volume
    return chosen


def volume_mismatch(volume: Obj, claim: Obj) -> str | None:
    """Why a requested volume (claim.spec.volumeName) cannot serve the claim (checkVolumeSatisfyClaim), or None."""
    if volume_capacity(volume) < claim_request(claim):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if (_spec(volume).get("volumeMode") or "Filesystem") != (_spec(claim).get("volumeMode") or "Filesystem"):
        return "incompatible volumeMode"
    if not _modes(claim) <= _modes(volume):
        return "incompatible accessMode"
    return None


def pod_claims(pod: Obj) -> list[tuple[str, bool]]:
    """(claim name, from a generic ephemeral volume) for each claim a Pod uses; an ephemeral volume's claim is
    `<pod>-<volume>`."""
    pod_name = _meta(pod).get("name", "")
    out = []
    for volume in _spec(pod).get("volumes") or []:
        if volume.get("persistentVolumeClaim"):
            out.append((str(volume["persistentVolumeClaim"].get("claimName", "")), False))
        elif volume.get("ephemeral"):
            out.append((f"{pod_name}-{volume.get('name', '')}", True))
    return out
