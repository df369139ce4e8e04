"""Image names of the static Pods and the pause image, from explicit values (the builders do not see the config).

`<repo>/<component>:<tag>` with the tag being the Kubernetes version (`+` → `_`); CI versions (`ci/...`) use the CI
repository; etcd uses `etcd.local.imageRepository/imageTag` when set, else the etcd version kubeadm supports for that
control-plane minor (`pykubeadm.api.images.etcd_version_for`, the one home of that table lookup).
"""

from __future__ import annotations

from pykubeadm import constants as c
from pykubeadm.api.images import etcd_version_for

__all__ = ["etcd_image", "image_tag", "kubernetes_image", "pause_image"]


def image_tag(version: str) -> str:
    """`v1.33.0+abc` → `v1.33.0_abc`; a `ci/` prefix is dropped."""
    return version.removeprefix("ci/").replace("+", "_")


def kubernetes_image(component: str, image_repository: str, kubernetes_version: str) -> str:
    repo = c.CI_IMAGE_REPOSITORY if kubernetes_version.startswith("ci/") else image_repository
    return f"{repo}/{component}:{image_tag(kubernetes_version)}"


def etcd_image(image_repository: str, kubernetes_version: str, local_repository: str = "", local_tag: str = "") -> str:
    repo = local_repository or image_repository
    tag = local_tag or etcd_version_for(kubernetes_version)
    return f"{repo}/{c.ETCD}:{tag}"


def pause_image(image_repository: str) -> str:
    return f"{image_repository}/{c.PAUSE}:{c.PAUSE_VERSION}"
