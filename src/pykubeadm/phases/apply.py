"""Applying kubeadm's API objects idempotently: create-or-update (or create-or-retain), retried like kubeadm.

kubeadm retries API calls every 500 ms up to `timeouts.kubernetesAPICall` (1 m); transport errors and 5xx count as
"not yet", other API errors (403, 422) fail at once with the server's message.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx2
from lightkube import ApiError, Client, codecs

from pykubeadm import constants as c
from pykubeadm.client import create_or_update_sync, is_already_exists, status_code
from pykubeadm.errors import KubeadmError
from pykubeadm.phases.objects import Obj

__all__ = ["apply_objects", "retry_api_call"]

T = TypeVar("T")


def retry_api_call(
    fn: Callable[[], T],
    what: str,
    timeout: float = c.KUBERNETES_API_CALL_TIMEOUT.total_seconds(),
    interval: float = c.API_CALL_RETRY_INTERVAL.total_seconds(),
) -> T:
    """Call `fn` until it succeeds, retrying transport errors, 5xx and 429 until `timeout`; wraps failures."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except ApiError as err:
            code = status_code(err) or 0
            if code < 500 and code != 429:
                raise KubeadmError(f"unable to {what}: {err.status.message or err}") from err
            last: BaseException = err
        except httpx2.TransportError as err:
            last = err
        if time.monotonic() >= deadline:
            raise KubeadmError(f"unable to {what}: {last}") from last
        time.sleep(interval)


def _describe(obj: Obj) -> str:
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{obj['kind']} {ns + '/' if ns else ''}{meta['name']}"


def report_dry_run(out: Callable[[str], None], objs: list[Obj], action: str = "create") -> list[Obj]:
    """--dry-run: say what would be written instead of writing it; returns the objects unchanged."""
    for obj in objs:
        meta = obj["metadata"]
        where = f" in namespace {meta['namespace']}" if meta.get("namespace") else ""
        out(f"[dryrun] Would {action} {obj['kind']} {meta['name']!r}{where}")
    return objs


def apply_objects(client: Client, objs: Iterable[Obj], *, retain: bool = False) -> list[Any]:
    """Create each object; if it exists, replace it (or keep it when `retain`). Returns the live objects."""
    out = []
    for obj in objs:
        res = codecs.from_dict(obj)
        what = f"create {_describe(obj)}"
        if retain:

            def create(res: Any = res) -> Any:
                try:
                    return client.create(res)
                except ApiError as err:
                    if is_already_exists(err):
                        return client.get(type(res), res.metadata.name, namespace=res.metadata.namespace)
                    raise

            out.append(retry_api_call(create, what))
        else:
            out.append(retry_api_call(functools.partial(create_or_update_sync, client, res), what))
    return out
