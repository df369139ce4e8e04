"""The built-in runtime's Pod network: each non-hostNetwork Pod in a network namespace of its own, attached through
the node's CNI configuration (what containerd's CRI plugin does for its sandboxes).

Owned by the kubelet when it runs with `--cni-conf-dir`. `status()` is the runtime's NetworkReady condition: not
ready (the real kubelet's message, `NETWORK_NOT_READY`) until the conf dir holds a valid configuration; `watch()`
follows the directory with inotify as containerd's CNI config syncer does (fsnotify; asyncinotify here), re-reads it
at each change and reports the changes (the Node's Ready condition follows at once, and so do the Pods waiting for
the network, `wait_change()`). `attach()` makes the
sandbox's namespace (`<pod dir>/netns`, kubelet.builtin.netns), runs CNI ADD for `lo` (the loopback plugin, as containerd)
and `eth0` (the node's network, `CNI_ARGS` with the Pod's K8S_POD_* names, `portMappings` from its hostPorts) and
returns the Pod's addresses; a namespace a previous kubelet attached is adopted from the CNI result cache.
`detach()` runs DEL from the cache (also for a namespace lost in a reboot) and removes the namespace; `collect()`
does that for every cached attachment whose Pod is gone, so host-local leaks no address across kubelet restarts.
`unpin_all()` unmounts every pinned namespace of a node that is going away (`lab down`).

The node's files are under its root directory: the cache lives at `<root>/var/lib/cni`, and host-local's `dataDir`
(default /var/lib/cni/networks) is a node path too, placed under the root before the plugins see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from asyncinotify import Inotify, Mask

from pykubeadm.cni import (
    CacheEntry,
    CNIError,
    CNIRuntime,
    ConfigError,
    NetworkConfigList,
    RuntimeConf,
    load_conf_dir,
    parse_network_config,
    pod_ips,
)
from pykubeadm.kubelet.builtin import netns
from pykubeadm.layout import Layout

__all__ = ["NETWORK_NOT_READY", "NETWORK_NOT_READY_MSG", "PodNetwork", "netns_path", "port_mappings", "unpin_all"]

log = logging.getLogger(__name__)

#: The runtime network error the kubelet reports in the Node's Ready condition (containerd without a CNI config).
NETWORK_NOT_READY = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)
#: The kubelet's NetworkNotReadyErrorMsg: a Pod's sync fails with it (event reason NetworkNotReady).
NETWORK_NOT_READY_MSG = "network is not ready"
#: What in the conf dir makes the network be read again: a file written, moved in or out, removed (kindnet writes
#: its conflist to a temporary file and renames it), or the directory itself going away.
_CONF_DIR_EVENTS = (
    Mask.CREATE | Mask.CLOSE_WRITE | Mask.MOVED_TO | Mask.MOVED_FROM | Mask.DELETE | Mask.DELETE_SELF | Mask.MOVE_SELF
)
#: The full re-read besides inotify's events; the reading interval where inotify cannot be had.
_RESYNC = 10.0
_POLL = 1.0
#: host-local's default store.
_HOST_LOCAL_DIR = "/var/lib/cni/networks"
#: containerd's loopback network for every sandbox.
_LOOPBACK = json.dumps(
    {"cniVersion": "0.3.1", "name": "cni-loopback", "plugins": [{"type": "loopback"}]}, separators=(",", ":")
).encode()


def netns_path(pod_dir: Path) -> Path:
    """Where a Pod's network namespace is pinned."""
    return pod_dir / "netns"


def unpin_all(layout: Layout) -> list[Path]:
    """Unmount and remove every Pod network namespace pinned under the node's root (a node taken down for good,
    whose network namespace and host-local store go with it); the files removed. Raises NetnsError naming a file
    that cannot be unmounted."""
    removed = []
    for path in sorted(layout.kubelet_pods_dir.glob("*/netns")):
        netns.remove(path)
        removed.append(path)
    return removed


def port_mappings(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Pod's hostPorts as portmap's `portMappings` capability (containerd's form: lower-case protocol)."""
    spec = pod.get("spec") or {}
    out: list[dict[str, Any]] = []
    for ct in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for p in ct.get("ports") or []:
            if not p.get("hostPort"):
                continue
            mapping: dict[str, Any] = {
                "hostPort": int(p["hostPort"]),
                "containerPort": int(p.get("containerPort") or p["hostPort"]),
                "protocol": str(p.get("protocol") or "TCP").lower(),
            }
            if p.get("hostIP"):
                mapping["hostIP"] = str(p["hostIP"])
            out.append(mapping)
    return out


class PodNetwork:
    """The node's CNI network: readiness from `conf_dir`, plugins from `bin_dirs`, results cached in `cache_dir`."""

    def __init__(self, conf_dir: Path, bin_dirs: Sequence[str], cache_dir: Path, layout: Layout):
        self.conf_dir = conf_dir
        self.layout = layout
        self.runtime = CNIRuntime(bin_dirs, cache_dir)
        self.network: NetworkConfigList | None = None
        self._problem: str | None = None
        self._changed: asyncio.Event | None = None

    # --- readiness ----------------------------------------------------------------------------------------------
    def sync(self) -> bool:
        """Re-read the conf dir; True when the network's readiness or configuration changed."""
        before = self.network
        try:
            self.network = load_conf_dir(self.conf_dir)
            problem = None
        except ConfigError as e:
            self.network, problem = None, str(e)
        if problem != self._problem and problem:
            log.error("failed to load cni configuration: %s", problem)
        self._problem = problem
        if (before is None) != (self.network is None):
            log.info("CNI network %s", f"{self.network.name!r} from {self.network.source}" if self.network else "gone")
        return (before.raw if before else None) != (self.network.raw if self.network else None)

    def status(self) -> str | None:
        """The runtime's network error (None: NetworkReady)."""
        return None if self.network is not None else NETWORK_NOT_READY

    async def wait_change(self, timeout: float) -> None:
        """Return when the network's configuration changes (`watch` saw it), or after `timeout` seconds."""
        if self._changed is None:
            self._changed = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    async def _resync(self, on_change: Callable[[], None]) -> None:
        if await asyncio.to_thread(self.sync):
            on_change()
            if self._changed is not None:
                self._changed.set()
                self._changed = None  # the next waiters wait for the next change

    async def watch(self, on_change: Callable[[], None], resync: float = _RESYNC) -> None:
        """Follow the conf dir, made if missing (containerd makes it too): re-read it on each inotify event in it, and
        every `resync` seconds besides; where inotify cannot be had (its limits reached), every `_POLL` seconds."""
        while True:
            await self._resync(on_change)
            try:
                self.conf_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                inotify = Inotify()
            except OSError as e:
                log.warning("cannot watch %s (%s): reading it every %gs", self.conf_dir, e, _POLL)
                await asyncio.sleep(_POLL)
                continue
            with inotify:
                try:
                    inotify.add_watch(self.conf_dir, _CONF_DIR_EVENTS)
                except OSError as e:  # the directory went away meanwhile: make it again
                    log.warning("cannot watch %s: %s", self.conf_dir, e)
                    await asyncio.sleep(_POLL)
                    continue
                while True:
                    try:
                        event = await asyncio.wait_for(inotify.get(), resync)
                    except TimeoutError:
                        event = None
                    await self._resync(on_change)
                    if event is not None and event.mask & (Mask.IGNORED | Mask.DELETE_SELF | Mask.MOVE_SELF):
                        break  # the directory itself is gone: watch it again once made

    # --- attachments --------------------------------------------------------------------------------------------
    def _node_view(self, net: NetworkConfigList) -> NetworkConfigList:
        """`net` with host-local's dataDir placed under the node's root (as every node path of the runtime)."""
        if str(self.layout.root) == "/":
            return net
        doc = json.loads(net.raw)
        changed = False
        for plugin in doc.get("plugins") or []:
            ipam = plugin.get("ipam") if isinstance(plugin, dict) else None
            if isinstance(ipam, dict) and ipam.get("type") == "host-local":
                ipam["dataDir"] = str(self.layout.host(str(ipam.get("dataDir") or _HOST_LOCAL_DIR)))
                changed = True
        if not changed:
            return net
        return parse_network_config(json.dumps(doc).encode(), net.source, single=False)

    def _entries(self, uid: str) -> list[CacheEntry]:
        return [e for e in self.runtime.cached_entries() if e.rt.container_id == uid]

    def adopted(self, uid: str, pod_dir: Path) -> list[str] | None:
        """The addresses of an attachment a previous kubelet made and that still stands, else None."""
        if not netns.is_netns(netns_path(pod_dir)):
            return None
        for entry in self._entries(uid):
            if entry.rt.ifname == "eth0" and entry.result is not None:
                ips = pod_ips(entry.result)
                if ips:
                    return ips
        return None

    def attach(self, pod: Mapping[str, Any], uid: str, pod_dir: Path) -> list[str]:
        """Make the Pod's namespace and attach it (lo, then eth0); its addresses. CNIError/OSError when it failed
        (then nothing of it is left: DEL ran, the namespace is gone)."""
        ips = self.adopted(uid, pod_dir)
        if ips is not None:
            return ips
        if self.network is None:
            raise CNIError("", "ADD", 0, "cni plugin not initialized")
        net = self._node_view(self.network)
        path = netns_path(pod_dir)
        meta = pod.get("metadata") or {}
        args = (
            ("IgnoreUnknown", "1"),
            ("K8S_POD_NAMESPACE", str(meta.get("namespace") or "default")),
            ("K8S_POD_NAME", str(meta.get("name") or "")),
            ("K8S_POD_INFRA_CONTAINER_ID", uid),
            ("K8S_POD_UID", uid),
        )
        eth0 = RuntimeConf(uid, str(path), "eth0", args, {"portMappings": port_mappings(pod)})
        if path.exists() or self._entries(uid):  # what an interrupted attempt left: DEL it first
            self.detach(uid, pod_dir, fallback=net, rt=eth0)
        netns.create(path)
        try:
            self.runtime.add(parse_network_config(_LOOPBACK, "loopback"), RuntimeConf(uid, str(path), "lo", args))
            ips = pod_ips(self.runtime.add(net, eth0))
            if not ips:
                raise CNIError(str(net.plugins[-1].get("type")), "ADD", 0, "the network gave the Pod no address")
        except BaseException:
            try:
                self.detach(uid, pod_dir, fallback=net, rt=eth0)
            except (CNIError, OSError) as e:
                log.warning("cleaning up the failed attachment of pod %s: %s", uid, e)
            raise
        return ips

    def detach(
        self,
        uid: str,
        pod_dir: Path | None,
        *,
        fallback: NetworkConfigList | None = None,
        rt: RuntimeConf | None = None,
    ) -> None:
        """DEL every cached attachment of the Pod (or `fallback` with `rt` when nothing was cached), then remove its
        namespace. Raises CNIError when a plugin failed (the cache entry stays for the next try)."""
        path = netns_path(pod_dir) if pod_dir is not None else None
        live = str(path) if path is not None and netns.is_netns(path) else ""
        entries = self._entries(uid)
        for entry in entries:
            self.runtime.delete(None, RuntimeConf(uid, live, entry.rt.ifname), name=entry.network.name)
        if not any(e.rt.ifname == "eth0" for e in entries) and fallback is not None and rt is not None:
            self.runtime.delete(fallback, RuntimeConf(uid, live, rt.ifname, rt.args, rt.capability_args))
        if path is not None:
            netns.remove(path)

    def collect(self, keep: Callable[[str], bool], pod_dir: Callable[[str], Path]) -> None:
        """DEL the cached attachments of every Pod `keep` says is gone (a kubelet restarted after they were
        deleted), removing their namespaces."""
        for uid in sorted({e.rt.container_id for e in self.runtime.cached_entries()}):
            if keep(uid):
                continue
            log.info("releasing the network of pod %s, which is gone", uid)
            try:
                self.detach(uid, pod_dir(uid))
            except (CNIError, OSError) as e:
                log.warning("releasing the network of pod %s: %s", uid, e)
