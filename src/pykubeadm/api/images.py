"""Container images kubeadm deploys (kubeadm's images.go): names, tags and the `config images list` order.

The one home of image names: `config images list`, the preflight image pulls, the kubelet's pause image and the
static Pod builders (`manifests/`, which pass explicit values to the `*_for` functions instead of the config).
`<repo>/<component>:<tag>` with the tag being the Kubernetes version (`+` → `_`); CI versions (`ci/...`) use the CI
repository; etcd uses `etcd.local.imageRepository/imageTag` when set, else the etcd version kubeadm supports for that
control-plane minor.
"""

from __future__ import annotations

import logging

from pykubeadm import constants as c
from pykubeadm.api.v1beta4 import ClusterConfiguration
from pykubeadm.api.versions import parse_version

__all__ = [
    "coredns_image",
    "etcd_image",
    "etcd_image_for",
    "etcd_version_for",
    "image_tag",
    "images_list",
    "kubernetes_image",
    "kubernetes_image_for",
    "pause_image",
]

log = logging.getLogger(__name__)


def image_tag(version: str) -> str:
    """`v1.33.0+abc` → `v1.33.0_abc`; a `ci/` prefix is dropped."""
    return version.removeprefix("ci/").replace("+", "_")


def kubernetes_image_for(component: str, image_repository: str, kubernetes_version: str) -> str:
    """`<repo>/<component>:<version>` for kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy."""
    repo = c.CI_IMAGE_REPOSITORY if kubernetes_version.startswith("ci/") else image_repository
    return f"{repo}/{component}:{image_tag(kubernetes_version)}"


def kubernetes_image(component: str, cluster: ClusterConfiguration) -> str:
    return kubernetes_image_for(component, cluster.image_repository, cluster.kubernetes_version)


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


def etcd_image_for(
    image_repository: str, kubernetes_version: str, local_repository: str = "", local_tag: str = ""
) -> str:
    repo = local_repository or image_repository
    tag = local_tag or etcd_version_for(kubernetes_version)
    return f"{repo}/{c.ETCD}:{tag}"


def etcd_image(cluster: ClusterConfiguration) -> str:
    local = cluster.etcd.local
    return etcd_image_for(
        cluster.image_repository,
        cluster.kubernetes_version,
        local.image_repository if local else "",
        local.image_tag if local else "",
    )


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
