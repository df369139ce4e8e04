"""kube-scheduler's VolumeBinding plugin as pure functions: PreFilter, Filter, and what PreBind must write.

PreFilter looks at the Pod's claims (`persistentVolumeClaim` volumes and generic ephemeral volumes' `<pod>-<volume>`):
a missing or deleted claim, or an unbound claim of an `Immediate` class, keeps the Pod out of every Node with kube's
message ("pod has unbound immediate PersistentVolumeClaims"). Filter checks a Node: a bound claim's volume must
accept it by node affinity ("node(s) had volume node affinity conflict"); an unbound `WaitForFirstConsumer` claim
needs an Available volume that matches and accepts the Node, or a class with a provisioner
("node(s) didn't find available persistent volumes to bind"). `plan` says, for the chosen Node, which volume each
unbound claim is pre-bound to (`claimRef`), or that the claim gets `volume.kubernetes.io/selected-node` and waits for
its provisioner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubeadm import constants as c
from pykubeadm.controllers.persistentvolume.matching import (
    claim_class,
    find_matching_volume,
    pod_claims,
    volume_node_affinity_matches,
)

__all__ = [
    "ERR_AFFINITY_CONFLICT",
    "ERR_NO_VOLUME",
    "ERR_UNBOUND_IMMEDIATE",
    "PodVolumes",
    "pre_filter",
]

Obj = Mapping[str, Any]

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
ERR_NO_VOLUME = "node(s) didn't find available persistent volumes to bind"


@dataclass
class PodVolumes:
    """What PreFilter found: the bound claims' volumes and the claims still to bind on the chosen Node."""

    bound: list[Obj] = field(default_factory=list)
    unbound: list[tuple[Obj, Obj]] = field(default_factory=list)  # (claim, its WaitForFirstConsumer class)

    def filter(self, node: Obj, volumes: Sequence[Obj], taken: Callable[[str], bool]) -> str | None:
        """Why `node` does not suit the Pod's volumes, or None."""
        for volume in self.bound:
            if not volume_node_affinity_matches(volume, node):
                return ERR_AFFINITY_CONFLICT
        if self.unbound and self.plan(node, volumes, taken) is None:
            return ERR_NO_VOLUME
        return None

    def plan(
        self, node: Obj, volumes: Sequence[Obj], taken: Callable[[str], bool]
    ) -> list[tuple[Obj, Obj | None]] | None:
        """For each unbound claim: the volume to pre-bind it to, or None (provision it); None if impossible."""
        chosen: set[str] = set()
        out: list[tuple[Obj, Obj | None]] = []
        for claim, storage_class in self.unbound:
            free = [v for v in volumes if v["metadata"]["name"] not in chosen and not taken(str(v["metadata"]["name"]))]
            volume = find_matching_volume(claim, free, node=node, delay_binding=True)
            if volume is not None:
                chosen.add(str(volume["metadata"]["name"]))
                out.append((claim, volume))
            elif (storage_class.get("provisioner") or c.NO_PROVISIONER) != c.NO_PROVISIONER and _topology_allows(
                storage_class, node
            ):
                out.append((claim, None))
            else:
                return None
        return out


def _topology_allows(storage_class: Obj, node: Obj) -> bool:
    """The class's allowedTopologies (terms ORed, each expression's values ORed) admit the Node."""
    terms = storage_class.get("allowedTopologies") or []
    if not terms:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(
        all(labels.get(e.get("key")) in (e.get("values") or []) for e in term.get("matchLabelExpressions") or [])
        for term in terms
    )


def pre_filter(
    pod: Obj,
    claim_of: Callable[[str], Obj | None],
    class_of: Callable[[str], Obj | None],
    volume_of: Callable[[str], Obj | None],
) -> tuple[PodVolumes | None, str]:
    """(the Pod's volumes, "") or (None, kube's PreFilter message) when no Node can take the Pod now."""
    result = PodVolumes()
    for name, ephemeral in pod_claims(pod):
        claim = claim_of(name)
        if claim is None:
            if ephemeral:
                return None, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return None, f'persistentvolumeclaim "{name}" not found'
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return None, f'persistentvolumeclaim "{name}" is being deleted'
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name and ((claim.get("metadata") or {}).get("annotations") or {}).get(c.ANN_BIND_COMPLETED):
            volume = volume_of(str(volume_name))
            if volume is None:
                return None, f'pvc {name}: volume "{volume_name}" not found'
            result.bound.append(volume)
            continue
        class_name = claim_class(claim)
        storage_class = class_of(class_name) if class_name else None
        if storage_class is None or storage_class.get("volumeBindingMode") != "WaitForFirstConsumer":
            return None, ERR_UNBOUND_IMMEDIATE
        result.unbound.append((claim, storage_class))
    return result, ""
