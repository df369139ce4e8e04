"""The local-path provisioner's configuration: `config.json` and the helper Pod's setup/teardown scripts.

As Rancher's local-path-provisioner reads its ConfigMap `local-path-config`: `config.json` maps Nodes to base
directories (`nodePathMap`, the entry `DEFAULT_PATH_FOR_NON_LISTED_NODES` for every other Node), and the `setup` and
`teardown` scripts run in the helper Pod with `VOL_DIR`, `VOL_MODE` and `VOL_SIZE_BYTES` in their environment.
Errors name the key and what to write there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "DEFAULT_NODE",
    "DEFAULT_PATH",
    "DEFAULT_SETUP",
    "DEFAULT_TEARDOWN",
    "ConfigError",
    "ProvisionerConfig",
    "parse_config",
]

#: the nodePathMap entry every Node not listed uses
DEFAULT_NODE: Final = "DEFAULT_PATH_FOR_NON_LISTED_NODES"
#: where kind and k3s keep the volumes on each Node
DEFAULT_PATH: Final = "/var/local-path-provisioner"
DEFAULT_SETUP: Final = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
DEFAULT_TEARDOWN: Final = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'


class ConfigError(ValueError):
    """The configuration cannot be used (the message names the key and the fix)."""


@dataclass(frozen=True)
class ProvisionerConfig:
    node_paths: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {DEFAULT_NODE: (DEFAULT_PATH,)})
    setup: str = DEFAULT_SETUP
    teardown: str = DEFAULT_TEARDOWN

    def base_path(self, node: str) -> str:
        """The directory volumes of `node` are made in (the first configured one)."""
        paths = self.node_paths.get(node) or self.node_paths.get(DEFAULT_NODE)
        if not paths:
            raise ConfigError(f'config.json: no path for node "{node}": add it or {DEFAULT_NODE} to nodePathMap')
        return paths[0]


def parse_config(data: Mapping[str, str]) -> ProvisionerConfig:
    """The configuration from the ConfigMap's data (`config.json`, `setup`, `teardown`)."""
    try:
        doc: Any = json.loads(data.get("config.json") or "{}")
    except json.JSONDecodeError as err:
        raise ConfigError(f"config.json is not valid JSON: {err}") from err
    node_paths: dict[str, tuple[str, ...]] = {}
    for index, entry in enumerate(doc.get("nodePathMap") or []):
        node, paths = entry.get("node"), entry.get("paths")
        if not node or not isinstance(paths, list) or not paths:
            raise ConfigError(f"config.json: nodePathMap[{index}] needs a node and a non-empty list of paths")
        for path in paths:
            if not str(path).startswith("/") or str(path) == "/":
                raise ConfigError(f"config.json: nodePathMap[{index}]: path {path!r} must be absolute and not /")
        node_paths[str(node)] = tuple(str(p).rstrip("/") for p in paths)
    return ProvisionerConfig(
        node_paths or {DEFAULT_NODE: (DEFAULT_PATH,)},
        data.get("setup") or DEFAULT_SETUP,
        data.get("teardown") or DEFAULT_TEARDOWN,
    )
