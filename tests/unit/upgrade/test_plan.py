"""`upgrade plan` tables: computed rows and kubeadm's exact text (checked against a real v1.32.5 → v1.33.1 plan)."""

from __future__ import annotations

import logging

import pytest

from pykubeadm.phases.upgrade.plan import ClusterVersions, compute_plan, format_plan, plan_as_dict

#: The plan part of a real `kubeadm upgrade plan` (kubeadm v1.33.1, cluster v1.32.5, one control plane, 3 workers).
REAL_V133 = """
Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     master1   v1.32.5   v1.33.1
kubelet     worker1   v1.32.5   v1.33.1
kubelet     worker2   v1.32.5   v1.33.1
kubelet     worker3   v1.32.5   v1.33.1

Upgrade to the latest stable version:

COMPONENT                 NODE      CURRENT    TARGET
kube-apiserver            master1   v1.32.5    v1.33.1
kube-controller-manager   master1   v1.32.5    v1.33.1
kube-scheduler            master1   v1.32.5    v1.33.1
kube-proxy                          1.32.5     v1.33.1
CoreDNS                             v1.11.3    v1.12.0
etcd                      master1   3.5.16-0   3.5.21-0

You can now apply the upgrade by executing the following command:

\tkubeadm upgrade apply v1.33.1

_____________________________________________________________________


The table below shows the current state of component configs as understood by this version of kubeadm.
Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or
resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually
upgrade to is denoted in the "PREFERRED VERSION" column.

API GROUP                 CURRENT VERSION   PREFERRED VERSION   MANUAL UPGRADE REQUIRED
kubeproxy.config.k8s.io   v1alpha1          v1alpha1            no
kubelet.config.k8s.io     v1beta1           v1beta1             no
_____________________________________________________________________
"""


def _versions(cluster: str = "v1.32.5", kubeadm: str = "v1.33.1") -> ClusterVersions:
    return ClusterVersions(
        cluster_version=cluster,
        kubeadm_version=kubeadm,
        kubelets={n: cluster for n in ("worker3", "master1", "worker1", "worker2")},
        control_plane={
            "kube-apiserver": {"master1": cluster},
            "kube-controller-manager": {"master1": cluster},
            "kube-scheduler": {"master1": cluster},
        },
        etcd={"master1": "3.5.16-0"},
        coredns="v1.11.3",
        kube_proxy=cluster,
    )


def test_minor_upgrade_matches_real_kubeadm_output() -> None:
    plan = compute_plan(_versions(), "v1.33.1", etcd_local=True)
    assert format_plan(plan) == REAL_V133


def test_patch_upgrade_is_described_as_the_series() -> None:
    plan = compute_plan(_versions("v1.33.0", "v1.33.0"), "v1.33.0", etcd_local=False)
    assert plan is None
    assert format_plan(plan) == "Awesome, you're up-to-date! Enjoy!\n"
    plan = compute_plan(_versions("v1.32.1", "v1.32.4"), "v1.32.4", etcd_local=False)
    assert plan is not None
    text = format_plan(plan)
    assert "\nUpgrade to the latest version in the v1.32 series:\n\n" in text
    assert "etcd" not in text  # external etcd has no row
    assert "Note: Before you can perform this upgrade" not in text


def test_target_newer_than_kubeadm_adds_the_note() -> None:
    plan = compute_plan(_versions("v1.33.0", "v1.33.0"), "v1.33.2", etcd_local=False)
    text = format_plan(plan)
    assert (
        "\tkubeadm upgrade apply v1.33.2\n\nNote: Before you can perform this upgrade, you have to update kubeadm to v1.33.2.\n\n"
        in text
    )


def test_disabled_addons_and_rc_flag() -> None:
    plan = compute_plan(_versions(), "v1.33.1-rc.1", etcd_local=False, dns_disabled=True, proxy_disabled=True)
    assert plan is not None
    names = [r.name for r in plan.components]
    assert names == ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]
    assert "kubeadm upgrade apply v1.33.1-rc.1 --allow-release-candidate-upgrades" in format_plan(plan)


def test_structured_output() -> None:
    versions = _versions()
    out = plan_as_dict(compute_plan(versions, "v1.33.1", etcd_local=True), versions)
    assert out["kind"] == "UpgradePlan" and out["apiVersion"] == "output.kubeadm.k8s.io/v1alpha3"
    comps = out["availableUpgrades"][0]["components"]
    assert {"name": "etcd", "nodeName": "master1", "currentVersion": "3.5.16-0", "newVersion": "3.5.21-0"} in comps
    assert plan_as_dict(None, versions)["availableUpgrades"] == []


def test_mixed_api_server_versions_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    from pykubeadm.phases.upgrade.planner import _warn_mixed_api_servers

    versions = ClusterVersions(
        cluster_version="v1.33.0",
        control_plane={"kube-apiserver": {"cp1": "v1.33.0", "cp2": "v1.32.4", "cp3": "v1.32.4"}},
    )
    with caplog.at_level(logging.WARNING):
        _warn_mixed_api_servers(versions)
    assert caplog.messages == [
        "Different API server versions in the cluster were discovered: v1.33.0 on nodes [cp1], v1.32.4 on nodes "
        "[cp2 cp3]. Please upgrade your control plane nodes to the same version of Kubernetes"
    ]
