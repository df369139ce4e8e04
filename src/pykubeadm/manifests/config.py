"""Adapt the v1beta4 config (ClusterConfiguration + the node's APIEndpoint) to the builders' `ClusterInputs`.

The only module of `manifests/` that knows the config API's attribute names; init, join and upgrade call it with
explicit facts about the node (node name, external-CA mode, which CA-trust directories exist, proxy environment).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from pykubeadm import constants as c
from pykubeadm.manifests.args import as_args
from pykubeadm.manifests.inputs import (
    CA_CERTS_EXTRA_DIRS,
    ClusterInputs,
    ComponentExtras,
    ExternalEtcdInputs,
    LocalEtcdInputs,
)
from pykubeadm.manifests.pod import EnvSpec, Mount, proxy_env

__all__ = ["component_extras", "env_specs", "inputs_from_config", "mounts"]


def env_specs(envs: Iterable[Any] | None) -> tuple[EnvSpec, ...]:
    out = []
    for e in envs or ():
        out.append(EnvSpec(e.name, getattr(e, "value", "") or "", getattr(e, "value_from", None)))
    return tuple(out)


def mounts(volumes: Iterable[Any] | None) -> tuple[Mount, ...]:
    """User extraVolumes; an unset pathType is written as `type: ""`, as kubeadm does."""
    return tuple(Mount(v.name, v.host_path, v.mount_path, bool(v.read_only), v.path_type or "") for v in volumes or ())


def component_extras(component: Any) -> ComponentExtras:
    return ComponentExtras(
        extra_args=tuple(as_args(component.extra_args)),
        extra_volumes=mounts(component.extra_volumes),
        extra_envs=env_specs(component.extra_envs),
    )


def inputs_from_config(
    cluster: Any,
    endpoint: Any,
    node_name: str,
    *,
    external_ca: bool = False,
    timeouts: Any = None,
    environ: Mapping[str, str] | None = None,
    dir_exists: Callable[[str], bool] | None = None,
) -> ClusterInputs:
    """`cluster` is a v1beta4 ClusterConfiguration, `endpoint` an APIEndpoint (advertiseAddress, bindPort).

    `dir_exists(node_path)` says whether a directory exists on the node (for the optional CA-trust mounts; default: on
    this machine's "/"); `environ` supplies the `*_proxy` variables (default: os.environ).
    """
    etcd = cluster.etcd
    local = None
    external = None
    if etcd.external is not None:
        ext = etcd.external
        external = ExternalEtcdInputs(tuple(ext.endpoints), ext.ca_file, ext.cert_file, ext.key_file)
    elif etcd.local is not None:
        loc = etcd.local
        local = LocalEtcdInputs(
            data_dir=loc.data_dir or c.DEFAULT_ETCD_DATA_DIR,
            extra_args=tuple(as_args(loc.extra_args)),
            extra_envs=env_specs(loc.extra_envs),
            image_repository=loc.image_repository,
            image_tag=loc.image_tag,
        )
    health: timedelta = (
        getattr(timeouts, "control_plane_component_health_check", None)
        or c.CONTROL_PLANE_COMPONENT_HEALTH_CHECK_TIMEOUT
    )
    exists = dir_exists or os.path.isdir
    return ClusterInputs(
        advertise_address=endpoint.advertise_address,
        node_name=node_name,
        bind_port=endpoint.bind_port or c.KUBE_APISERVER_PORT,
        kubernetes_version=cluster.kubernetes_version,
        image_repository=cluster.image_repository,
        certificates_dir=cluster.certificates_dir,
        service_subnet=cluster.networking.service_subnet,
        pod_subnet=cluster.networking.pod_subnet,
        dns_domain=cluster.networking.dns_domain,
        cluster_name=cluster.cluster_name,
        api_server=component_extras(cluster.api_server),
        controller_manager=component_extras(cluster.controller_manager),
        scheduler=component_extras(cluster.scheduler),
        local_etcd=local,
        external_etcd=external,
        external_ca=external_ca,
        health_check_timeout=health,
        proxy_env=tuple(proxy_env(environ)),
        ca_cert_dirs_present=frozenset(p for p in CA_CERTS_EXTRA_DIRS if exists(p)),
    )
