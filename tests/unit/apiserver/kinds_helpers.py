"""Shared helpers of the per-kind strategy tests: a registry Store over the in-memory engine, a pod template."""

from __future__ import annotations

from typing import Any

import pytest

from pykubeadm.apiserver.registry import STRATEGIES, RequestContext, Store
from pykubeadm.apiserver.status import ApiError
from pykubeadm.storage.memory import MemoryStore

CTX = RequestContext()


def store_of(plural: str, group: str, backend: Any = None) -> Store:
    s = next(s for s in STRATEGIES if s.plural == plural and s.group == group)
    return Store(s, backend or MemoryStore())


def template(labels: dict[str, str] | None = None, **pod: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels if labels is not None else {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **pod},
    }


async def invalid(coro: Any) -> ApiError:
    with pytest.raises(ApiError) as e:
        await coro
    assert e.value.code == 422, e.value.message
    return e.value
