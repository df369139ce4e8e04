"""Image references as the kubelet reads them: repository, last name and tag. Used by the runtime selection
(`runtimeroute`), the CRI image manager (`cri.imagepull`: `:latest` → Always) and the built-in image map.
"""

from __future__ import annotations

__all__ = ["parse_image"]


def parse_image(image: str) -> tuple[str, str, str]:
    """Split `registry.k8s.io/kube-apiserver:v1.33.0@sha256:…` into (repository, last name, tag); tag may be ""."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    tag = ""
    if ":" in last:
        last, tag = last.split(":", 1)
        ref = ref[: -(len(tag) + 1)]
    return ref, last, tag
