"""Which StorageClass is the default: shared by the DefaultStorageClass admission plugin and the volume binder."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykubeadm import constants as c

__all__ = ["default_class", "is_default_class"]

Obj = Mapping[str, Any]


def is_default_class(storage_class: Obj) -> bool:
    """Annotated `storageclass.kubernetes.io/is-default-class: "true"` (or with the beta key)."""
    ann = (storage_class.get("metadata") or {}).get("annotations") or {}
    return "true" in (ann.get(c.ANN_DEFAULT_STORAGE_CLASS), ann.get(c.ANN_BETA_DEFAULT_STORAGE_CLASS))


def default_class(classes: Iterable[Obj]) -> Obj | None:
    """The default StorageClass; with several, the newest (ties: the first by name), as kube picks it."""
    defaults = sorted((sc for sc in classes if is_default_class(sc)), key=lambda sc: str(sc["metadata"]["name"]))
    if not defaults:
        return None
    return max(defaults, key=lambda sc: str((sc.get("metadata") or {}).get("creationTimestamp") or ""))
