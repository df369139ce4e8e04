"""kubernetesVersion handling (kubeadm's util/version.go): normalisation, offline label resolution, minimum version.

pykubeadm never fetches release labels from the internet: a label (`stable-1`, `stable`, `latest-1.33`, `ci/…`) falls
back to our own version with kubeadm's two warnings, exactly as kubeadm does when offline.
"""

from __future__ import annotations

import logging
import re

from pykubeadm import constants as c

__all__ = [
    "VERSION_RE",
    "MinimumVersionError",
    "check_minimum_control_plane_version",
    "is_version",
    "normalize_version",
    "parse_version",
    "resolve_kubernetes_version",
]

log = logging.getLogger(__name__)

#: A semantic version as kubeadm accepts it (optional `v`).
VERSION_RE = re.compile(r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-0-9a-zA-Z_\.+]*)?$")
_LABEL_RE = re.compile(r"^(stable|latest)(-\d+(\.\d+)?)?$")
_RELEASE_URL = "https://dl.k8s.io/release"
_CI_URL = "https://storage.googleapis.com/k8s-release-dev/ci"


class MinimumVersionError(ValueError):
    pass


def is_version(value: str) -> bool:
    return VERSION_RE.match(value) is not None


def normalize_version(value: str) -> str:
    """`1.33.0` → `v1.33.0` (a valid version gets a leading v)."""
    return value if value.startswith("v") else "v" + value


def parse_version(value: str) -> tuple[int, int, int, str]:
    """(major, minor, patch, pre-release/build suffix) of a version string; ValueError if not a version."""
    m = VERSION_RE.match(value)
    if m is None:
        raise ValueError(f'version string "{value}" doesn\'t match expected regular expression: "{VERSION_RE.pattern}"')
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def _label_url(label: str) -> str:
    if label.startswith("ci/"):
        return f"{_CI_URL}/{label[3:]}.txt"
    if label == "stable-1":
        # kubeadm asks for the stable release of its own minor
        major, minor, _, _ = parse_version(c.KUBEADM_VERSION)
        label = f"stable-{major}.{minor}"
    return f"{_RELEASE_URL}/{label}.txt"


def resolve_kubernetes_version(value: str) -> str:
    """Resolve `kubernetesVersion`: a version is normalised; a label falls back (offline) to our version, warning.

    Raises ValueError for a string that is neither a version nor a known label.
    """
    value = value.strip()
    if is_version(value):
        return normalize_version(value)
    if value.startswith("ci/") and is_version(value[3:]):
        return normalize_version(value[3:])
    if _LABEL_RE.match(value) or value.startswith("ci/"):
        url = _label_url(value)
        log.warning(
            'could not fetch a Kubernetes version from the internet: unable to get URL "%s": '
            "network access is disabled in pykubeadm",
            url,
        )
        log.warning("falling back to the local client version: %s", c.KUBEADM_VERSION)
        return c.KUBEADM_VERSION
    raise ValueError(
        f'version "{value}" doesn\'t match patterns for neither semantic version nor labels (stable, latest, ...)'
    )


def check_minimum_control_plane_version(version: str) -> None:
    """kubeadm refuses control planes older than MINIMUM_CONTROL_PLANE_VERSION."""
    have = parse_version(version)[:3]
    need = parse_version(c.MINIMUM_CONTROL_PLANE_VERSION)[:3]
    if have < need:
        raise MinimumVersionError(
            "this version of kubeadm only supports deploying clusters with the control plane version >= "
            f"{c.MINIMUM_CONTROL_PLANE_VERSION}. Current version: {version}"
        )
