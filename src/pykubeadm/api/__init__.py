"""The kubeadm config API (v1beta4, reading v1beta3): models, defaulting, validation, component configs, YAML I/O.

Public entry points (others code against these names):
  InitConfig, load_init_config, load_join_config, load_reset_config, load_upgrade_config,
  dump_init_config, dump_cluster_configuration,
  api_server_service_ip, dns_service_ip, control_plane_endpoint_url, local_api_endpoint_url.
Models live in `pykubeadm.api.v1beta4` (re-exported here).
"""

from __future__ import annotations

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
