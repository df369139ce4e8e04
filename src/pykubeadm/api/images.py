"""Container images kubeadm deploys (kubeadm's images.go): names, tags and the `config images list` order."""

from __future__ import annotations

import logging

from pykubeadm import constants as c
from pykubeadm.api.v1beta4 import ClusterConfiguration
from pykubeadm.api.versions import parse_version

__all__ = [
    "coredns_image",
    "etcd_image",
    "etcd_version_for",
    "images_list",
    "kubernetes_image",
    "pause_image",
]

log = logging.getLogger(__name__)


def _tag(version: str) -> str:
    return version.replace("+", "_")


def _is_ci(cluster: ClusterConfiguration) -> bool:
    return cluster.kubernetes_version.startswith("ci/")


def kubernetes_image(component: str, cluster: ClusterConfiguration) -> str:
    """`<repo>/<component>:<version>` for kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy."""
    repo = c.CI_IMAGE_REPOSITORY if _is_ci(cluster) else cluster.image_repository
    version = cluster.kubernetes_version.removeprefix("ci/")
    return f"{repo}/{component}:{_tag(version)}"


def etcd_version_for(kubernetes_version: str, *, warn: bool = True) -> str:
    """SupportedEtcdVersion for the control-plane minor; nearest known entry (with kubeadm's warning) otherwise."""
    try:
        minor = parse_version(kubernetes_version.removeprefix("ci/"))[1]
    except ValueError:
        return c.DEFAULT_ETCD_VERSION
    table = c.SUPPORTED_ETCD_VERSION
    if minor in table:
        return table[minor]
    nearest = min(table) if minor < min(table) else max(table)
    if warn:
        log.warning(
            "could not find officially supported version of etcd for Kubernetes %s, falling back to the nearest etcd "
            "version (%s)",
            kubernetes_version,
            table[nearest],
        )
    return table[nearest]


def etcd_image(cluster: ClusterConfiguration) -> str:
    local = cluster.etcd.local
    repo = (local.image_repository if local else "") or cluster.image_repository
    tag = (local.image_tag if local else "") or etcd_version_for(cluster.kubernetes_version)
    return f"{repo}/{c.ETCD}:{tag}"


def coredns_image(cluster: ClusterConfiguration) -> str:
    tag = cluster.dns.image_tag or c.COREDNS_VERSION
    if cluster.dns.image_repository:
        return f"{cluster.dns.image_repository}/{c.COREDNS}:{tag}"
    if cluster.image_repository == c.DEFAULT_IMAGE_REPOSITORY:
        return f"{c.DEFAULT_IMAGE_REPOSITORY}/{c.COREDNS}/{c.COREDNS}:{tag}"
    return f"{cluster.image_repository}/{c.COREDNS}:{tag}"


def pause_image(cluster: ClusterConfiguration) -> str:
    return f"{cluster.image_repository}/{c.PAUSE}:{c.PAUSE_VERSION}"


def images_list(cluster: ClusterConfiguration) -> list[str]:
    """The images `config images list` prints, in kubeadm's order (kubernetesVersion must be resolved already)."""
    images = [kubernetes_image(name, cluster) for name in c.CONTROL_PLANE_COMPONENTS]
    if not cluster.proxy.disabled:
        images.append(kubernetes_image(c.KUBE_PROXY, cluster))
    if not cluster.dns.disabled:
        images.append(coredns_image(cluster))
    images.append(pause_image(cluster))
    if cluster.etcd.local is not None:
        images.append(etcd_image(cluster))
    return images
