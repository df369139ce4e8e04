"""The CNI plugin protocol (the CNI specification's ADD, CHECK and DEL) over a network configuration list, with a
result cache.

`CNIRuntime.add` runs the list's plugins in order; each gets its own configuration on stdin with the list's `name` and
`cniVersion`, `prevResult` (the result of the plugin before it), and `runtimeConfig` holding the runtime's capability
arguments the plugin declares in `capabilities` (`portMappings` for portmap). The environment carries `CNI_COMMAND`,
`CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_ARGS` (`K=V;K=V`) and `CNI_PATH`. The last plugin's result is the
attachment's result; it is cached per (network, container, interface) in `<cache_dir>/results/<network>-<container>-
<ifname>` (libcni's file and format), together with the configuration, the arguments and the capability arguments, so
that `check` and `delete` work after the runtime restarted: DEL runs the plugins in reverse order with the cached
configuration (or, without a cache entry, the one given) and the cached result as `prevResult`, then drops the entry.
A plugin's failure is a `CNIError` carrying the code and message of the plugin's JSON error.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubeadm.cni.confdir import ConfigError, NetworkConfigList, parse_network_config
from pykubeadm.util.fs import write_file_atomic

__all__ = ["CNIError", "CNIRuntime", "CacheEntry", "RuntimeConf", "pod_ips"]

log = logging.getLogger(__name__)

#: The kind libcni writes into a cached attachment.
CACHE_KIND = "cniCacheV1"
#: Seconds one plugin may run before it is killed.
PLUGIN_TIMEOUT = 60.0
#: CNI's well-known error code for an internal error (and ours for a plugin that gave no JSON error).
ERR_INTERNAL = 999


class CNIError(RuntimeError):
    """A plugin failed: `code` and `msg` (and `details`) of its JSON error, with the plugin and the command."""

    def __init__(self, plugin: str, command: str, code: int, msg: str, details: str = ""):
        self.plugin, self.command, self.code, self.msg, self.details = plugin, command, code, msg, details
        text = f"{msg}; {details}" if details else msg
        super().__init__(f'plugin type="{plugin}" failed ({command.lower()}): {text}')


@dataclass(frozen=True)
class RuntimeConf:
    """One attachment: the container (sandbox) id, its network namespace's path, the interface name, CNI_ARGS and
    the capability arguments (`portMappings`, ...)."""

    container_id: str
    netns: str
    ifname: str = "eth0"
    args: tuple[tuple[str, str], ...] = ()
    capability_args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheEntry:
    """A cached attachment: its runtime configuration, network configuration and result."""

    rt: RuntimeConf
    network: NetworkConfigList
    result: dict[str, Any] | None


def pod_ips(result: Mapping[str, Any]) -> list[str]:
    """The addresses (without prefix length) of a 0.3.0+ result that sit on an interface inside the sandbox (all
    addresses when the result names no interfaces)."""
    ifaces = result.get("interfaces") or []
    out: list[str] = []
    for ip in result.get("ips") or []:
        index = ip.get("interface")
        if isinstance(index, int) and 0 <= index < len(ifaces) and not ifaces[index].get("sandbox"):
            continue
        address = str(ip.get("address") or "").split("/", 1)[0]
        if address:
            out.append(address)
    return out


def _version_tuple(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in version.split("."))
    except ValueError:
        return (0,)


class CNIRuntime:
    """Runs plugins found in `bin_dirs` (CNI_PATH), caching results under `cache_dir` (libcni's /var/lib/cni)."""

    def __init__(self, bin_dirs: Sequence[str], cache_dir: Path, *, timeout: float = PLUGIN_TIMEOUT):
        self.bin_dirs = [str(d) for d in bin_dirs if str(d)]
        self.cache_dir = Path(cache_dir)
        self.timeout = timeout

    # --- the commands -------------------------------------------------------------------------------------------
    def add(self, net: NetworkConfigList, rt: RuntimeConf) -> dict[str, Any]:
        """ADD: every plugin in order; the last result, also cached."""
        result: dict[str, Any] | None = None
        for plugin in net.plugins:
            result = self._exec("ADD", self._plugin_config(net, plugin, result, rt), rt)
        if result is None:
            raise CNIError(str(net.plugins[-1].get("type")), "ADD", ERR_INTERNAL, "plugin returned no result")
        self._write_cache(net, rt, result)
        return result

    def check(self, net: NetworkConfigList, rt: RuntimeConf) -> None:
        """CHECK: every plugin in order, with the cached result as prevResult (cniVersion 0.4.0 and later)."""
        if _version_tuple(net.cni_version) < (0, 4, 0):
            raise CNIError(
                "", "CHECK", 2, f'configuration version "{net.cni_version}" does not support the CHECK command'
            )
        if net.disable_check:
            return
        entry = self.cached(net.name, rt.container_id, rt.ifname)
        if entry is None or entry.result is None:
            raise CNIError("", "CHECK", ERR_INTERNAL, f"no cached result for {net.name}/{rt.container_id}/{rt.ifname}")
        for plugin in net.plugins:
            self._exec("CHECK", self._plugin_config(net, plugin, entry.result, rt), rt)

    def delete(self, net: NetworkConfigList | None, rt: RuntimeConf, *, name: str | None = None) -> bool:
        """DEL: the plugins in reverse order with the cached configuration and result (the configuration given when
        nothing is cached), then the cache entry goes. False when there was neither (nothing to do)."""
        entry = self.cached(name or (net.name if net else ""), rt.container_id, rt.ifname)
        if entry is not None:
            net = entry.network
            rt = RuntimeConf(rt.container_id, rt.netns, rt.ifname, entry.rt.args, entry.rt.capability_args)
        if net is None:
            return False
        prev = entry.result if entry is not None and _version_tuple(net.cni_version) >= (0, 4, 0) else None
        for plugin in reversed(net.plugins):
            self._exec("DEL", self._plugin_config(net, plugin, prev, rt), rt)
        self._cache_path(net.name, rt.container_id, rt.ifname).unlink(missing_ok=True)
        return True

    # --- the cache ----------------------------------------------------------------------------------------------
    def _cache_path(self, network: str, container_id: str, ifname: str) -> Path:
        return self.cache_dir / "results" / f"{network}-{container_id}-{ifname}"

    def _write_cache(self, net: NetworkConfigList, rt: RuntimeConf, result: dict[str, Any]) -> None:
        doc = {
            "kind": CACHE_KIND,
            "containerId": rt.container_id,
            "config": base64.b64encode(net.raw).decode(),
            "ifName": rt.ifname,
            "networkName": net.name,
            "netns": rt.netns,
            "cniArgs": [list(kv) for kv in rt.args],
            "capabilityArgs": dict(rt.capability_args),
            "result": result,
        }
        path = self._cache_path(net.name, rt.container_id, rt.ifname)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_file_atomic(path, json.dumps(doc).encode(), 0o600)

    def _read_entry(self, path: Path) -> CacheEntry | None:
        try:
            doc = json.loads(path.read_bytes())
            if doc.get("kind") != CACHE_KIND:
                return None
            net = parse_network_config(base64.b64decode(doc["config"]), str(path), single=False)
            rt = RuntimeConf(
                str(doc["containerId"]),
                str(doc.get("netns") or ""),
                str(doc["ifName"]),
                tuple((str(k), str(v)) for k, v in doc.get("cniArgs") or []),
                dict(doc.get("capabilityArgs") or {}),
            )
        except (OSError, ValueError, KeyError, TypeError, ConfigError) as e:
            log.warning("ignoring the unreadable CNI cache entry %s: %s", path, e)
            return None
        result = doc.get("result")
        return CacheEntry(rt, net, result if isinstance(result, dict) else None)

    def cached(self, network: str, container_id: str, ifname: str) -> CacheEntry | None:
        """The cached attachment of `container_id` on `network` through `ifname`, or None."""
        path = self._cache_path(network, container_id, ifname)
        return self._read_entry(path) if path.exists() else None

    def cached_entries(self) -> list[CacheEntry]:
        """Every cached attachment (a restarted runtime's garbage collection: DEL those whose sandbox is gone)."""
        results = self.cache_dir / "results"
        if not results.is_dir():
            return []
        entries = (self._read_entry(p) for p in sorted(results.iterdir()) if not p.name.startswith("."))
        return [e for e in entries if e is not None]

    # --- one plugin ---------------------------------------------------------------------------------------------
    @staticmethod
    def _plugin_config(
        net: NetworkConfigList, plugin: Mapping[str, Any], prev: Mapping[str, Any] | None, rt: RuntimeConf
    ) -> dict[str, Any]:
        conf = dict(plugin)
        conf["name"] = net.name
        conf["cniVersion"] = net.cni_version
        if prev is not None:
            conf["prevResult"] = prev
        caps = plugin.get("capabilities") or {}
        runtime_config = {k: v for k, v in rt.capability_args.items() if caps.get(k)}
        if runtime_config:
            conf["runtimeConfig"] = runtime_config
        return conf

    def find_plugin(self, kind: str) -> str:
        """The plugin binary `kind` in the first bin dir that has it, or CNIError as libcni words it."""
        if "/" not in kind:
            for d in self.bin_dirs:
                path = os.path.join(d, kind)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    return path
        raise CNIError(
            kind, "find", ERR_INTERNAL, f'failed to find plugin "{kind}" in path [{" ".join(self.bin_dirs)}]'
        )

    def _exec(self, command: str, conf: dict[str, Any], rt: RuntimeConf) -> dict[str, Any]:
        kind = str(conf.get("type") or "")
        binary = self.find_plugin(kind)
        env = dict(os.environ)
        env.update(
            {
                "CNI_COMMAND": command,
                "CNI_CONTAINERID": rt.container_id,
                "CNI_NETNS": rt.netns,
                "CNI_IFNAME": rt.ifname,
                "CNI_ARGS": ";".join(f"{k}={v}" for k, v in rt.args),
                "CNI_PATH": os.pathsep.join(self.bin_dirs),
            }
        )
        try:
            res = subprocess.run(
                [binary],
                input=json.dumps(conf).encode(),
                env=env,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise CNIError(kind, command, ERR_INTERNAL, f"timed out after {self.timeout:.0f}s") from e
        except OSError as e:
            raise CNIError(kind, command, ERR_INTERNAL, f"cannot run {binary}: {e.strerror}") from e
        out = res.stdout.strip()
        if res.returncode != 0:
            raise self._plugin_error(kind, command, out, res.stderr, res.returncode)
        if command != "ADD" or not out:
            return {}
        try:
            result = json.loads(out)
        except ValueError as e:
            raise CNIError(kind, command, ERR_INTERNAL, f"invalid result {out[:200]!r}: {e}") from e
        if not isinstance(result, dict):
            raise CNIError(kind, command, ERR_INTERNAL, f"invalid result {out[:200]!r}")
        return result

    @staticmethod
    def _plugin_error(kind: str, command: str, out: bytes, err: bytes, code: int) -> CNIError:
        try:
            doc = json.loads(out)
            if isinstance(doc, dict) and "msg" in doc:
                return CNIError(
                    kind, command, int(doc.get("code") or ERR_INTERNAL), str(doc["msg"]), str(doc.get("details") or "")
                )
        except ValueError:
            pass
        text = (err or out).decode(errors="replace").strip() or f"exit status {code}"
        return CNIError(kind, command, ERR_INTERNAL, text)
