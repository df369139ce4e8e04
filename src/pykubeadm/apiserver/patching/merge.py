"""RFC 7386 JSON merge patch: maps merge recursively, null deletes, everything else (lists too) is replaced."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["apply_merge_patch"]


def apply_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = apply_merge_patch(result.get(k), v)
    return result
