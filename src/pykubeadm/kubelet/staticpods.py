"""The static Pod source and manager: watch staticPodPath, start/stop/restart one PodWorker per manifest.

Every `poll` seconds (1 s) the directory is read: files not starting with "." holding a YAML/JSON Pod. A Pod's UID and
`kubernetes.io/config.hash` is a hash of its file content and the node name, so any change to a manifest replaces the
Pod (stop the old processes, start the new ones), a removed manifest stops it, and an unchanged one is left alone.
Used by the kubelet (`kubelet.Kubelet`) and by tests that need the runner alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykubeadm.kubelet.builtin.podworker import PodWorker
from pykubeadm.layout import Layout
from pykubeadm.util.yamlload import load_yaml

__all__ = ["StaticPod", "StaticPodManager", "read_static_pods"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StaticPod:
    """A manifest file's Pod, defaulted (namespace), with its config hash (also its UID)."""

    file: Path
    pod: dict[str, Any]
    hash: str

    @property
    def key(self) -> str:
        meta = self.pod["metadata"]
        return f"{meta.get('namespace', 'default')}/{meta['name']}"


def config_hash(content: bytes, node_name: str) -> str:
    return hashlib.md5(content + b"\x00" + node_name.encode(), usedforsecurity=False).hexdigest()


def read_static_pods(directory: Path, node_name: str) -> dict[str, StaticPod]:
    """Parse every manifest in `directory`; bad files are logged and skipped. Keyed by namespace/name."""
    pods: dict[str, StaticPod] = {}
    if not directory.is_dir():
        return pods
    for f in sorted(directory.iterdir()):
        if f.name.startswith(".") or not f.is_file():
            continue
        try:
            content = f.read_bytes()
            pod = load_yaml(content)
        except (OSError, yaml.YAMLError) as e:
            log.error("static pod manifest %s could not be read: %s", f, e)
            continue
        if not isinstance(pod, dict) or pod.get("kind") != "Pod" or not (pod.get("metadata") or {}).get("name"):
            log.error("static pod manifest %s is not a Pod with a name; ignoring it", f)
            continue
        pod["metadata"].setdefault("namespace", "default")
        if not pod["metadata"]["namespace"]:
            pod["metadata"]["namespace"] = "default"
        sp = StaticPod(f, pod, config_hash(content, node_name))
        if sp.key in pods:
            log.error("static pod %s is defined twice (%s, %s); using the first", sp.key, pods[sp.key].file, f)
            continue
        pods[sp.key] = sp
    return pods


class StaticPodManager:
    """Keeps one running PodWorker per manifest in `directory`."""

    def __init__(
        self,
        directory: Path,
        *,
        node_name: str,
        pod_ip: str,
        layout: Layout,
        poll: float = 1.0,
        etcd_binary: str | None = None,
        backoff_initial: float = 10.0,
        on_change: Callable[[], None] | None = None,
        observer: Callable[[PodWorker], None] | None = None,
    ):
        self.directory = directory
        self.node_name = node_name
        self.pod_ip = pod_ip
        self.layout = layout
        self.poll = poll
        self.etcd_binary = etcd_binary
        self.backoff_initial = backoff_initial
        self.on_change = on_change
        self.observer = observer  # every worker's changes (the kubelet's metrics)
        self.pods: dict[str, tuple[StaticPod, PodWorker]] = {}
        self._stopping = False

    def _notify(self, _: PodWorker | None = None) -> None:
        if self.on_change is not None:
            self.on_change()

    async def sync_once(self) -> None:
        """Reconcile the running workers with the directory's manifests."""
        desired = read_static_pods(self.directory, self.node_name)
        for key in list(self.pods):
            sp, worker = self.pods[key]
            if key not in desired or desired[key].hash != sp.hash:
                why = "removed" if key not in desired else "changed"
                log.info("static pod %s %s (%s); stopping it", key, why, sp.file)
                del self.pods[key]
                await worker.stop()
                self._notify()
        for key, sp in desired.items():
            if key in self.pods or self._stopping:
                continue
            worker = PodWorker(
                sp.pod,
                uid=sp.hash,
                node_name=self.node_name,
                pod_ip=self.pod_ip,
                layout=self.layout,
                etcd_binary=self.etcd_binary,
                on_change=self._notify,
                observer=self.observer,
                backoff_initial=self.backoff_initial,
            )
            self.pods[key] = (sp, worker)
            log.info("static pod %s found in %s; starting it", key, sp.file)
            worker.start()
            self._notify()

    async def run(self) -> None:
        """Poll the directory until cancelled; stop every Pod on the way out."""
        try:
            while True:
                try:
                    await self.sync_once()
                except OSError as e:
                    log.error("reading static pod path %s: %s", self.directory, e)
                await asyncio.sleep(self.poll)
        finally:
            await self.stop_all()

    async def stop_all(self) -> None:
        self._stopping = True
        workers = [w for _, w in self.pods.values()]
        self.pods.clear()
        with contextlib.suppress(Exception):
            await asyncio.gather(*(w.stop() for w in workers), return_exceptions=True)

    def all_pids(self) -> list[int]:
        return [pid for _, w in self.pods.values() for pid in w.pids()]
