"""The kubeadm config API (v1beta4, reading v1beta3): models, defaulting, validation, component configs, YAML I/O.

Public entry points (others code against these names):
  InitConfig, load_init_config, load_join_config, load_reset_config, load_upgrade_config,
  dump_init_config, dump_cluster_configuration,
  api_server_service_ip, dns_service_ip, control_plane_endpoint_url, local_api_endpoint_url.
Models live in `pykubeadm.api.v1beta4` (re-exported here).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykubeadm.api._base import format_duration, parse_duration
    from pykubeadm.api.loader import (
        InitConfig,
        component_configs,
        dump_cluster_configuration,
        dump_init_config,
        load_init_config,
        load_join_config,
        load_reset_config,
        load_upgrade_config,
        migrate_config,
        validate_config_file,
    )
    from pykubeadm.api.netutil import (
        api_server_service_ip,
        control_plane_endpoint_url,
        dns_service_ip,
        endpoint_url,
        local_api_endpoint_url,
    )
    from pykubeadm.api.v1beta4 import (
        APIEndpoint,
        APIServer,
        Arg,
        BootstrapToken,
        ClusterConfiguration,
        ControlPlaneComponent,
        EnvVar,
        Etcd,
        ExternalEtcd,
        HostPathMount,
        InitConfiguration,
        JoinConfiguration,
        LocalEtcd,
        Networking,
        NodeRegistrationOptions,
        Patches,
        ResetConfiguration,
        Taint,
        Timeouts,
        UpgradeConfiguration,
    )

__all__ = [
    "APIEndpoint",
    "APIServer",
    "Arg",
    "BootstrapToken",
    "ClusterConfiguration",
    "ControlPlaneComponent",
    "EnvVar",
    "Etcd",
    "ExternalEtcd",
    "HostPathMount",
    "InitConfig",
    "InitConfiguration",
    "JoinConfiguration",
    "LocalEtcd",
    "Networking",
    "NodeRegistrationOptions",
    "Patches",
    "ResetConfiguration",
    "Taint",
    "Timeouts",
    "UpgradeConfiguration",
    "api_server_service_ip",
    "component_configs",
    "control_plane_endpoint_url",
    "dns_service_ip",
    "dump_cluster_configuration",
    "dump_init_config",
    "endpoint_url",
    "format_duration",
    "load_init_config",
    "load_join_config",
    "load_reset_config",
    "load_upgrade_config",
    "local_api_endpoint_url",
    "migrate_config",
    "parse_duration",
    "validate_config_file",
]

#: Public name → the module that defines it. Imported on first use (PEP 562), so a command that needs only
#: `pykubeadm.api.versions` (`pykubeadm version`) does not load msgspec and every model.
_WHERE = {
    **dict.fromkeys(("format_duration", "parse_duration"), "_base"),
    **dict.fromkeys(
        (
            "InitConfig",
            "component_configs",
            "dump_cluster_configuration",
            "dump_init_config",
            "load_init_config",
            "load_join_config",
            "load_reset_config",
            "load_upgrade_config",
            "migrate_config",
            "validate_config_file",
        ),
        "loader",
    ),
    **dict.fromkeys(
        (
            "api_server_service_ip",
            "control_plane_endpoint_url",
            "dns_service_ip",
            "endpoint_url",
            "local_api_endpoint_url",
        ),
        "netutil",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE.get(name, 'v1beta4')}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
