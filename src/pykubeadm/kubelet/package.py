"""The built-in kubelet as installed on a node: the version it was installed for.

A real node's kubelet version is its binary's (`kubelet --version`), set by the kubelet package the operator installs
and changed only by upgrading that package (kubeadm's upgrade guide: upgrade the kubelet package, restart it). A
built-in-mode node under a root dir has no package manager, so its "installed kubelet" is one line in the node's
`/etc/pykubeadm/kubelet-version` (outside the state that `reset` removes, as a package outlives `kubeadm reset`):
- kubelet-start installs it, at the cluster's version, when the node has none (the built-in kubelet comes with
  pykubeadm, matched to the cluster it joins);
- whoever plays the operator upgrades it (`pykubeadm lab upgrade` does, node by node) and restarts the kubelet;
- the kubelet reports it (Node status.nodeInfo.kubeletVersion) and preflight's KubeletVersion check reads it.
"""

from __future__ import annotations

import re

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.util.fs import write_file_atomic

__all__ = ["KUBELET_VERSION_FILE", "ensure_installed", "install_kubelet", "installed_version"]

#: The node path of the installed kubelet's version.
KUBELET_VERSION_FILE = f"{c.PYKUBEADM_ETC_DIR}/kubelet-version"

_VERSION = re.compile(r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")


def installed_version(layout: Layout) -> str | None:
    """The version the node's kubelet was installed for; None when none is installed (or the record is unreadable)."""
    try:
        text = layout.host(KUBELET_VERSION_FILE).read_text().strip()
    except OSError:
        return None
    return text if _VERSION.match(text) else None


def install_kubelet(layout: Layout, version: str) -> None:
    """Install (or upgrade to) the kubelet of `version` on the node; it takes effect when the kubelet restarts."""
    if not _VERSION.match(version):
        raise KubeadmError(f'invalid kubelet version "{version}": want vMAJOR.MINOR.PATCH, e.g. {c.KUBERNETES_VERSION}')
    write_file_atomic(layout.host(KUBELET_VERSION_FILE), f"{version}\n", 0o644, dir_mode=0o755)


def ensure_installed(layout: Layout, version: str) -> str:
    """kubelet-start's part: the node's installed kubelet version, installing `version`'s when there is none (and
    `version` is a release; otherwise the built-in kubelet reports its own)."""
    found = installed_version(layout)
    if found is None and _VERSION.match(version):
        install_kubelet(layout, version)
        return version
    return found or c.KUBERNETES_VERSION
