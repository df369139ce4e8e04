"""`upgrade plan` against a cluster: the version lines, the skew check of the target, and the plan of what changes.

Reads through `phases.upgrade.cluster`, decides with `phases.upgrade.policy` and `phases.upgrade.plan`; the CLI
prints the result. Only impossible targets are refused here (mandatory skew errors); anything `apply --force` could do
is shown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lightkube import Client

from pykubeadm import constants as c
from pykubeadm.api import ClusterConfiguration, UpgradeConfiguration
from pykubeadm.phases.upgrade.cluster import cluster_versions, server_version
from pykubeadm.phases.upgrade.plan import ClusterVersions, UpgradePlan, compute_plan
from pykubeadm.phases.upgrade.policy import check_version_policies, enforce_version_policies
from pykubeadm.phases.upgrade.preflight import kubelet_versions

__all__ = ["plan_upgrade"]

Reporter = Callable[[str], None]
log = logging.getLogger(__name__)


def _warn_mixed_api_servers(versions: ClusterVersions) -> None:
    by_version: dict[str, list[str]] = {}
    for node, version in sorted(versions.control_plane.get(c.KUBE_APISERVER, {}).items()):
        by_version.setdefault(version, []).append(node)
    if len(by_version) > 1:
        found = ", ".join(f"{v} on nodes [{' '.join(nodes)}]" for v, nodes in sorted(by_version.items(), reverse=True))
        log.warning(
            "Different API server versions in the cluster were discovered: %s. Please upgrade your control plane "
            "nodes to the same version of Kubernetes",
            found,
        )


def plan_upgrade(
    client: Client, cluster: ClusterConfiguration, target: str, cfg: UpgradeConfiguration, out: Reporter
) -> tuple[ClusterVersions, UpgradePlan | None]:
    """The cluster's versions and the upgrade to `target` (None when already there), printing kubeadm's lines."""
    out("[upgrade] Fetching available versions to upgrade to")
    current = server_version(client)
    out(f"[upgrade/versions] Cluster version: {current.removeprefix('v')}")
    out(f"[upgrade/versions] kubeadm version: {c.KUBEADM_VERSION}")
    errs = enforce_version_policies(
        target,
        current,
        c.KUBEADM_VERSION,
        kubelet_versions(client),
        allow_experimental=bool(cfg.plan.allow_experimental_upgrades),
        allow_rc=bool(cfg.plan.allow_rc_upgrades),
    )
    errs.skippable = []
    check_version_policies(errs, force=True)
    out(f"[upgrade/versions] Target version: {target}")
    etcd_local = cluster.etcd.external is None and cluster.etcd.local is not None
    versions = cluster_versions(client, current, etcd_local)
    _warn_mixed_api_servers(versions)
    plan = compute_plan(
        versions,
        target,
        etcd_local=etcd_local and bool(cfg.plan.etcd_upgrade),
        dns_disabled=cluster.dns.disabled,
        proxy_disabled=cluster.proxy.disabled,
    )
    return versions, plan
