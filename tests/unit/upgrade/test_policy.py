"""Version skew policy of `upgrade plan/apply`: which targets are refused, which need --force, and kubeadm's texts."""

from __future__ import annotations

import pytest

from pykubeadm.errors import KubeadmError
from pykubeadm.phases.upgrade.policy import check_version_policies, enforce_version_policies


def test_next_minor_at_kubeadm_version_is_allowed() -> None:
    assert not enforce_version_policies("v1.33.0", "v1.32.4", "v1.33.0", ["v1.32.4", "v1.33.0"])


def test_patch_upgrade_within_kubeadm_minor_is_allowed() -> None:
    assert not enforce_version_policies("v1.33.2", "v1.33.0", "v1.33.2")


def test_skipping_a_minor_is_fatal_and_names_the_version() -> None:
    errs = enforce_version_policies("v1.34.0", "v1.32.4", "v1.33.0")
    assert (
        'Specified version to upgrade to "v1.34.0" is too high; kubeadm can upgrade only 1 minor version at a time'
        in (errs.mandatory)
    )
    assert any(
        "at least one minor release higher than the kubeadm minor release (34 > 33)" in e for e in errs.mandatory
    )
    with pytest.raises(KubeadmError) as info:
        check_version_policies(errs, force=True)  # mandatory errors cannot be forced
    text = str(info.value)
    assert text.startswith("the version argument is invalid due to these fatal errors:\n\n\t- Specified version")
    assert text.endswith("Please fix the misalignments highlighted above and try upgrading again")


def test_newer_patch_than_kubeadm_needs_force() -> None:
    errs = enforce_version_policies("v1.33.5", "v1.33.0", "v1.33.0")
    assert not errs.mandatory
    assert errs.skippable == [
        'Specified version to upgrade to "v1.33.5" is higher than the kubeadm version "v1.33.0". Upgrade kubeadm '
        "first using the tool you used to install kubeadm"
    ]
    with pytest.raises(KubeadmError, match="Can be bypassed if you pass the --force flag"):
        check_version_policies(errs, force=False)
    notice = check_version_policies(errs, force=True)
    assert notice is not None and notice.startswith("[upgrade/version] Found 1 potential version compatibility errors")


def test_lower_than_current_needs_force() -> None:
    errs = enforce_version_policies("v1.32.4", "v1.33.0", "v1.33.0")
    assert not errs.mandatory
    assert any('is lower than the cluster version "v1.33.0"' in e for e in errs.skippable)
    assert any(
        "Kubeadm version v1.33.0 can only be used to upgrade to Kubernetes version 1.33" in e for e in errs.skippable
    )


def test_below_minimum_control_plane_version_is_fatal() -> None:
    errs = enforce_version_policies("v1.31.9", "v1.32.0", "v1.33.0")
    assert any("equal to or lower than the minimum supported version" in e for e in errs.mandatory)


def test_unstable_versions_need_the_allow_flags() -> None:
    errs = enforce_version_policies("v1.33.1-rc.0", "v1.33.0", "v1.33.1-rc.0")
    assert any("is an unstable version" in e for e in errs.skippable)
    assert not enforce_version_policies("v1.33.1-rc.0", "v1.33.0", "v1.33.1-rc.0", allow_rc=True)
    assert not enforce_version_policies("v1.33.1-alpha.1", "v1.33.0", "v1.33.1-alpha.1", allow_experimental=True)
    assert enforce_version_policies("v1.33.1-alpha.1", "v1.33.0", "v1.33.1-alpha.1", allow_rc=True)


def test_too_old_kubelets_are_reported() -> None:
    errs = enforce_version_policies("v1.33.0", "v1.32.0", "v1.33.0", ["v1.29.3", "v1.30.0", "v1.32.0"])
    assert errs.skippable == ["There are kubelets in this cluster that are too old that have these versions [v1.29.3]"]
