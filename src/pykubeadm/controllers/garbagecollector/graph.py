"""The garbage collector's object graph and its decisions (kube's GraphBuilder and attemptToDeleteItem), without I/O.

`Graph` keeps one `Node` per observed object (by UID) and the reverse owner → dependents edges. `decide` is what the
collector does with a dependent once each of its owners has been classified (`OwnerState`):

* some owner is solid (exists with the referenced UID and is not waiting for its dependents): drop the references to
  the dangling and waiting owners (if any) and keep the object;
* otherwise, if an owner waits for its dependents (foreground deletion) and the object has dependents itself: delete
  it in the foreground too;
* otherwise delete it, propagating by its own finalizers (orphan → Orphan, foregroundDeletion → Foreground, else
  Background).

An owner with the `orphan` finalizer has its dependents' references to it removed, then the finalizer; one with
`foregroundDeletion` waits until no dependent that blocks owner deletion is left, then loses the finalizer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from pykubeadm.controllers.batchutil import ApiPath

__all__ = [
    "FOREGROUND_FINALIZER",
    "ORPHAN_FINALIZER",
    "Decision",
    "Graph",
    "Node",
    "OwnerState",
    "decide",
]

#: metav1.FinalizerOrphanDependents
ORPHAN_FINALIZER: Final = "orphan"
#: metav1.FinalizerDeleteDependents
FOREGROUND_FINALIZER: Final = "foregroundDeletion"


class OwnerState(Enum):
    SOLID = "solid"
    DANGLING = "dangling"
    WAITING = "waiting"


@dataclass(frozen=True)
class Decision:
    """What to do with a dependent: `remove_refs` (owner UIDs to drop) or `delete` with `policy`; nothing if neither."""

    remove_refs: tuple[str, ...] = ()
    delete: bool = False
    policy: str = "Background"


@dataclass
class Node:
    """One observed object: identity, owner references, and its deletion state."""

    path: ApiPath
    namespace: str
    name: str
    uid: str
    resource_version: str = ""
    owners: list[dict[str, Any]] = field(default_factory=list)
    finalizers: tuple[str, ...] = ()
    deleting: bool = False

    @classmethod
    def from_object(cls, path: ApiPath, obj: Mapping[str, Any]) -> Node:
        meta = obj.get("metadata") or {}
        return cls(
            path=path,
            namespace=meta.get("namespace") or "",
            name=meta.get("name") or "",
            uid=meta.get("uid") or "",
            resource_version=meta.get("resourceVersion") or "",
            owners=[dict(ref) for ref in meta.get("ownerReferences") or []],
            finalizers=tuple(meta.get("finalizers") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
        )

    @property
    def deleting_dependents(self) -> bool:
        """Being deleted in the foreground (isDeletingDependents)."""
        return self.deleting and FOREGROUND_FINALIZER in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.deleting and ORPHAN_FINALIZER in self.finalizers

    def ref_to(self, owner_uid: str) -> dict[str, Any] | None:
        return next((ref for ref in self.owners if ref.get("uid") == owner_uid), None)


class Graph:
    """Nodes by UID and the dependents of each owner UID (owners need not be observed)."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}

    def upsert(self, node: Node) -> Node | None:
        """Insert or replace `node`; returns the previous version."""
        old = self.nodes.get(node.uid)
        if old is not None:
            self._unlink(old)
        self.nodes[node.uid] = node
        for ref in node.owners:
            self._dependents.setdefault(str(ref.get("uid")), set()).add(node.uid)
        return old

    def remove(self, uid: str) -> Node | None:
        old = self.nodes.pop(uid, None)
        if old is not None:
            self._unlink(old)
        return old

    def _unlink(self, node: Node) -> None:
        for ref in node.owners:
            deps = self._dependents.get(str(ref.get("uid")))
            if deps is not None:
                deps.discard(node.uid)
                if not deps:
                    del self._dependents[str(ref.get("uid"))]

    def dependents(self, owner_uid: str) -> list[Node]:
        return [self.nodes[uid] for uid in sorted(self._dependents.get(owner_uid, ())) if uid in self.nodes]

    def blocking_dependents(self, owner_uid: str) -> list[Node]:
        """Dependents whose reference to the owner has blockOwnerDeletion."""
        return [d for d in self.dependents(owner_uid) if (d.ref_to(owner_uid) or {}).get("blockOwnerDeletion")]


def decide(node: Node, owners: Iterable[tuple[dict[str, Any], OwnerState]], has_dependents: bool) -> Decision:
    """attemptToDeleteItem's choice for `node`, given each owner reference's state."""
    states = list(owners)
    solid = [ref for ref, state in states if state is OwnerState.SOLID]
    dangling = [ref for ref, state in states if state is OwnerState.DANGLING]
    waiting = [ref for ref, state in states if state is OwnerState.WAITING]
    if solid:
        drop = tuple(str(ref.get("uid")) for ref in dangling + waiting)
        return Decision(remove_refs=drop)
    if waiting and has_dependents:
        return Decision(delete=True, policy="Foreground")
    if ORPHAN_FINALIZER in node.finalizers:
        policy = "Orphan"
    elif FOREGROUND_FINALIZER in node.finalizers:
        policy = "Foreground"
    else:
        policy = "Background"
    return Decision(delete=True, policy=policy)
