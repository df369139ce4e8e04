"""Version skew policy of `upgrade plan/apply` (kubeadm's phases/upgrade/policy.go): which target versions are allowed.

`enforce_version_policies` is pure: it takes the cluster, kubeadm and kubelet versions and returns the mandatory and the
skippable (`--force`) errors with kubeadm's messages; `check_version_policies` turns them into kubeadm's error text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pykubeadm import constants as c
from pykubeadm.api.versions import parse_version
from pykubeadm.errors import KubeadmError

__all__ = [
    "MAX_KUBELET_SKEW",
    "MAX_MINOR_DOWNGRADE_SKEW",
    "MAX_MINOR_UPGRADE_SKEW",
    "SkewErrors",
    "check_version_policies",
    "enforce_version_policies",
    "format_errors",
]

#: How many minor versions the control plane may move up in one upgrade.
MAX_MINOR_UPGRADE_SKEW = 1
#: How many minor versions the control plane may move down in one go.
MAX_MINOR_DOWNGRADE_SKEW = 1
#: How many minor versions a kubelet may lag behind the control plane.
MAX_KUBELET_SKEW = 3


@dataclass
class SkewErrors:
    mandatory: list[str] = field(default_factory=list)
    skippable: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.mandatory or self.skippable)


def _vkey(v: tuple[int, int, int, str]) -> tuple[int, int, int, int, str]:
    return v[0], v[1], v[2], 0 if v[3] else 1, v[3]


def _unstable_error(target: str, pre: str, allow_experimental: bool, allow_rc: bool) -> str | None:
    if not pre or allow_experimental or (pre.lstrip("-").startswith("rc") and allow_rc):
        return None
    return (
        f'Specified version to upgrade to "{target}" is an unstable version and such upgrades weren\'t allowed via '
        "setting the --allow-*-upgrades flags"
    )


def enforce_version_policies(
    target: str,
    cluster_version: str,
    kubeadm_version: str = c.KUBEADM_VERSION,
    kubelet_versions: Iterable[str] = (),
    *,
    allow_experimental: bool = False,
    allow_rc: bool = False,
) -> SkewErrors:
    """Every reason not to go from `cluster_version` to `target` (both `vX.Y.Z`)."""
    errs = SkewErrors()
    new = parse_version(target)
    cur = parse_version(cluster_version)
    adm = parse_version(kubeadm_version)
    unstable = bool(new[3])
    if _vkey(new) < _vkey(parse_version(c.MINIMUM_CONTROL_PLANE_VERSION)):
        errs.mandatory.append(
            f'Specified version to upgrade to "{target}" is equal to or lower than the minimum supported version '
            f'"{c.MINIMUM_CONTROL_PLANE_VERSION}". Please specify a higher version to upgrade to'
        )
    if new[1] > cur[1] + MAX_MINOR_UPGRADE_SKEW:
        msg = (
            f'Specified version to upgrade to "{target}" is too high; kubeadm can upgrade only '
            f"{MAX_MINOR_UPGRADE_SKEW} minor version at a time"
        )
        (errs.skippable if unstable else errs.mandatory).append(msg)
    if new[1] < cur[1] - MAX_MINOR_DOWNGRADE_SKEW:
        msg = (
            f'Specified version to downgrade to "{target}" is too low; kubeadm can downgrade only '
            f"{MAX_MINOR_DOWNGRADE_SKEW} minor version at a time"
        )
        (errs.skippable if unstable else errs.mandatory).append(msg)
    elif _vkey(new) < _vkey(cur):
        errs.skippable.append(
            f'Specified version to upgrade to "{target}" is lower than the cluster version "{cluster_version}". '
            "Downgrading the control plane is not recommended"
        )
    if _vkey(adm) < _vkey(new):
        if new[1] > adm[1]:
            msg = (
                f'Specified version to upgrade to "{target}" is at least one minor release higher than the kubeadm '
                f"minor release ({new[1]} > {adm[1]}). Such an upgrade is not supported"
            )
            (errs.skippable if unstable else errs.mandatory).append(msg)
        else:
            errs.skippable.append(
                f'Specified version to upgrade to "{target}" is higher than the kubeadm version "{kubeadm_version}". '
                "Upgrade kubeadm first using the tool you used to install kubeadm"
            )
    if adm[0] > new[0] or adm[1] > new[1]:
        errs.skippable.append(
            f"Kubeadm version {kubeadm_version} can only be used to upgrade to Kubernetes version {adm[0]}.{adm[1]}"
        )
    unstable_err = _unstable_error(target, new[3], allow_experimental, allow_rc)
    if unstable_err:
        errs.skippable.append(unstable_err)
    too_old = sorted({v for v in kubelet_versions if new[1] > parse_version(v)[1] + MAX_KUBELET_SKEW})
    if too_old:
        errs.skippable.append(
            f"There are kubelets in this cluster that are too old that have these versions [{' '.join(too_old)}]"
        )
    return errs


def format_errors(errors: Iterable[str]) -> str:
    """kubeadm's FormatErrMsg: one `\\t- <error>` line per error."""
    return "".join(f"\t- {e}\n" for e in errors)


def check_version_policies(errs: SkewErrors, force: bool) -> str | None:
    """Raise kubeadm's "the version argument is invalid" error; with `force`, return the notice about skipped errors."""
    if errs.mandatory:
        raise KubeadmError(
            "the version argument is invalid due to these fatal errors:\n\n"
            f"{format_errors(errs.mandatory)}\nPlease fix the misalignments highlighted above and try upgrading again"
        )
    if errs.skippable:
        if not force:
            raise KubeadmError(
                "the version argument is invalid due to these errors:\n\n"
                f"{format_errors(errs.skippable)}\nCan be bypassed if you pass the --force flag"
            )
        return (
            f"[upgrade/version] Found {len(errs.skippable)} potential version compatibility errors but skipping "
            f"since the --force flag is set: \n\n{format_errors(errs.skippable)}"
        )
    return None
