"""The node's CNI network configuration: one network configuration list loaded from a directory.

As containerd's CRI plugin (go-cni) loads `conf_dir` with one network: the files ending in `.conf`, `.conflist` or
`.json` sorted by name, the first one loaded; a single-plugin `.conf` becomes a list of one plugin, as libcni's
ConfListFromConf makes it. A file that cannot be read as JSON, has no `name`, no plugins, or a plugin without `type` is
a `ConfigError` naming the file (go-cni fails the load there too, so the network stays not ready until it is fixed).
No file at all is `None`: the runtime's network is not ready yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CONF_EXTENSIONS", "ConfigError", "NetworkConfigList", "load_conf_dir", "parse_network_config"]

#: The extensions libcni's ConfFiles reads from a configuration directory.
CONF_EXTENSIONS = (".conf", ".conflist", ".json")


class ConfigError(ValueError):
    """A network configuration file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class NetworkConfigList:
    """A network configuration list: its `name`, `cniVersion`, plugin configurations in order, and the bytes it was
    read from (cached with each attachment, so DEL runs with the configuration ADD ran with)."""

    name: str
    cni_version: str
    plugins: tuple[dict[str, Any], ...]
    raw: bytes
    source: str = ""
    disable_check: bool = False


def parse_network_config(data: bytes, source: str = "<config>", *, single: bool | None = None) -> NetworkConfigList:
    """A configuration list from a `.conflist` document, or from a single-plugin `.conf` document (`single`; by
    default decided by the presence of `plugins`)."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"error parsing configuration list {source}: {e}") from e
    if not isinstance(doc, dict):
        raise ConfigError(f"error parsing configuration list {source}: not a JSON object")
    if single is None:
        single = "plugins" not in doc
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"error parsing configuration list {source}: no name")
    version = doc.get("cniVersion") or ""
    if not isinstance(version, str):
        raise ConfigError(f"error parsing configuration list {source}: cniVersion must be a string")
    if single:
        if not doc.get("type"):
            raise ConfigError(f"network type not found in {source}")
        raw = json.dumps({"cniVersion": version, "name": name, "plugins": [doc]}, separators=(",", ":")).encode()
        return NetworkConfigList(name, version, (doc,), raw, source)
    plugins = doc.get("plugins")
    if not isinstance(plugins, list) or not plugins:
        raise ConfigError(f"CNI config list in config file {source} has no networks")
    for i, plugin in enumerate(plugins):
        if not isinstance(plugin, dict) or not plugin.get("type"):
            raise ConfigError(f"error parsing configuration list {source}: plugin {i} has no type")
    return NetworkConfigList(
        name, version, tuple(plugins), bytes(data), source, disable_check=bool(doc.get("disableCheck"))
    )


def conf_files(conf_dir: Path) -> list[Path]:
    """The configuration files of `conf_dir`, in the order they are tried (by name); [] when it does not exist."""
    try:
        entries = list(conf_dir.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(p for p in entries if p.suffix in CONF_EXTENSIONS and p.is_file())


def load_conf_dir(conf_dir: Path) -> NetworkConfigList | None:
    """The network of `conf_dir`: its lowest-sorting configuration file, None when there is none."""
    files = conf_files(conf_dir)
    if not files:
        return None
    first = files[0]
    try:
        data = first.read_bytes()
    except OSError as e:
        raise ConfigError(f"failed to load CNI config file {first}: {e.strerror}") from e
    return parse_network_config(data, str(first), single=first.suffix != ".conflist")
