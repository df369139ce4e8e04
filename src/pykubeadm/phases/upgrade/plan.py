"""`upgrade plan`: what the cluster runs now, what it would run after `upgrade apply <target>`, and kubeadm's tables.

Pure: `compute_plan` turns the observed versions (`ClusterVersions`) and a target into an `UpgradePlan`;
`format_plan` renders kubeadm's text (tabwriter tables, the apply hint, the component-config table) and
`plan_as_dict` the `-o json|yaml` form (`UpgradePlan` of `output.kubeadm.k8s.io/v1alpha3`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubeadm import constants as c
from pykubeadm.api.images import etcd_version_for
from pykubeadm.api.versions import parse_version
from pykubeadm.util.tabwriter import TabWriter

__all__ = [
    "ClusterVersions",
    "ComponentRow",
    "UpgradePlan",
    "compute_plan",
    "format_plan",
    "plan_as_dict",
]

_SEPARATOR = "_____________________________________________________________________"
_COMPONENT_CONFIGS = (
    ("kubeproxy.config.k8s.io", "v1alpha1"),
    ("kubelet.config.k8s.io", "v1beta1"),
)


@dataclass(frozen=True)
class ClusterVersions:
    """What the cluster runs, as read from the API (empty/None when a component is absent)."""

    cluster_version: str
    kubeadm_version: str = c.KUBEADM_VERSION
    #: node name → kubelet version
    kubelets: dict[str, str] = field(default_factory=dict)
    #: component → {node name → version (image tag)}
    control_plane: dict[str, dict[str, str]] = field(default_factory=dict)
    #: node name → etcd image tag (local etcd only)
    etcd: dict[str, str] = field(default_factory=dict)
    coredns: str | None = None
    kube_proxy: str | None = None


@dataclass(frozen=True)
class ComponentRow:
    name: str
    node: str
    current: str
    target: str


@dataclass(frozen=True)
class UpgradePlan:
    description: str
    target: str
    kubelets: list[ComponentRow]
    components: list[ComponentRow]
    kubeadm_version: str
    unstable_flag: str = ""


def _bare(version: str) -> str:
    """A version as Go's version.String() prints it (no leading `v`)."""
    return version[1:] if version.startswith("v") else version


def compute_plan(
    versions: ClusterVersions,
    target: str,
    *,
    etcd_local: bool,
    dns_disabled: bool = False,
    proxy_disabled: bool = False,
    coredns_target: str = c.COREDNS_VERSION,
    etcd_target: str | None = None,
) -> UpgradePlan | None:
    """The upgrade to `target`, or None when the cluster already runs it (kubeadm's "up-to-date")."""
    cur, new = parse_version(versions.cluster_version), parse_version(target)
    if cur == new:
        return None
    description = (
        f"version in the v{cur[0]}.{cur[1]} series" if (cur[0], cur[1]) == (new[0], new[1]) else "stable version"
    )
    kubelets = [ComponentRow("kubelet", node, v, target) for node, v in sorted(versions.kubelets.items())]
    rows: list[ComponentRow] = []
    for component in c.CONTROL_PLANE_COMPONENTS:
        for node, v in sorted(versions.control_plane.get(component, {}).items()):
            rows.append(ComponentRow(component, node, v, target))
    if not proxy_disabled and versions.kube_proxy:
        rows.append(ComponentRow(c.KUBE_PROXY, "", _bare(versions.kube_proxy), target))
    if not dns_disabled and versions.coredns:
        rows.append(ComponentRow("CoreDNS", "", versions.coredns, coredns_target))
    if etcd_local:
        want = etcd_target or etcd_version_for(target, warn=False)
        for node, v in sorted(versions.etcd.items()):
            rows.append(ComponentRow(c.ETCD, node, v, want))
    unstable = ""
    if new[3]:
        unstable = " --allow-release-candidate-upgrades" if new[3].lstrip("-").startswith("rc") else ""
        unstable = unstable or " --allow-experimental-upgrades"
    return UpgradePlan(description, target, kubelets, rows, versions.kubeadm_version, unstable)


def _table(rows: list[ComponentRow]) -> str:
    tw = TabWriter(minwidth=10, tabwidth=4, padding=3)
    tw.write("COMPONENT\tNODE\tCURRENT\tTARGET\n")
    for r in rows:
        tw.write(f"{r.name}\t{r.node}\t{r.current}\t{r.target}\n")
    return tw.flush()


def _component_config_table() -> str:
    tw = TabWriter(minwidth=10, tabwidth=4, padding=3)
    tw.write("API GROUP\tCURRENT VERSION\tPREFERRED VERSION\tMANUAL UPGRADE REQUIRED\n")
    for group, version in _COMPONENT_CONFIGS:
        tw.write(f"{group}\t{version}\t{version}\tno\n")
    return tw.flush()


def format_plan(plan: UpgradePlan | None) -> str:
    """The text `upgrade plan` prints after the `[upgrade/versions]` lines."""
    if plan is None:
        return "Awesome, you're up-to-date! Enjoy!\n"
    out = ""
    if plan.kubelets:
        out += (
            "\nComponents that must be upgraded manually after you have upgraded the control plane with "
            "'kubeadm upgrade apply':\n"
        )
        out += _table(plan.kubelets)
    out += f"\nUpgrade to the latest {plan.description}:\n\n"
    out += _table(plan.components)
    out += "\nYou can now apply the upgrade by executing the following command:\n\n"
    out += f"\tkubeadm upgrade apply {plan.target}{plan.unstable_flag}\n\n"
    if _newer(plan.target, plan.kubeadm_version):
        out += f"Note: Before you can perform this upgrade, you have to update kubeadm to {plan.target}.\n\n"
    out += _SEPARATOR + "\n\n\n"
    out += (
        "The table below shows the current state of component configs as understood by this version of kubeadm.\n"
        'Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or\n'
        "resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually\n"
        'upgrade to is denoted in the "PREFERRED VERSION" column.\n\n'
    )
    out += _component_config_table()
    out += _SEPARATOR + "\n"
    return out


def _newer(a: str, b: str) -> bool:
    pa, pb = parse_version(a), parse_version(b)
    return (pa[0], pa[1], pa[2], 0 if pa[3] else 1, pa[3]) > (pb[0], pb[1], pb[2], 0 if pb[3] else 1, pb[3])


def plan_as_dict(plan: UpgradePlan | None, versions: ClusterVersions) -> dict[str, Any]:
    """The structured plan (`-o yaml|json`): kubeadm's output.kubeadm.k8s.io/v1alpha3 UpgradePlan."""
    upgrades: list[dict[str, Any]] = []
    if plan is not None:
        upgrades.append(
            {
                "description": plan.description,
                "components": [
                    {"name": r.name, "nodeName": r.node, "currentVersion": r.current, "newVersion": r.target}
                    for r in plan.kubelets + plan.components
                ],
            }
        )
    return {
        "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
        "kind": "UpgradePlan",
        "availableUpgrades": upgrades,
        "configVersions": [
            {"configGroup": g, "currentVersion": v, "preferredVersion": v, "manualUpgradeRequired": False}
            for g, v in _COMPONENT_CONFIGS
        ],
    }
