"""reset step of `cleanup-node`: remove kube-proxy's nftables table, as `kube-proxy --cleanup` does.

Called by `cleanup_node._run` once the node's Pods are gone. Only kube-proxy's own table (`ip kube-proxy` and
`ip6 kube-proxy`) is deleted, never another table, and only on a node that owns its host (root dir "/"): the nodes of
a lab share one host and never program nftables. Without root or without `nft` there is nothing kube-proxy could have
written, so the step is skipped.
"""

from __future__ import annotations

import logging
import os
import shutil

from pykubeadm.phases.reset.data import ResetData

__all__ = ["remove_proxy_rules"]

log = logging.getLogger(__name__)


def remove_proxy_rules(data: ResetData) -> None:
    if os.path.realpath(data.layout.root) != "/" or os.geteuid() != 0 or shutil.which("nft") is None:
        return
    if data.dry_run:
        data.out('[reset] Would remove the nftables table "kube-proxy" (ip, ip6)')
        return
    from pykubeadm.proxy.nftables import cleanup

    data.out('[reset] Removing the nftables table "kube-proxy" (ip, ip6)')
    if cleanup():
        log.warning('[reset] Failed to remove the nftables table "kube-proxy"; run "kube-proxy --cleanup"')
