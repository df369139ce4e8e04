"""The run data of `upgrade apply` and `upgrade node`: the UpgradeConfiguration, what was read from the cluster, the
node's identity and role, and how to report, ask and talk to the API (or only say what would be done, in dry-run).

Built once by `pykubeadm.cli.upgrade` before the first phase runs (so the `Reading configuration` lines come first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from lightkube import Client

from pykubeadm import constants as c
from pykubeadm.api import ClusterConfiguration, UpgradeConfiguration
from pykubeadm.layout import Layout
from pykubeadm.manifests import ClusterInputs, inputs_from_config
from pykubeadm.phases.apply import apply_objects, report_dry_run
from pykubeadm.phases.objects import Obj
from pykubeadm.phases.reset.data import ask_stdin
from pykubeadm.pki.create import using_external_ca

__all__ = ["UpgradeData", "node_inputs"]

Reporter = Callable[[str], None]


def node_inputs(cluster: ClusterConfiguration, layout: Layout, node_name: str, timeouts: Any = None) -> ClusterInputs:
    """The static Pod builders' inputs of this control-plane node for `cluster` (its kubernetesVersion)."""
    from pykubeadm.phases.upgrade.cluster import local_api_endpoint

    external, _ = using_external_ca(layout.pki_dir)
    return inputs_from_config(
        cluster,
        local_api_endpoint(layout),
        node_name,
        external_ca=external,
        timeouts=timeouts,
        dir_exists=lambda p: layout.host(p).is_dir(),
    )


@dataclass
class UpgradeData:
    #: "apply" or "node".
    command: str
    cfg: UpgradeConfiguration
    #: The node's real layout (certificatesDir of the cluster).
    layout: Layout
    client: Client
    #: The cluster's ClusterConfiguration; for apply its kubernetesVersion is already the target version.
    cluster: ClusterConfiguration
    #: The API server's version before the upgrade.
    cluster_version: str
    target: str
    node_name: str
    control_plane: bool
    out: Reporter = print
    ask: Callable[[str], str] = ask_stdin
    dry_run: bool = False
    force: bool = False
    yes: bool = False
    certificate_renewal: bool = True
    etcd_upgrade: bool = True
    allow_experimental: bool = False
    allow_rc: bool = False
    patches_dir: Path | None = None
    ignore_preflight_errors: frozenset[str] = frozenset()
    #: Filled by phases for later ones (the kubelet-config ConfigMap's text, the backup directory, ...).
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def upgrade_timeout(self) -> timedelta:
        t = self.cfg.timeouts
        return (t.upgrade_manifests if t else None) or c.UPGRADE_MANIFESTS_TIMEOUT

    @property
    def etcd_local(self) -> bool:
        return self.cluster.etcd.external is None and self.cluster.etcd.local is not None

    def cluster_inputs(self) -> ClusterInputs:
        """The static Pod builders' inputs for this node at the target version."""
        return node_inputs(self.cluster, self.layout, self.node_name, self.cfg.timeouts)

    def apply(self, objs: Iterable[Obj], *, retain: bool = False) -> list[Any]:
        """Create-or-update (or create-or-retain) objects; in dry-run only say so."""
        objs = list(objs)
        if self.dry_run:
            return report_dry_run(self.out, objs, "create or update")
        return apply_objects(self.client, objs, retain=retain)
