"""upgrade phase `control-plane`: upgrade this node's static Pods to the target version (apply) or to the cluster's
version (node), renewing each component's certificates first, then admin.conf and super-admin.conf.

Workers skip it. In dry-run the new manifests go to a temporary directory and are printed, nothing is restarted.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.api._base import format_duration
from pykubeadm.manifests import STATIC_PODS
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.phases.upgrade.staticpods import upgrade_static_pods, write_new_manifests
from pykubeadm.phases.upgrade.waiter import ApiWaiter
from pykubeadm.pki.renewal import renew_handlers, renew_using_local_ca
from pykubeadm.util.patches import PatchManager
from pykubeadm.workflow import Phase

__all__ = ["PHASE", "RENEWED_CERTS", "components_to_upgrade"]

_MANIFESTS_DIR = f"{c.KUBERNETES_DIR}/{c.MANIFESTS_SUBDIR}"

#: The certificates renewed before each component is restarted (kubeadm's renewCertsByComponent).
RENEWED_CERTS: dict[str, tuple[str, ...]] = {
    c.ETCD: ("etcd-server", "etcd-peer", "etcd-healthcheck-client"),
    c.KUBE_APISERVER: ("apiserver", "apiserver-kubelet-client", "front-proxy-client", "apiserver-etcd-client"),
    c.KUBE_CONTROLLER_MANAGER: (c.CONTROLLER_MANAGER_KUBECONFIG_FILE,),
    c.KUBE_SCHEDULER: (c.SCHEDULER_KUBECONFIG_FILE,),
}


def components_to_upgrade(etcd_local: bool, etcd_upgrade: bool) -> list[str]:
    """etcd first (local etcd and --etcd-upgrade), then the control-plane components in kubeadm's order."""
    first = [c.ETCD] if etcd_local and etcd_upgrade else []
    return first + [spec.component for spec in STATIC_PODS]


class _Renewer:
    """Renews this node's certificates with the local CA, as `certs renew` does, reporting like kubeadm's upgrade."""

    def __init__(self, data: UpgradeData):
        self.data = data
        layout = data.layout
        self.handlers = {h.name: h for h in renew_handlers(layout.pki_dir, layout.kubernetes_dir, not data.etcd_local)}
        self.algorithm = data.cluster.encryption_algorithm or c.DEFAULT_ENCRYPTION_ALGORITHM
        self.validity = data.cluster.certificate_validity_period or c.CERTIFICATE_VALIDITY_PERIOD
        self.start = datetime.now(UTC)

    def renew(self, name: str, *, quiet: bool = False) -> None:
        h = self.handlers.get(name)
        if h is None or not h.readwriter.exists():
            return
        if not quiet:
            self.data.out(f"[upgrade/staticpods] Renewing {name} certificate")
        renewed = renew_using_local_ca(h, self.data.layout.pki_dir, self.algorithm, self.validity, self.start)
        if not renewed and not quiet:
            self.data.out(f"[upgrade/staticpods] External CA detected, {name} certificate can't be renewed")

    def component(self, component: str) -> None:
        """The certificates of `component`, before it restarts."""
        for name in RENEWED_CERTS.get(component, ()):
            self.renew(name)


def _etcd_data_dir(data: UpgradeData) -> Path | None:
    local = data.cluster.etcd.local
    return data.layout.etcd_data_dir(local.data_dir) if local is not None and data.etcd_local else None


def _run(data: UpgradeData) -> None:
    if not data.control_plane:
        data.out("[upgrade/control-plane] Skipping phase. Not a control plane node.")
        return
    version = data.cluster.kubernetes_version
    components = components_to_upgrade(data.etcd_local, data.etcd_upgrade)
    patches = PatchManager.load(data.patches_dir, out=data.out) if data.patches_dir else None
    if data.dry_run:
        data.out(f'[dryrun] Would upgrade your static Pod-hosted control plane to version "{version}"')
        with tempfile.TemporaryDirectory(prefix="kubeadm-upgrade-dryrun") as tmp:
            write_new_manifests(Path(tmp), data.cluster_inputs(), components, patches)
            for comp in components:
                data.out(f'[dryrun] Would write file "{_MANIFESTS_DIR}/{comp}.yaml" with content:')
                data.out("\n".join("\t" + line for line in (Path(tmp) / f"{comp}.yaml").read_text().splitlines()))
        return
    data.out(
        f'[upgrade/control-plane] Upgrading your static Pod-hosted control plane to version "{version}" '
        f"(timeout: {format_duration(data.upgrade_timeout)})..."
    )
    renewer = _Renewer(data) if data.certificate_renewal else None
    waiter = ApiWaiter(data.client, data.node_name, data.layout, data.out)
    data.state["backup_dir"] = upgrade_static_pods(
        data.layout,
        data.cluster_inputs(),
        components,
        waiter,
        renew=renewer.component if renewer is not None else None,
        patches=patches,
        timeout=data.upgrade_timeout,
        out=data.out,
        etcd_data_dir=_etcd_data_dir(data),
    )
    if renewer is not None:  # admin.conf and super-admin.conf are renewed silently, as kubeadm does
        renewer.renew(c.ADMIN_KUBECONFIG_FILE, quiet=True)
        renewer.renew(c.SUPER_ADMIN_KUBECONFIG_FILE, quiet=True)
    data.out("[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")


PHASE: Phase[UpgradeData] = Phase(
    name="control-plane",
    short="Upgrade the control plane",
    run=_run,
    inherit_flags=("certificate-renewal", "config", "dry-run", "etcd-upgrade", "kubeconfig", "patches"),
)
