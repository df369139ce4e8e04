"""`kubectl drain NODE --ignore-daemonsets` and `kubectl uncordon NODE`, as the lab's upgrade runs them.

The lab drains through the project's own API client rather than by running kubectl: the lab is a product of ours and
must not depend on a kubectl being installed (and of a matching minor); what it does is kubectl drain's, line for line:
- cordon: `spec.unschedulable: true` ("node/X cordoned", or "node/X already cordoned");
- the Pods to evict (`pods_for_deletion`, kubectl's filters in its order): mirror Pods are left silently, DaemonSet-
  managed ones with `--ignore-daemonsets` ("Warning: ignoring DaemonSet-managed Pods: ns/a, ns/b"); a Pod with an
  emptyDir needs `--delete-emptydir-data`, one without a controller `--force` (else drain refuses with kubectl's
  message); terminal (Succeeded/Failed) Pods go without either;
- every Pod is evicted at once through the Eviction API (so PodDisruptionBudgets hold): "evicting pod ns/name", on 429
  `error when evicting pods/"name" -n "ns" (will retry after 5s): <message>` and again after 5 s; then its deletion is
  awaited ("pod/name evicted"); finally "node/X drained";
- uncordon: "node/X uncordoned".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx2
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod

from pykubeadm.client import ApiError, is_not_found, status_code
from pykubeadm.errors import KubeadmError

__all__ = ["DrainOptions", "PodSelection", "cordon", "drain", "pods_for_deletion", "uncordon"]

Out = Callable[[str], None]
log = logging.getLogger(__name__)

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: kubectl drain's wait between evictions a PodDisruptionBudget refused (429).
EVICTION_RETRY_SECONDS = 5.0
_POLL = 0.5


@dataclass(frozen=True)
class DrainOptions:
    ignore_daemonsets: bool = True
    delete_emptydir_data: bool = False
    force: bool = False
    #: How long the whole drain may take (kubectl's --timeout; 0 there means forever).
    timeout: float = 600.0


@dataclass
class PodSelection:
    """kubectl's GetPodsForDeletion result: the Pods to evict, warnings by message, errors by message."""

    pods: list[Pod] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)

    @staticmethod
    def _join(by_message: dict[str, list[str]]) -> str:
        return "; ".join(f"{msg}: {', '.join(pods)}" for msg, pods in by_message.items())

    def warning(self) -> str:
        return self._join(self.warnings)

    def error(self) -> str:
        return self._join(self.errors)


def _key(pod: Pod) -> str:
    assert pod.metadata is not None
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _controller_kind(pod: Pod) -> str | None:
    for ref in (pod.metadata.ownerReferences if pod.metadata else None) or []:
        if ref.controller:
            return ref.kind
    return None


def _terminal(pod: Pod) -> bool:
    return bool(pod.status and pod.status.phase in ("Succeeded", "Failed"))


def pods_for_deletion(pods: Iterable[Pod], opts: DrainOptions) -> PodSelection:
    """kubectl drain's filters over the node's Pods, in its order: DaemonSet, mirror, local storage, unreplicated."""
    sel = PodSelection()
    for pod in pods:
        meta = pod.metadata
        assert meta is not None
        kind = _controller_kind(pod)
        if kind == "DaemonSet":
            if opts.ignore_daemonsets:
                sel.warnings.setdefault("ignoring DaemonSet-managed Pods", []).append(_key(pod))
            else:
                msg = "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
                sel.errors.setdefault(msg, []).append(_key(pod))
            continue
        if MIRROR_ANNOTATION in (meta.annotations or {}):
            continue
        blocked = False
        if not _terminal(pod) and any(v.emptyDir is not None for v in (pod.spec.volumes if pod.spec else None) or []):
            if opts.delete_emptydir_data:
                sel.warnings.setdefault("deleting Pods with local storage", []).append(_key(pod))
            else:
                msg = "cannot delete Pods with local storage (use --delete-emptydir-data to override)"
                sel.errors.setdefault(msg, []).append(_key(pod))
                blocked = True
        if not _terminal(pod) and kind is None:
            if opts.force:
                sel.warnings.setdefault("deleting Pods that declare no controller", []).append(_key(pod))
            else:
                msg = "cannot delete Pods that declare no controller (use --force to override)"
                sel.errors.setdefault(msg, []).append(_key(pod))
                blocked = True
        if not blocked:
            sel.pods.append(pod)
    return sel


def _set_unschedulable(client: Client, node: str, value: bool, out: Out) -> None:
    current = client.get(Node, node)
    verb = "cordoned" if value else "uncordoned"
    if bool(current.spec and current.spec.unschedulable) == value:
        out(f"node/{node} already {verb}")
        return
    client.patch(Node, node, {"spec": {"unschedulable": value or None}})
    out(f"node/{node} {verb}")


def cordon(client: Client, node: str, out: Out) -> None:
    _set_unschedulable(client, node, True, out)


def uncordon(client: Client, node: str, out: Out) -> None:
    _set_unschedulable(client, node, False, out)


class _Evictor:
    """Evicts one Pod (retrying while a budget refuses) and waits until it is gone."""

    def __init__(self, client: Client, out: Out, deadline: float) -> None:
        self.client = client
        self.out = out
        self.deadline = deadline
        self.lock = threading.Lock()

    def say(self, line: str) -> None:
        with self.lock:
            self.out(line)

    def __call__(self, pod: Pod) -> None:
        meta = pod.metadata
        assert meta is not None and meta.name is not None and meta.namespace is not None
        eviction = Pod.Eviction(metadata=ObjectMeta(name=meta.name, namespace=meta.namespace))
        while True:
            self.say(f"evicting pod {meta.namespace}/{meta.name}")
            try:
                self.client.create(eviction, name=meta.name, namespace=meta.namespace)
                break
            except ApiError as err:
                if is_not_found(err):
                    break
                if status_code(err) != 429:
                    raise KubeadmError(f'error when evicting pods/"{meta.name}" -n "{meta.namespace}": {err}') from err
                self.say(
                    f'error when evicting pods/"{meta.name}" -n "{meta.namespace}" (will retry after '
                    f"{EVICTION_RETRY_SECONDS:g}s): {err.status.message}"
                )
            if time.monotonic() + EVICTION_RETRY_SECONDS > self.deadline:
                raise KubeadmError(f"drain did not complete within the timeout: pod {meta.namespace}/{meta.name}")
            time.sleep(EVICTION_RETRY_SECONDS)
        self._wait_deleted(meta.name, meta.namespace, meta.uid)
        self.say(f"pod/{meta.name} evicted")

    def _wait_deleted(self, name: str, namespace: str, uid: str | None) -> None:
        while True:
            try:
                now = self.client.get(Pod, name, namespace=namespace)
                if now.metadata is None or now.metadata.uid != uid:
                    return  # a new Pod of the same name (a StatefulSet's): this one is gone
            except ApiError as err:
                if is_not_found(err):
                    return
            except httpx2.TransportError as err:  # the API server restarting: look again
                log.debug("waiting for pod %s/%s: %s", namespace, name, err)
            if time.monotonic() > self.deadline:
                raise KubeadmError(f"drain did not complete within the timeout: pod {namespace}/{name} still exists")
            time.sleep(_POLL)


def drain(client: Client, node: str, out: Out, opts: DrainOptions | None = None) -> None:
    """`kubectl drain NODE` with `opts`: cordon, evict the Pods kubectl would, wait until they are gone."""
    opts = opts or DrainOptions()
    cordon(client, node, out)
    pods = client.list(Pod, namespace="*", fields={"spec.nodeName": node})
    sel = pods_for_deletion(pods, opts)
    if sel.errors:
        raise KubeadmError(
            f'unable to drain node "{node}" due to error: {sel.error()}; the node stays cordoned: uncordon it with '
            f"'kubectl uncordon {node}'"
        )
    if sel.warnings:
        out(f"Warning: {sel.warning()}")
    if sel.pods:
        evict = _Evictor(client, out, time.monotonic() + opts.timeout)
        with ThreadPoolExecutor(max_workers=min(len(sel.pods), 16)) as pool:
            for done in [pool.submit(evict, pod) for pod in sel.pods]:
                done.result()
    out(f"node/{node} drained")
